"""``relax.BlockBuilder``: build Relax functions binding by binding, normalized as they go.

Every emitted value is normalized first (struct info filled by each operator's
``FInferStructInfo``, nested expressions bound where Relax needs a variable), then bound to a
fresh variable named after its hint (``lv``, ``lv1``, ...; ``gv`` for outputs). Functions are
collected into an IRModule together with the PrimFuncs ``emit_te`` creates.
"""

from __future__ import annotations

import threading

from ..ir.attrs import DictAttrs
from ..ir.expr import GlobalVar
from ..ir.module import IRModule
from ..ir.op import Op
from .expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    seq_struct_info,
)
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    StructInfo,
    TupleStructInfo,
)

__all__ = ["BlockBuilder", "BlockBuilderError"]

# (isinstance tuples made once: an ``A | B`` union in a check is a new object at every call,
# and normalize runs per binding)
_NORMALIZABLE = (Expr, GlobalVar, Op)
_RENORMALIZED = (Tuple, SeqExpr, If)  # filled again even when they have struct info
_DATAFLOW = (Call, Tuple, TupleGetItem)
_BOUND = (Call, TupleGetItem, If, SeqExpr)

class BlockBuilderError(ValueError):
    """The builder was used out of order (emit outside a function, output outside a block)."""


class NameSupply:
    """Unique names from hints: ``lv``, ``lv1``, ``lv2``... (TVM's NameSupply)."""

    def __init__(self):
        self._next: dict[str, int] = {}
        self._used: set[str] = set()

    def fresh(self, hint: str) -> str:
        hint = hint or "v"
        if hint not in self._used:
            self._used.add(hint)
            self._next.setdefault(hint, 1)
            return hint
        k = self._next.get(hint, 1)
        while f"{hint}{k}" in self._used:
            k += 1
        self._next[hint] = k + 1
        name = f"{hint}{k}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> None:
        self._used.add(name)


class _Frame:
    """A block being built."""

    __slots__ = ("bindings", "is_dataflow", "outputs")

    def __init__(self, is_dataflow: bool):
        self.bindings: list = []
        self.is_dataflow = is_dataflow
        self.outputs: list = []


class _FunctionScope:
    __slots__ = ("name", "params", "attrs", "pure", "private", "blocks", "names", "done")

    def __init__(self, name, params, attrs, pure, private):
        self.name = name
        self.params = list(params) if params is not None else None
        self.attrs = attrs
        self.pure = pure
        self.private = private
        self.blocks: list = []
        self.names = NameSupply()
        self.done = False
        for p in self.params or ():
            self.names.reserve(p.name_hint)


class _Ctx:
    """``with bb.function(...)`` / ``with bb.dataflow()``."""

    def __init__(self, enter, leave):
        self._enter, self._leave = enter, leave

    def __enter__(self):
        self._enter()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._leave(exc_type is not None)
        return False


