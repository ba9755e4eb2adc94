"""Parse ``@R.function`` definitions into ``relax.Function``.

Statements are interpreted in a loop (a 100,000-binding dataflow block is one loop); each
binding's value is normalized through ``relax.BlockBuilder`` (operators infer their struct
info), checked against its annotation when one is written, and bound to a ``Var`` (a
``DataflowVar`` inside ``with R.dataflow()`` unless ``R.output`` lists it). Symbolic shape
variables are one ``tir.Var`` per name per function: ``"n"`` in the signature declares it,
``n = T.int64()`` in the body refers to the same variable.
"""

from __future__ import annotations

import ast

from ...ir.attrs import DictAttrs
from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.prim_expr import IntImm, PrimExpr
from ...relax import expr as rx
from ...relax import struct_info as si
from ...relax.block_builder import BlockBuilder, bind_operands
from ...tir import expr as tir
from . import relax as R_ns
from .core import _MISSING, ExprEvaluator, VarTable, _Active
from .entry import decorator_kind
from .error import Source

__all__ = ["RelaxParser", "parse_relax_function", "struct_info_conflict"]


class _Signature:
    __slots__ = ("node", "params", "ret", "struct_info", "pure", "private", "nested")


class _Seq:
    """A sequence of blocks being built (a function body or an ``if`` branch)."""

    __slots__ = ("blocks", "bindings", "dataflow", "last_ann")

    def __init__(self):
        self.blocks: list = []
        self.bindings: list = []
        self.dataflow: _Dataflow | None = None
        self.last_ann = None


class _Dataflow:
    __slots__ = ("outputs", "index", "out_vars")

    def __init__(self, outputs: dict):
        self.outputs = outputs  # name -> index of the statement whose binding is the output
        self.index = -1
        self.out_vars: dict = {}


_LEAF_OR_TUPLE = (rx.Var, rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm,
                  rx.DataTypeImm, rx.ExternFunc, rx.Tuple, GlobalVar, Op)


def parse_relax_function(src: Source, node: ast.FunctionDef, env: dict, kwargs: dict):
    p = RelaxParser(src, env, VarTable())
    p.declare(node, kwargs, nested=False)
    return p.finish()