class BlockBuilder:
    """Build Relax functions (``with bb.function("main", [x]): ... bb.emit_func_output(y)``)
    and collect them, with their PrimFuncs, into ``bb.get()``."""

    _tls = threading.local()  # the builders whose function scope is open, per thread

    def __init__(self, mod: IRModule | None = None):
        self._mod = mod.shallow_copy() if mod is not None else IRModule()
        self._func: _FunctionScope | None = None
        self._frames: list[_Frame] = []
        self._global_names = NameSupply()
        self._bound: dict = {}  # var -> value of every VarBinding emitted (lookup_binding)
        self._prim_hashes: dict = {}  # id(PrimFunc) -> (it, its structural hash): call_te
        for gv in self._mod.functions:
            self._global_names.reserve(gv.name_hint)
        from ..arith import Analyzer

        self.analyzer = Analyzer()  # shape variables are known to be non-negative

    def _mark_shape_vars(self, sinfos) -> None:
        from .analysis import tir_vars_in_struct_info

        for sinfo in sinfos:
            if sinfo is not None:
                for v in tir_vars_in_struct_info(sinfo):
                    self.analyzer.mark_global_non_neg_value(v)

    def get_analyzer(self):
        return self.analyzer

    @staticmethod
    def _stack() -> list:
        st = getattr(BlockBuilder._tls, "stack", None)
        if st is None:
            st = BlockBuilder._tls.stack = []
        return st

    @staticmethod
    def current() -> BlockBuilder | None:
        """The builder whose ``function`` scope is innermost in this thread."""
        st = BlockBuilder._stack()
        return st[-1] if st else None

    # ------------------------------------------------------------------ scopes
    def function(self, name: str, params=None, attrs=None, pure: bool = True,
                 private: bool = False) -> _Ctx:
        """Scope of a function named ``name`` with ``params`` (Vars with struct info; None:
        given later to ``emit_func_output``)."""
        if isinstance(params, Var):
            params = [params]

        def enter():
            if self._func is not None:
                raise BlockBuilderError(f"cannot start function {name!r} inside function "
                                        f"{self._func.name!r}")
            self._func = _FunctionScope(name, params, attrs, pure, private)
            self._mark_shape_vars(p._struct_info for p in self._func.params or ())
            BlockBuilder._stack().append(self)
            self._frames = [_Frame(False)]

        def leave(failed):
            BlockBuilder._stack().pop()
            func = self._func
            self._func = None
            self._frames = []
            if not failed and func is not None and not func.done:
                raise BlockBuilderError(f"function {name!r} ended without emit_func_output")

        return _Ctx(enter, leave)

    def dataflow(self) -> _Ctx:
        """Scope of a dataflow block (``with bb.dataflow():``)."""

        def enter():
            self._need_function("dataflow")
            self._close_block()
            self._frames.append(_Frame(True))

        def leave(failed):
            frame = self._frames.pop()
            if failed:
                return
            if frame.bindings:
                self._func.blocks.append(DataflowBlock(frame.bindings))
            self._frames.append(_Frame(False))

        return _Ctx(enter, leave)

    def _need_function(self, what: str) -> None:
        if self._func is None:
            raise BlockBuilderError(f"{what} must be called inside `with bb.function(...)`")

    def _close_block(self) -> None:
        frame = self._frames.pop()
        if frame.is_dataflow:
            raise BlockBuilderError("a dataflow block cannot be nested in another")
        if frame.bindings:
            self._func.blocks.append(BindingBlock(frame.bindings))

    def current_block_is_dataflow(self) -> bool:
        return bool(self._frames) and self._frames[-1].is_dataflow

    def block_is_open(self) -> bool:
        """Whether a binding may be emitted now (a block is open)."""
        return bool(self._frames)

    # blocks opened directly (mutators rebuild blocks outside a ``function`` scope)
    def _begin_block(self, is_dataflow: bool) -> None:
        self._frames.append(_Frame(is_dataflow))

    def _end_block(self) -> list:
        if not self._frames:
            raise BlockBuilderError("no block is open")
        return self._frames.pop().bindings

    def begin_dataflow_block(self) -> None:
        self._begin_block(True)

    def begin_binding_block(self) -> None:
        self._begin_block(False)

    def end_block(self) -> BindingBlock:
        is_dataflow = self.current_block_is_dataflow()
        bindings = self._end_block()
        return DataflowBlock(bindings) if is_dataflow else BindingBlock(bindings)

    def _names(self) -> NameSupply:
        return self._func.names if self._func is not None else self._global_names

    def _need_block(self, what: str) -> None:
        if not self._frames:
            raise BlockBuilderError(f"{what} must be called inside `with bb.function(...)` or "
                                    "an open block")

    # ------------------------------------------------------------------ names
    def get_unique_name(self, hint: str) -> str:
        return self._names().fresh(hint)

    # ------------------------------------------------------------------ emission
    def emit(self, expr: Expr, name_hint: str = "") -> Var:
        """Normalize ``expr`` and bind it to a new variable (a DataflowVar in a dataflow
        block)."""
        self._need_block("emit")
        value = self.normalize(self._bind_operands(expr))
        sinfo = value._struct_info
        name = self._names().fresh(name_hint or "lv")
        var = DataflowVar(name, sinfo) if self.current_block_is_dataflow() else Var(name, sinfo)
        self._append(VarBinding(var, value))
        return var

    def emit_normalized(self, binding) -> None:
        """Append an already normalized binding as it is."""
        self._need_block("emit_normalized")
        self._append(binding)

    def match_cast(self, value: Expr, struct_info: StructInfo, name_hint: str = "") -> Var:
        """Bind ``value`` cast to ``struct_info`` (checked at run time)."""
        self._need_block("match_cast")
        value = self.normalize(self._bind_operands(value))
        self._mark_shape_vars([struct_info])
        name = self._names().fresh(name_hint or "lv")
        cls = DataflowVar if self.current_block_is_dataflow() else Var
        var = cls(name, struct_info)
        self._append(MatchCast(var, value, struct_info))
        return var

    def emit_output(self, output, name_hint: str = "") -> Var:
        """Bind ``output`` to a variable visible after the dataflow block (``gv``)."""
        if not self.current_block_is_dataflow():
            raise BlockBuilderError("emit_output is only valid inside a dataflow block")
        if isinstance(output, list | tuple):
            output = Tuple(list(output))
        value = self.normalize(self._bind_operands(output))
        var = Var(self._names().fresh(name_hint or "gv"), value._struct_info)
        self._append(VarBinding(var, value))
        return var

    def emit_func_output(self, output, params=None) -> GlobalVar:
        """End the function with result ``output``; returns its GlobalVar in the module."""
        self._need_function("emit_func_output")
        func = self._func
        if func.done:
            raise BlockBuilderError(f"function {func.name!r} already has an output")
        if self.current_block_is_dataflow():
            raise BlockBuilderError("emit_func_output cannot be called inside a dataflow "
                                    "block; end the block (emit_output) first")
        if params is not None:
            if func.params is not None:
                raise BlockBuilderError("params were given to both function() and "
                                        "emit_func_output()")
            func.params = [params] if isinstance(params, Var) else list(params)
            self._mark_shape_vars(p._struct_info for p in func.params)
        if func.params is None:
            raise BlockBuilderError(f"function {func.name!r} has no params")
        if isinstance(output, list | tuple):
            output = Tuple(list(output))
        output = self.normalize(output)
        self._close_block()
        self._frames.append(_Frame(False))
        body = SeqExpr(func.blocks, output)
        attrs = dict(func.attrs.items() if isinstance(func.attrs, DictAttrs)
                     else (func.attrs or {}).items())
        if not func.private and "global_symbol" not in attrs:
            attrs["global_symbol"] = func.name
        new = Function(func.params, body, body._struct_info, func.pure,
                       DictAttrs(attrs) if attrs else None)
        func.done = True
        return self.add_func(new, func.name)

    # ------------------------------------------------------------------ module
    def add_func(self, func, func_name: str) -> GlobalVar:
        """Add ``func`` under a unique name (an identical function already there is reused)."""
        for gv, f in self._mod.functions.items():
            if gv.name_hint.startswith(func_name) and f is func:
                return gv
        name = self._global_names.fresh(func_name)
        gv = GlobalVar(name)
        if isinstance(func, Function) and func._struct_info is not None:
            gv._checked_type = func._struct_info
        self._mod[gv] = func
        return gv

    # ------------------------------------------------------------------ te
    def call_te(self, func, *args, **kwargs) -> Call:
        """``call_tir`` of a PrimFunc made from te function ``func`` applied to ``args``.

        Relax tensor arguments (also inside nested lists/tuples) become te placeholders;
        other arguments are passed to ``func`` as they are. ``primfunc_name_hint`` names the
        PrimFunc (default: ``func.__name__``); ``primfunc_attrs`` adds attributes to it. An
        identical PrimFunc already in the module is reused."""
        from ..te import Tensor
        from . import te_bridge
        from .op.base import call_tir

        name_hint = kwargs.pop("primfunc_name_hint", None)
        primfunc_attrs = kwargs.pop("primfunc_attrs", None)
        te_args, te_kwargs, relax_inputs, te_inputs = te_bridge.convert_te_args(args, kwargs)
        out = func(*te_args, **te_kwargs)
        outputs = list(out) if isinstance(out, list | tuple) else [out]
        if not outputs or not all(isinstance(t, Tensor) for t in outputs):
            raise TypeError("call_te: the te function must return a te.Tensor or a list of "
                            f"them, got {type(out).__name__}")
        prim, extra = te_bridge.make_te_prim_func(te_inputs, outputs)
        if primfunc_attrs:
            prim = prim.with_attr(dict(primfunc_attrs))
        if name_hint is None:
            name_hint = getattr(func, "__name__", "te_func")
            if name_hint == "<lambda>":
                name_hint = "te_func"
        gvar, prim_hash = self._same_prim_func(prim)
        if gvar is None:
            gvar = self.add_func(prim, name_hint)
            self._prim_hashes[id(prim)] = (prim, prim_hash)  # (not hashed again next time)
        out_sinfo = te_bridge.out_struct_info(outputs)
        if isinstance(out, list | tuple) and not isinstance(out_sinfo, list):
            out_sinfo = [out_sinfo]
        return call_tir(gvar, Tuple(list(relax_inputs)), out_sinfo,
                        tir_vars=list(extra) if extra else None)

    def _same_prim_func(self, prim):
        """(the global of a PrimFunc in the module structurally equal to ``prim`` or None,
        ``prim``'s structural hash).

        Functions are compared by structural hash first (each function's hash computed once):
        comparing every new PrimFunc with every earlier one made LegalizeOps quadratic (an ONNX
        MobileNetV3: 18,000 comparisons, a fifth of its relax.build)."""
        from ..ir.structural import structural_equal, structural_hash
        from ..tir.function import PrimFunc

        want = structural_hash(prim)
        for gv, f in self._mod.functions.items():
            if not isinstance(f, PrimFunc):
                continue
            known = self._prim_hashes.get(id(f))
            if known is None or known[0] is not f:
                known = self._prim_hashes[id(f)] = (f, structural_hash(f))
            if known[1] == want and structural_equal(f, prim):
                return gv, want
        return None, want

    def emit_te(self, func, *args, **kwargs) -> Var:
        """``emit(call_te(func, *args, **kwargs))``; ``name_hint`` names the bound var."""
        name_hint = kwargs.pop("name_hint", "")
        return self.emit(self.call_te(func, *args, **kwargs), name_hint)

    def update_func(self, gv: GlobalVar, func) -> None:
        self._mod[gv] = func

    def get(self) -> IRModule:
        """The module built so far (functions emitted and added)."""
        if self._func is not None:
            raise BlockBuilderError(f"function {self._func.name!r} is still being built")
        return self._mod

    finalize = get

    def lookup_binding(self, var: Var):
        """The value bound to ``var`` by a binding this builder holds, or None."""
        return self._bound.get(var)

    def _append(self, binding) -> None:
        """Add ``binding`` to the open block and to the binding table."""
        self._frames[-1].bindings.append(binding)
        if isinstance(binding, VarBinding):
            self._bound[binding.var] = binding.value

    # ------------------------------------------------------------------ normalization
    def _bind_operands(self, expr):
        """``expr`` with its call operands bound first (``bind_operands``)."""
        return bind_operands(expr, self.emit)

    def normalize(self, expr) -> Expr:
        """Fill the struct info of ``expr`` and of the sub-expressions it needs (iterative)."""
        if not isinstance(expr, _NORMALIZABLE):
            if isinstance(expr, list | tuple):
                expr = Tuple(list(expr))
            else:
                raise TypeError(f"cannot normalize {type(expr).__name__} {expr!r}; expected a "
                                "Relax expression")
        if expr._checked_type is not None and not isinstance(expr, _RENORMALIZED):
            return expr
        if isinstance(expr, If):
            expr = self._if_with_seq_branches(expr)
        elif isinstance(expr, Call) and (isinstance(expr.op, Op) or
                                         expr.op._checked_type is not None) and \
                _typed_leaf_args(expr.args):
            # (nothing below it but flat tuples to fill: most calls, call_tir's among them, and
            # the kernel / packed-function calls of the lowering passes)
            for a in expr.args:
                if a._checked_type is None:
                    a._checked_type = TupleStructInfo([f._checked_type for f in a.fields])
            expr._checked_type = self._infer_call(expr)
            return expr
        order = _post_order(expr)
        for e in order:
            if e._checked_type is not None:
                continue
            e._checked_type = self._infer(e)
        return expr

    def _if_with_seq_branches(self, e: If) -> If:
        """``e`` with each branch a SeqExpr, as TVM's normalizer makes them (a non-leaf branch
        is bound to a variable inside its own scope): well-formed Relax requires it."""
        branches = []
        for br in (e.true_branch, e.false_branch):
            if not isinstance(br, SeqExpr):
                self.normalize(br)
                if isinstance(br, Call | Tuple | TupleGetItem | If):
                    var = Var(self._names().fresh("lv"), br._checked_type)
                    br = SeqExpr([BindingBlock([VarBinding(var, br)])], var)
                else:
                    br = SeqExpr([], br)
            branches.append(br)
        if branches[0] is e.true_branch and branches[1] is e.false_branch:
            return e
        return If(e.cond, branches[0], branches[1], e.span)

    def _infer(self, e) -> StructInfo:
        if isinstance(e, Call):
            return self._infer_call(e)
        if isinstance(e, Tuple):
            return TupleStructInfo([f._checked_type for f in e.fields])
        if isinstance(e, TupleGetItem):
            t = e.tuple_value._checked_type
            if not isinstance(t, TupleStructInfo):
                raise ValueError(f"TupleGetItem of a value that is not a tuple: {t}")
            if not 0 <= e.index < len(t.fields):
                raise IndexError(f"TupleGetItem index {e.index} out of range for a tuple of "
                                 f"{len(t.fields)}")
            return t.fields[e.index]
        if isinstance(e, SeqExpr):
            return seq_struct_info(e.blocks, e.body._checked_type)
        if isinstance(e, If):
            from .analysis import struct_info_lca

            return struct_info_lca(e.true_branch._checked_type, e.false_branch._checked_type)
        if isinstance(e, GlobalVar):
            f = self._mod.functions.get(e) if e in self._mod.functions else None
            if f is None:
                for gv, fn in self._mod.functions.items():
                    if gv.name_hint == e.name_hint:
                        f = fn
                        break
            if f is not None and getattr(f, "_checked_type", None) is not None:
                return f._checked_type
            if f is not None and hasattr(f, "buffer_map"):  # a PrimFunc called directly
                return prim_func_struct_info(f)
            return FuncStructInfo.opaque_func()
        if isinstance(e, Var):
            raise ValueError(f"variable {e.name_hint!r} has no struct info")
        if isinstance(e, Function):
            return FuncStructInfo([p._checked_type for p in e.params],
                                  e.ret_struct_info or e.body._checked_type, e.is_pure)
        return ObjectStructInfo()

    def _infer_call(self, call: Call) -> StructInfo:
        op = call.op
        if isinstance(op, Op):
            infer = op.get_attr("FInferStructInfo")
            if infer is None:
                raise ValueError(f"operator {op.name} has no struct-info inference "
                                 "(FInferStructInfo)")
            return infer(call, self)
        fsinfo = op._checked_type
        if not isinstance(fsinfo, FuncStructInfo):
            raise ValueError(f"cannot call a value of struct info {fsinfo}")
        if fsinfo.is_opaque():
            if fsinfo.derive_func is not None:
                return fsinfo.derive_func(call, self)
            if call.sinfo_args:  # an ExternFunc / opaque callee: the call states its result
                sargs = list(call.sinfo_args)
                return sargs[0] if len(sargs) == 1 else TupleStructInfo(sargs)
            return fsinfo.ret
        from .analysis import derive_call_ret_struct_info

        return derive_call_ret_struct_info(fsinfo, call, self)


def bind_operands(expr, emit):
    """``expr`` with each operand that is itself a call (a TupleGetItem, an If, a SeqExpr)
    bound first by ``emit(operand) -> Var``, innermost first, as TVM's normalizer binds
    non-leaf arguments: ``add(multiply(x, x), x)`` becomes ``lv = multiply(x, x)`` then
    ``add(lv, x)``. Iterative; tuples stay inline with their fields bound."""
    if not isinstance(expr, _DATAFLOW):
        return expr
    if all(_is_flat(k) for k in _operands(expr)):
        return expr  # (leaves and tuples of leaves: most calls, call_tir's among them)
    done: dict[int, Expr] = {}
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in done:
            continue
        kids = _operands(e)
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in done)
            continue
        new = [done.get(id(k), k) for k in kids]
        new = [emit(k) if _needs_binding(k) else k for k in new]
        done[id(e)] = e if all(a is b for a, b in zip(new, kids)) else _with_operands(e, new)
    return done[id(expr)]


def _operands(e) -> list:
    """The operands ``_bind_operands`` looks into: a call's arguments, a tuple's fields, the
    tuple of a TupleGetItem (not into If branches, SeqExprs or functions: their own scopes)."""
    if isinstance(e, Call):
        return list(e.args)
    if isinstance(e, Tuple):
        return list(e.fields)
    if isinstance(e, TupleGetItem):
        return [e.tuple_value]
    return []