class RelaxParser(ExprEvaluator):
    """Parses one Relax function (nested functions get a parser of their own that shares the
    name table, so they see the variables of the functions around them)."""

    dialect = "Relax"

    def __init__(self, source: Source, env: dict, var_table: VarTable,
                 bb: BlockBuilder | None = None):
        self.source = source
        self.env = env
        self.var_table = var_table
        self.bb = bb or BlockBuilder()
        self._operand_names: set[str] = set()  # names given to bound nested calls
        self.sig: _Signature | None = None
        self.attrs: dict = {}
        self.sym: dict[str, tir.Var] = {}
        self._seq: _Seq | None = None
        self._stmt = None
        self._autodef = False
        self._df_locals: dict[str, int] = {}  # name -> line, bound in a block, not output

    # ------------------------------------------------------------------ names
    def lookup_missing(self, name: str, node):
        v = self.sym.get(name)
        if v is not None:
            return v
        if self._autodef:
            return self._new_sym(name, "int64")
        line = self._df_locals.get(name)
        if line is not None:
            raise self.error(node, f"name {name!r} is not defined here: it is a dataflow "
                                   f"variable of the dataflow block above (bound at line "
                                   f"{line}); list it in that block's R.output(...) to use it "
                                   f"after the block")
        return _MISSING

    def _new_sym(self, name: str, dtype: str, cls=tir.Var):
        v = cls(name, dtype)
        self.sym[name] = v
        self.var_table.add(name, v)
        return v

    def symbolic_dim(self, text: str):
        """A dimension written as a string (``"n"``, ``"n * 2"``): names are the function's
        symbolic variables, declared here when first seen."""
        if text.isidentifier():
            v = self.var_table.get(text)
            if v is None:
                v = self.sym.get(text)
            if v is None:
                return self._new_sym(text, "int64")
            if not isinstance(v, tir.Var):
                raise self.error(self._stmt, f"{text!r} in a shape is a "
                                             f"{type(v).__name__}, not a symbolic variable")
            return v
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            raise self.error(self._stmt, f"invalid symbolic dimension {text!r}") from None
        self._autodef, saved = True, self._autodef
        try:
            return si.as_dim(self.eval_expr(tree.body))
        except Exception as e:
            msg = getattr(e, "message", None) or str(e)
            raise self.error(self._stmt, f"in the dimension {text!r}: {msg}") from e
        finally:
            self._autodef = saved

    # ------------------------------------------------------------------ evaluation hooks
    def call(self, func, args, kwargs, node):
        if isinstance(func, GlobalVar | rx.Var | rx.Function | Op):
            sinfo_args = kwargs.pop("sinfo_args", None)
            attrs = kwargs.pop("attrs", None)
            if kwargs:
                attrs = DictAttrs({**(dict(attrs.items()) if attrs else {}), **kwargs})
            if sinfo_args is not None and not isinstance(sinfo_args, list | tuple):
                sinfo_args = [sinfo_args]
            return rx.Call(func, [R_ns.to_relax(a) for a in args], attrs,
                           [R_ns.as_struct_info(s) for s in sinfo_args or ()])
        sinfo_args = kwargs.get("sinfo_args")
        if isinstance(sinfo_args, list | tuple):  # a bare ``R.Object`` among them: its default
            kwargs["sinfo_args"] = type(sinfo_args)(R_ns.as_struct_info(s) for s in sinfo_args)
        elif sinfo_args is not None:
            kwargs["sinfo_args"] = R_ns.as_struct_info(sinfo_args)
        return super().call(func, args, kwargs, node)

    def subscript(self, obj, index, node):
        if isinstance(obj, rx.Expr):
            if isinstance(index, int) and not isinstance(index, bool):
                return rx.TupleGetItem(obj, index)
            raise self.error(node, f"a Relax value is indexed by an int (a tuple field), got "
                                   f"{type(index).__name__}")
        if (isinstance(obj, tuple) and obj and isinstance(index, int)
                and all(isinstance(f, rx.Expr) for f in obj)):
            return rx.TupleGetItem(rx.Tuple(list(obj)), index)  # ``(x, y)[0]``: a Relax tuple
        return obj[index]

    def eval_sinfo(self, node) -> si.StructInfo:
        v = self.eval_expr(node)
        try:
            return R_ns.as_struct_info(v)
        except TypeError as e:
            raise self.error(node, str(e)) from None

    # ------------------------------------------------------------------ functions
    def declare(self, node: ast.FunctionDef, kwargs: dict, nested: bool) -> _Signature:
        """Read the signature: parameters, return struct info, decorator options."""
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs or a.kw_defaults:
            raise self.unsupported(node, "*args, **kwargs, keyword-only, positional-only and "
                                         "default parameters")
        self.var_table.push()  # the function's scope; popped by finish()
        sig = _Signature()
        sig.node = node
        sig.pure = bool(kwargs.get("pure", True))
        sig.private = bool(kwargs.get("private", False))
        sig.nested = nested
        params = []
        with _Active(self):
            for arg in a.args:
                self._stmt = arg
                if arg.annotation is None:
                    raise self.error(arg, f"parameter {arg.arg!r} needs a struct info "
                                          "annotation (x: R.Tensor(...))")
                params.append(rx.Var(arg.arg, self.eval_sinfo(arg.annotation),
                                     self.source.span(arg)))
            sig.ret = None
            if node.returns is not None:
                self._stmt = node.returns
                sig.ret = self.eval_sinfo(node.returns)
        seen = set()
        for p in params:
            if p.name_hint in seen:
                raise self.error(node, f"duplicate parameter {p.name_hint!r}")
            seen.add(p.name_hint)
            self.var_table.add(p.name_hint, p)
        # the parameters' shape variables are sizes, so not negative (as TVM's BlockBuilder
        # knows when it enters a function): x[:n] on an axis of length n * 2 + m is n long
        self.bb._mark_shape_vars(p.struct_info_ for p in params)
        sig.params = params
        sig.struct_info = si.FuncStructInfo(
            [p.struct_info_ for p in params],
            sig.ret if sig.ret is not None else si.ObjectStructInfo(), sig.pure)
        self.sig = sig
        return sig

    def finish(self) -> rx.Function:
        """Parse the body of the declared function."""
        sig = self.sig
        node = sig.node
        seq = self._seq = _Seq()
        try:
            with _Active(self):
                ret = self._stmts(node.body, func=True)
                if ret is None:
                    raise self.error(node, f"function {node.name!r} must end with a return "
                                           "statement")
                self._flush()
        finally:
            self.var_table.pop()
        body_expr, ret_node = ret
        body = rx.SeqExpr(seq.blocks, body_expr)
        ret_sinfo = sig.ret
        if ret_sinfo is None:
            ret_sinfo = body.struct_info_  # shape variables bound in the body erased
        else:
            self._check(ret_sinfo, body_expr.struct_info_, ret_node, "the return value")
        attrs = dict(self.attrs)
        if not sig.private and not sig.nested and "global_symbol" not in attrs:
            attrs["global_symbol"] = node.name
        return rx.Function(sig.params, body, ret_sinfo, sig.pure,
                           DictAttrs(attrs) if attrs else None)

    # ------------------------------------------------------------------ statements
    def _stmts(self, stmts, func: bool):
        """Interpret ``stmts``; returns ``(value, node)`` of the ``return`` when there is one."""
        ret = None
        for stmt in stmts:
            self._stmt = stmt
            if ret is not None:
                raise self.error(stmt, "unreachable statement after return")
            t = type(stmt)
            if t is ast.Assign:
                self._assign(stmt)
            elif t is ast.AnnAssign:
                self._ann_assign(stmt)
            elif t is ast.Expr:
                self._expr_stmt(stmt)
            elif t is ast.With:
                self._with(stmt)
            elif t is ast.If:
                self._if(stmt)
            elif t is ast.Return:
                if not func:
                    raise self.error(stmt, "return is not allowed in an if branch; assign the "
                                           "branch's value to the same variable in both "
                                           "branches instead")
                if stmt.value is None:
                    raise self.error(stmt, "a Relax function must return a value")
                value = self._to_relax(self.eval_expr(stmt.value), stmt)
                ret = (self._normalize(value, stmt), stmt)
            elif t is ast.FunctionDef:
                self._local_function(stmt)
            elif t is ast.Pass:
                continue
            else:
                raise self.unsupported(stmt, f"a `{t.__name__}` statement")
        return ret

    def _flush(self) -> None:
        seq = self._seq
        if seq.bindings:
            seq.blocks.append(rx.BindingBlock(seq.bindings))
            seq.bindings = []

    def _assign(self, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1:
            raise self.unsupported(stmt, "chained assignment (a = b = ...)")
        target = stmt.targets[0]
        if not isinstance(target, ast.Name):
            raise self.unsupported(target, "assigning to anything but a name (tuple unpacking, "
                                           "subscripts, attributes)")
        value = self.eval_expr(stmt.value)
        self._seq.last_ann = None
        self._bind(target.id, value, None, stmt)

    def _ann_assign(self, stmt: ast.AnnAssign) -> None:
        if not isinstance(stmt.target, ast.Name):
            raise self.unsupported(stmt.target, "an annotated assignment to anything but a name")
        if stmt.value is None:
            raise self.error(stmt, f"{stmt.target.id!r} is annotated but not assigned")
        value = self.eval_expr(stmt.value)
        ann = self.eval_sinfo(stmt.annotation)
        self._seq.last_ann = ann
        self._bind(stmt.target.id, value, ann, stmt)

    def _expr_stmt(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant):
            return  # a docstring
        v = self.eval_expr(stmt.value)
        if isinstance(v, R_ns._FuncAttr):
            if self._seq is None or self._seq.dataflow is not None:
                raise self.error(stmt, "R.func_attr belongs at the top level of a function")
            self.attrs.update({k: _attr_value(x) for k, x in v.attrs.items()})
        elif isinstance(v, R_ns._Output):
            if self._seq.dataflow is None:
                raise self.error(stmt, "R.output is only valid inside `with R.dataflow():`")
            self._check_outputs(v, stmt)
        elif isinstance(v, rx.Expr | tuple | list):
            self._emit("_", v, None, stmt)
        elif v is not None:
            raise self.error(stmt, f"this expression statement has no meaning in a Relax "
                                   f"function (its value is a {type(v).__name__})")

    # ------------------------------------------------------------------ bindings
    def _bind(self, name: str, value, ann, node) -> None:
        if isinstance(value, tir.Var) and value.name == "":
            self._declare_sym(name, value, node)
        elif isinstance(value, R_ns._MatchCast):
            self._match_cast(name, value, ann, node)
        elif isinstance(value, rx.Expr | tuple | list):
            self._emit(name, value, ann, node)
        elif isinstance(value, PrimExpr):
            raise self.error(node, f"cannot bind the PrimExpr {value!r} to the Relax variable "
                                   f"{name!r}; wrap it in R.prim_value(...)")
        elif isinstance(value, GlobalVar):
            self._emit(name, value, ann, node)
        else:
            if ann is not None:
                raise self.error(node, f"{name!r} is annotated with struct info but bound to "
                                       f"a Python {type(value).__name__}")
            self.var_table.add(name, value)  # a Python-level name (``cls = Module``)

    def _declare_sym(self, name: str, fresh: tir.Var, node) -> None:
        """``n = T.int64()``: the function's symbolic variable ``n`` (the signature's, if it
        declared one)."""
        old = self.sym.get(name)
        if old is None:
            v = self.var_table.get(name)
            old = v if isinstance(v, tir.Var) else None
        if old is not None:
            if old.dtype != fresh.dtype:
                raise self.error(node, f"symbolic variable {name!r} is {old.dtype} in the "
                                       f"signature but declared {fresh.dtype} here")
            if name not in self.var_table:
                self.var_table.add(name, old)
            return
        fresh.name = name
        self.sym[name] = fresh
        self.var_table.add(name, fresh)

    def _var(self, name: str, sinfo, node, operand: bool = False):
        span = self.source.span(node)
        df = self._seq.dataflow
        if df is None:
            return rx.Var(name, sinfo, span)
        # (a nested operand's temporary is never an output, even when its fresh name is the
        # name the statement's own output binds: ``lv2 = R.matmul(a, R.permute_dims(w))``)
        if df.outputs.get(name) == df.index and not operand:
            v = rx.Var(name, sinfo, span)
            df.out_vars[name] = v
            return v
        return rx.DataflowVar(name, sinfo, span)

    def _spanned(self, value, node):
        """``value`` with the span of ``node`` when it was made by this statement (no span
        yet); spans are bookkeeping, ignored by structural equality."""
        if getattr(value, "span", 1) is None:
            value.span = self.source.span(node)
        return value

    def _emit(self, name: str, value, ann, node, var=None, operand: bool = False) -> rx.Var:
        at = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else node
        value = self._normalize(self._bind_operands(self._to_relax(value, at), node), at)
        inferred = value.struct_info_
        if ann is not None:
            self._check(ann, inferred, node, f"the value bound to {name!r}")
            sinfo = ann
        else:
            sinfo = inferred
        if var is None:
            var = self._var(name, sinfo, node, operand)
        self._spanned(value, at)
        self._seq.bindings.append(rx.VarBinding(var, value, self.source.span(node)))
        self.var_table.add(name, var)
        return var

    def _match_cast(self, name: str, mc, ann, node) -> None:
        value = self._normalize(self._bind_operands(self._to_relax(mc.value, node), node), node)
        if ann is not None:
            self._check(ann, mc.struct_info, node, f"R.match_cast bound to {name!r}")
        var = self._var(name, mc.struct_info, node)
        self.bb._mark_shape_vars([mc.struct_info])
        self._seq.bindings.append(rx.MatchCast(var, value, mc.struct_info))
        self.var_table.add(name, var)

    def _bind_operands(self, value, node):
        """``value`` with its nested calls bound first, each to a fresh ``lv`` variable, as
        TVM's parser (through its BlockBuilder) binds them."""
        def emit(operand):
            k = 0
            while (name := "lv" if k == 0 else f"lv{k}") in self.var_table or \
                    name in self._operand_names:
                k += 1
            self._operand_names.add(name)
            return self._emit(name, operand, None, node, operand=True)

        return bind_operands(value, emit)

    def _to_relax(self, value, node):
        try:
            return R_ns.to_relax(value)
        except (TypeError, ValueError) as e:
            raise self.error(node, str(e)) from None

    def _normalize(self, value, node):
        try:
            return self.bb.normalize(value)
        except ImportError:
            pass  # a relax.analysis helper is not there yet: derive the few cases here
        except Exception as e:
            raise self.error(node, _reason(e)) from e
        s = _fallback_sinfo(value)
        if s is None:
            raise self.error(node, f"cannot derive the struct info of this "
                                   f"{type(value).__name__} (relax.analysis is incomplete)")
        value._checked_type = s
        return value

    def _check(self, ann, inferred, node, what: str) -> None:
        problem = struct_info_conflict(ann, inferred)
        if problem is not None:
            raise self.error(node, f"the annotation {ann} does not match {what}, of struct "
                                   f"info {inferred}: {problem}")

    # ------------------------------------------------------------------ dataflow blocks
    def _with(self, stmt: ast.With) -> None:
        if len(stmt.items) != 1:
            raise self.unsupported(stmt, "a `with` of several items")
        item = stmt.items[0]
        ctx = self.eval_expr(item.context_expr)
        if not isinstance(ctx, R_ns._DataflowScope):
            raise self.unsupported(stmt, f"`with {ast.unparse(item.context_expr)}` (only "
                                         "`with R.dataflow():` opens a scope in Relax)")
        if item.optional_vars is not None:
            raise self.error(stmt, "`with R.dataflow() as ...` binds nothing; drop `as`")
        seq = self._seq
        if seq.dataflow is not None:
            raise self.error(stmt, "dataflow blocks cannot be nested")
        df = _Dataflow(self._scan_outputs(stmt.body))
        self._flush()
        seq.dataflow = df
        self.var_table.push()
        try:
            body = stmt.body
            last = len(body) - 1
            for i, s in enumerate(body):
                self._stmt = s
                df.index = i
                t = type(s)
                if t is ast.Assign:
                    self._assign(s)
                elif t is ast.AnnAssign:
                    self._ann_assign(s)
                elif t is ast.Expr:
                    if i != last and self._is_output(s):
                        raise self.error(s, "R.output must be the last statement of the "
                                            "dataflow block")
                    self._expr_stmt(s)
                elif t is ast.Pass:
                    continue
                elif t is ast.FunctionDef:  # a local function (MergeCompositeFunctions')
                    self._local_function(s)
                elif t is ast.If:
                    raise self.error(s, "control flow (if) is not allowed in a dataflow block")
                elif t is ast.Return:
                    raise self.error(s, "return is not allowed in a dataflow block; end the "
                                        "block with R.output(...) and return after it")
                else:
                    raise self.unsupported(s, f"a `{t.__name__}` statement in a dataflow block")
        finally:
            self.var_table.pop()
            seq.dataflow = None
        if seq.bindings:
            seq.blocks.append(rx.DataflowBlock(seq.bindings))
            seq.bindings = []
        for name, var in df.out_vars.items():
            self.var_table.add(name, var)
        for s in stmt.body:  # names the block binds but does not output: for a clear error
            for t in (s.targets if isinstance(s, ast.Assign) else
                      [s.target] if isinstance(s, ast.AnnAssign) else []):
                if isinstance(t, ast.Name) and t.id not in df.out_vars:
                    self._df_locals[t.id] = s.lineno + self.source.line_offset

    def _is_output(self, s) -> bool:
        return (isinstance(s.value, ast.Call)
                and self._try_eval(s.value.func) is R_ns.output)

    def _try_eval(self, node):
        try:
            return self.eval_expr(node)
        except Exception:
            return None

    def _scan_outputs(self, body) -> dict:
        """Names listed by the block's ``R.output``, each mapped to the index of the statement
        that binds it last (that binding defines a Var, the others DataflowVars)."""
        names: list = []
        for s in body:
            if isinstance(s, ast.Expr) and self._is_output(s):
                for a in s.value.args:
                    if not isinstance(a, ast.Name):
                        raise self.error(a, "R.output takes the names of variables bound in "
                                            "the dataflow block")
                    names.append(a.id)
                if s.value.keywords:
                    raise self.error(s, "R.output takes no keyword arguments")
        if not names:
            return {}
        wanted = set(names)
        last: dict = {}
        for i, s in enumerate(body):
            t = type(s)
            if t is ast.Assign and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                n = s.targets[0].id
            elif t is ast.AnnAssign and isinstance(s.target, ast.Name):
                n = s.target.id
            elif t is ast.FunctionDef:
                n = s.name
            else:
                continue
            if n in wanted:
                last[n] = i
        return last  # names bound nowhere in the block are reported at R.output

    def _check_outputs(self, out, stmt) -> None:
        bound = self._seq.dataflow.out_vars
        for a, v in zip(stmt.value.args, out.vars):
            if bound.get(getattr(a, "id", None)) is not v:
                raise self.error(stmt, f"R.output lists {ast.unparse(a)!r}, which is not "
                                       "bound in this dataflow block")

    # ------------------------------------------------------------------ if / else
    def _if(self, stmt: ast.If) -> None:
        if self._seq.dataflow is not None:
            raise self.error(stmt, "control flow (if) is not allowed in a dataflow block")
        if not stmt.orelse:
            raise self.error(stmt, "an if in Relax needs an else branch (both branches bind "
                                   "the if's variable)")
        cond = self._normalize(self._to_relax(self.eval_expr(stmt.test), stmt.test), stmt.test)
        then_seq, name, ann = self._branch(stmt.body, stmt)
        else_seq, name2, ann2 = self._branch(stmt.orelse, stmt.orelse[0])
        if name != name2:
            raise self.error(stmt, f"both branches of an if must end by binding the same "
                                   f"variable; got {name!r} and {name2!r}")
        self._stmt = stmt
        value = rx.If(cond, then_seq, else_seq)
        self._emit(name, value, ann if ann is not None else ann2, stmt)

    def _branch(self, stmts, node):
        outer = self._seq
        seq = self._seq = _Seq()
        self.var_table.push()
        try:
            self._stmts(stmts, func=False)
            self._flush()
        finally:
            self.var_table.pop()
            self._seq = outer
        last_stmt = stmts[-1]
        if not isinstance(last_stmt, ast.Assign | ast.AnnAssign | ast.If) or not seq.blocks:
            raise self.error(last_stmt, "an if branch must end by binding the if's variable "
                                        "(y = ...)")
        block = seq.blocks[-1]
        last = block.bindings[-1]
        name = last.var.name_hint
        blocks = seq.blocks
        if isinstance(last, rx.VarBinding) and isinstance(last.value, _LEAF_OR_TUPLE):
            rest = block.bindings[:-1]
            blocks = blocks[:-1] + ([type(block)(rest)] if rest else [])
            body = last.value
        else:
            body = last.var
        return rx.SeqExpr(blocks, body), name, seq.last_ann

    # ------------------------------------------------------------------ local functions
    def _local_function(self, stmt: ast.FunctionDef) -> None:
        kind, kwargs = decorator_kind(self, stmt)
        if kind != "relax":
            raise self.error(stmt, "a function defined inside a Relax function must be an "
                                   "@R.function (inline @T.prim_func is not allowed)")
        sub = RelaxParser(self.source, self.env, self.var_table, self.bb)
        sub.sym = dict(self.sym)
        sig = sub.declare(stmt, kwargs, nested=True)
        # the function's own name is visible in its body (a recursive local function), as a
        # variable of the struct info its signature declares
        self_var = None
        if sig.ret is not None:  # in the function's own scope, which finish() closes
            self_var = self._var(stmt.name, sig.struct_info, stmt)
            self.var_table.add(stmt.name, self_var)
        func = sub.finish()
        self._stmt = stmt
        self._emit(stmt.name, func, None, stmt, var=self_var)


# ---------------------------------------------------------------------------- struct info
def _attr_value(v):
    from .tir_parser import attr_value

    return attr_value(v)


def _reason(e: Exception) -> str:
    msg = str(e)
    return msg if isinstance(e, ValueError) and msg else f"{type(e).__name__}: {msg}"


def _kind(s) -> str:
    return type(s).__name__.replace("StructInfo", "") if s is not None else "unknown"


def struct_info_conflict(ann, inferred) -> str | None:
    """Why a value of struct info ``inferred`` can never match ``ann`` (a different kind,
    dtype, rank or constant dimension), or None: an annotation may be less specific than what
    was inferred, and symbolic dimensions are checked at run time."""
    stack = [(ann, inferred)]
    while stack:
        a, b = stack.pop()
        if b is None or isinstance(a, si.ObjectStructInfo):
            continue
        if type(a) is not type(b):
            return f"{_kind(b)} is not {_kind(a)}"
        if isinstance(a, si.TensorStructInfo):
            if a.dtype != "void" and b.dtype != "void" and a.dtype != b.dtype:
                return f"dtype {b.dtype} is not {a.dtype}"
            if a.ndim != -1 and b.ndim != -1 and a.ndim != b.ndim:
                return f"rank {b.ndim} is not {a.ndim}"
            da, db = a.dims(), b.dims()
            if da is not None and db is not None:
                problem = _dims_conflict(da, db)
                if problem:
                    return problem
        elif isinstance(a, si.ShapeStructInfo):
            if a.ndim != -1 and b.ndim != -1 and a.ndim != b.ndim:
                return f"rank {b.ndim} is not {a.ndim}"
            if a.values is not None and b.values is not None:
                problem = _dims_conflict(a.values, b.values)
                if problem:
                    return problem
        elif isinstance(a, si.PrimStructInfo):
            if a.dtype != b.dtype:
                return f"dtype {b.dtype} is not {a.dtype}"
        elif isinstance(a, si.TupleStructInfo):
            if len(a.fields) != len(b.fields):
                return f"a tuple of {len(b.fields)} fields is not one of {len(a.fields)}"
            stack.extend(zip(a.fields, b.fields))
    return None


def _dims_conflict(da, db) -> str | None:
    for k, (x, y) in enumerate(zip(da, db)):
        if isinstance(x, IntImm) and isinstance(y, IntImm) and x.value != y.value:
            return f"dimension {k} is {y.value}, not {x.value}"
    return None


def _fallback_sinfo(value):
    """Struct info of an ``If`` (least common ancestor of its branches) or of a call of a
    function value, for when ``relax.analysis`` lacks ``struct_info_lca`` /
    ``derive_call_ret_struct_info``."""
    if isinstance(value, rx.If):
        return _lca(value.true_branch.struct_info_, value.false_branch.struct_info_)
    if isinstance(value, rx.Call):
        f = value.op._checked_type  # GlobalVars and Vars alike
        if not isinstance(f, si.FuncStructInfo):
            return None
        if f.is_opaque():
            return f.ret
        vmap: dict = {}
        for p, a in zip(f.params, value.args):
            _match_dims(p, a._checked_type, vmap)
        return _subst(f.ret, vmap)
    return None


def _lca(a, b):
    from ...ir.structural import structural_equal

    if a is None or b is None:
        return si.ObjectStructInfo()
    if structural_equal(a, b, map_free_vars=False):
        return a
    if type(a) is not type(b):
        return si.ObjectStructInfo()
    if isinstance(a, si.TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else None
        ndim = a.ndim if a.ndim == b.ndim else -1
        return si.TensorStructInfo(None, dtype, None, ndim)
    if isinstance(a, si.ShapeStructInfo):
        return si.ShapeStructInfo(None, a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, si.PrimStructInfo):
        return si.PrimStructInfo(a.dtype) if a.dtype == b.dtype else si.ObjectStructInfo()
    if isinstance(a, si.TupleStructInfo) and len(a.fields) == len(b.fields):
        return si.TupleStructInfo([_lca(x, y) for x, y in zip(a.fields, b.fields)])
    return si.ObjectStructInfo()


def _match_dims(p, a, vmap: dict) -> None:
    if isinstance(p, si.TensorStructInfo) and isinstance(a, si.TensorStructInfo):
        dp, da = p.dims(), a.dims()
        pairs = zip(dp, da) if dp is not None and da is not None and len(dp) == len(da) else ()
    elif isinstance(p, si.ShapeStructInfo) and isinstance(a, si.ShapeStructInfo):
        ok = p.values is not None and a.values is not None and len(p.values) == len(a.values)
        pairs = zip(p.values, a.values) if ok else ()
    elif isinstance(p, si.PrimStructInfo) and isinstance(a, si.PrimStructInfo):
        pairs = [(p.value, a.value)] if p.value is not None and a.value is not None else ()
    elif isinstance(p, si.TupleStructInfo) and isinstance(a, si.TupleStructInfo):
        for x, y in zip(p.fields, a.fields):
            _match_dims(x, y, vmap)
        return
    else:
        return
    for x, y in pairs:
        if isinstance(x, tir.Var) and x not in vmap:
            vmap[x] = y


def _subst(s, vmap: dict):
    if not vmap:
        return s
    from ...tir.stmt_functor import substitute

    def dim(d):
        return substitute(d, vmap)

    if isinstance(s, si.TensorStructInfo):
        dims = s.dims()
        if dims is None:
            return s
        return si.TensorStructInfo([dim(d) for d in dims], s.dtype, s.vdevice, s.ndim)
    if isinstance(s, si.ShapeStructInfo) and s.values is not None:
        return si.ShapeStructInfo([dim(d) for d in s.values], s.ndim)
    if isinstance(s, si.PrimStructInfo) and s.value is not None:
        return si.PrimStructInfo(s.dtype, dim(s.value))
    if isinstance(s, si.TupleStructInfo):
        return si.TupleStructInfo([_subst(f, vmap) for f in s.fields])
    return s