_NESTED = (Call, Tuple, TupleGetItem, If, SeqExpr)  # operands bind_operands looks into or binds


def _is_flat(e) -> bool:
    """A leaf, or a tuple of leaves: an operand ``bind_operands`` leaves as it is."""
    if isinstance(e, Tuple):
        return not any(isinstance(f, _NESTED) for f in e.fields)
    return not isinstance(e, _NESTED)


def _needs_binding(e) -> bool:
    """An operand Relax wants bound to a variable: a call, a TupleGetItem, an If or a SeqExpr
    (leaves — vars, constants, shapes, prim values, functions — and tuples stay inline)."""
    return isinstance(e, _BOUND)


def _with_operands(e, new: list):
    if isinstance(e, Call):
        return Call(e.op, new, e.attrs, e.sinfo_args, e.span)
    if isinstance(e, Tuple):
        return Tuple(new, e.span)
    return TupleGetItem(new[0], e.index, e.span)


def prim_func_struct_info(f) -> FuncStructInfo:
    """What a direct call of PrimFunc ``f`` returns, as TVM infers it: nothing (an empty tuple,
    the destination-passing calls CallTIRRewrite makes) or its scalar return type."""
    from ..ir.type import PrimType, TupleType

    ret = f.ret_type
    if isinstance(ret, PrimType):
        return FuncStructInfo.opaque_func(ret=PrimStructInfo(ret.dtype))
    if ret is None or (isinstance(ret, TupleType) and not ret.fields):
        return FuncStructInfo.opaque_func(ret=TupleStructInfo([]))
    return FuncStructInfo.opaque_func()


def _typed_leaf_args(args) -> bool:
    """Whether every argument has struct info or is a tuple of fields that have (and are no
    tuples): the arguments ``normalize`` fills without a walk."""
    for a in args:
        if isinstance(a, Tuple):
            if not all(f._checked_type is not None and not isinstance(f, Tuple)
                       for f in a.fields):
                return False
        elif a._checked_type is None:
            return False
    return True


def _post_order(root) -> list:
    """Sub-expressions of ``root`` still lacking struct info, operands first (iterative).
    Function bodies and nested scopes are normalized where they are built."""
    out, seen = [], set()
    stack = [(root, False)]
    while stack:
        e, done = stack.pop()
        if done:
            out.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e._checked_type is not None and not isinstance(e, Tuple):
            continue
        stack.append((e, True))
        if isinstance(e, Call):
            kids = [e.op, *e.args] if not isinstance(e.op, Op) else list(e.args)
        elif isinstance(e, Tuple):
            kids = list(e.fields)
        elif isinstance(e, TupleGetItem):
            kids = [e.tuple_value]
        elif isinstance(e, SeqExpr):
            kids = [e.body]
        elif isinstance(e, If):
            kids = [e.cond, e.true_branch, e.false_branch]
        else:
            kids = []
        for k in reversed(kids):
            if id(k) not in seen:
                stack.append((k, False))
    return out

