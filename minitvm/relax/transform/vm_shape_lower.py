"""VMShapeLower (TVM's ``relax.transform.VMShapeLower``): symbolic shapes become run-time values
of a per-call *shape heap* (an int64 tensor, one slot per symbolic variable or composite
expression), and struct info becomes run-time checks.

At function entry every parameter is checked (``vm.builtin.check_tensor_info`` / ``_shape_`` /
``_tuple_`` / ``_prim_value_info``: kind, rank, dtype) and its dimensions are matched
(``vm.builtin.match_shape``): a constant is asserted, a symbolic variable seen for the first time
is stored to the heap, one seen before is asserted equal to the stored value — so ``n`` used by two
parameters must agree. ``R.match_cast`` does the same on its value, and so does a call whose result
names symbolic variables not known yet (a packed function returning a data-dependent shape). Composite expressions
(``n * 128``) are computed by a generated PrimFunc ``shape_func`` reading and writing the heap, as
soon as their variables are known. Shapes and scalars built from symbolic values become
``vm.builtin.make_shape`` / ``vm.builtin.make_prim_value`` calls. Every check carries an
``ErrorContext(fn=..., loc=param[k], param=x, annotation=...)`` string for its error message.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.gc_pause import gc_paused
from ...ir.prim_expr import IntImm, PrimExpr
from ...tir import expr as T
from ...tir.buffer import decl_buffer
from ...tir.function import PrimFunc
from ...tir.stmt import BufferStore, stmt_seq
from ...tir.stmt_functor import post_order, substitute
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..op import vm as vm_op
from ..struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .lower_utils import Namer, normalized
from .utils import has_relax_function, register, sinfo_prim_fields

__all__ = ["VMShapeLower", "MatchShapeCode", "MakeShapeCode", "vm_shape_lower"]


class MatchShapeCode:
    """What ``vm.builtin.match_shape`` does with one dimension (TVM's codes)."""

    ASSERT_EQUAL_TO_IMM = 0
    STORE_TO_HEAP = 1
    NO_OP = 2
    ASSERT_EQUAL_TO_LOAD = 3


class MakeShapeCode:
    """Where ``vm.builtin.make_shape`` takes one dimension from."""

    USE_IMM = 0
    LOAD_SHAPE = 1


_VOID = TupleStructInfo([])


def _pv(v: int) -> PrimValue:
    return PrimValue(IntImm("int64", int(v)))


def _packed(name: str, args, sinfo: StructInfo = _VOID) -> Call:
    c = Call(ExternFunc(name), list(args), None, [sinfo])
    c._checked_type = sinfo
    return c


# operand kinds that may hold a PrimExpr (what scan_composites walks into)
_SCANNED = frozenset({ShapeExpr, PrimValue, Call, Tuple})
# operands lower_operand returns unchanged, whatever they hold
_AS_IS = frozenset({Var, DataflowVar, Constant, GlobalVar, ExternFunc, StringImm, DataTypeImm})


def _tir_vars(e) -> list:
    return [n for n in post_order(e) if isinstance(n, T.Var)]


class _Lowerer:
    """The rewrite of one function."""

    def __init__(self, func: Function, fname: str, mod, out_mod):
        self.func, self.fname, self.mod, self.out_mod = func, fname, mod, out_mod
        self.namer = Namer(func)
        self.slot: dict = {}          # key -> heap slot
        self.bound: set = set()       # keys whose heap value is known here
        self.composites: dict = {}    # key -> expr, every composite the function mentions
        self.heap = Var(self.namer.fresh("shape_heap"), TensorStructInfo(None, "int64", ndim=1))
        self.heap_used = False
        self.static_shapes: dict[int, bool] = {}  # id(ShapeExpr) -> all dimensions constant
        self.keep: list = []          # the ShapeExprs those ids name
        self.quiet_sinfo: dict = {}   # id(struct info) -> (it, names_no_variable(it))
        self.plain_calls: set = set()  # ids of the function's calls with only plain_args

    # ------------------------------------------------------------------ heap slots
    @staticmethod
    def key(e: PrimExpr):
        if isinstance(e, T.Var):
            return ("var", id(e))
        return ("expr", repr(e), tuple(id(v) for v in _tir_vars(e)))

    def slot_of(self, e: PrimExpr) -> int:
        k = self.key(e)
        if k not in self.slot:
            self.slot[k] = len(self.slot)
        return self.slot[k]

    def scan_composites(self) -> None:
        from .utils import iter_bindings, sinfo_prim_fields

        # Only operands that can hold a PrimExpr are pushed, and constant dimensions are left
        # out as they are met: the walk meets the same non-constant values in the same order
        # as one visiting every operand, without a step per variable and per constant of a
        # 100,000-binding static graph.
        prims = []
        scanned = _SCANNED
        static_shape = self.static_shape
        plain, plain_args = self.plain_calls, self.plain_args
        for b in iter_bindings(self.func.body):
            v = b.value
            tv = type(v)
            if tv in _AS_IS:
                stack = None  # (a variable, a constant: no PrimExpr in it)
            elif tv is Call and plain_args(v.args, static_shape):
                stack = None  # (nothing in it can hold a non-constant PrimExpr)
                plain.add(id(v))  # (lower_value keeps it: no second look at its arguments)
            else:
                stack = [v]
            while stack:
                e = stack.pop()
                t = type(e)
                if t is ShapeExpr:
                    prims.extend(d for d in e.values if not isinstance(d, IntImm))
                elif t is PrimValue:
                    prims.append(e.value)
                elif t is Call:
                    stack.extend(a for a in e.args if type(a) in scanned)
                elif t is Tuple:
                    stack.extend(f for f in e.fields if type(f) in scanned)
            if type(b) is not VarBinding and isinstance(b, MatchCast):
                prims.extend(sinfo_prim_fields(b.struct_info))
        for p in self.func.params:
            prims.extend(sinfo_prim_fields(p._struct_info))
        for e in prims:
            if not isinstance(e, IntImm | T.Var) and _tir_vars(e):
                self.composites.setdefault(self.key(e), e)

    @staticmethod
    def plain_args(args, static_shape) -> bool:
        """Whether no argument can hold a non-constant PrimExpr (variables, constant shapes
        and prim values, immediates): the arguments lower_operand keeps as they are and
        scan_composites finds nothing in, told without a walk or a call per argument."""
        for a in args:
            t = type(a)
            if t in _AS_IS:
                continue
            if t is ShapeExpr:
                if static_shape(a):
                    continue
                return False
            if t is PrimValue:
                if type(a.value) is IntImm:
                    continue
                return False
            if t in _SCANNED:
                return False
        return True

    def compute_ready(self, out: list) -> None:
        """Emit a shape_func computing every composite whose variables are all known now."""
        ready = [(k, e) for k, e in self.composites.items()
                 if k not in self.bound and all(self.key(v) in self.bound for v in _tir_vars(e))]
        if not ready:
            return
        H = decl_buffer((IntImm("int64", 0),), "int64", "H")  # sized in add_shape_funcs
        stores = []
        for k, e in ready:
            vmap = {v: self._load(H, v) for v in _tir_vars(e)}
            value = substitute(e, vmap)
            if value.dtype != "int64":
                value = T.Cast("int64", value)
            stores.append((self.slot_of(e), value))
            self.bound.add(k)
        self.pending_funcs.append((H, stores))
        gv = GlobalVar("shape_func")
        self.func_gvs.append(gv)
        call = Call(gv, [self.heap])
        call._checked_type = _VOID
        out.append(VarBinding(Var(self.namer.fresh("_"), _VOID), call))

    def _load(self, H, v):
        ld = T.BufferLoad(H, [IntImm("int64", self.slot_of(v))])
        return ld if v.dtype == "int64" else T.Cast(v.dtype, ld)

    # ------------------------------------------------------------------ checks
    def check_value(self, value, sinfo: StructInfo, ctx: str, out: list, deferred: list) -> None:
        """Checks of ``value`` against ``sinfo``; dims needing composites go to ``deferred``."""
        work = [(value, sinfo)]
        while work:
            val, s = work.pop(0)
            err = StringImm(ctx)
            if isinstance(s, TensorStructInfo):
                out.append(self._void(_packed("vm.builtin.check_tensor_info", [
                    val, _pv(s.ndim), DataTypeImm(s.dtype), err])))
                if isinstance(s.shape, ShapeExpr):
                    self.match(val, s.shape.values, ctx, out, deferred)
            elif isinstance(s, ShapeStructInfo):
                out.append(self._void(_packed("vm.builtin.check_shape_info", [
                    val, _pv(s.ndim), err])))
                if s.values is not None:
                    self.match(val, s.values, ctx, out, deferred)
            elif isinstance(s, PrimStructInfo):
                out.append(self._void(_packed("vm.builtin.check_prim_value_info", [
                    val, DataTypeImm(s.dtype), err])))
                if s.value is not None and not isinstance(s.value, IntImm) and \
                        s.dtype.startswith(("int", "uint")):
                    self.match(val, [s.value], ctx, out, deferred, prim=True)
            elif isinstance(s, TupleStructInfo):
                out.append(self._void(_packed("vm.builtin.check_tuple_info", [
                    val, _pv(len(s.fields)), err])))
                for k, f in enumerate(s.fields):
                    if isinstance(f, TensorStructInfo | ShapeStructInfo | PrimStructInfo |
                                  TupleStructInfo):
                        item = normalized(TupleGetItem(val, k), self.mod)
                        iv = Var(self.namer.fresh("lv"), item.struct_info)
                        out.append(VarBinding(iv, item))
                        work.append((iv, f))

    def match(self, val, dims, ctx, out, deferred, prim: bool = False) -> None:
        args, later = [], False
        for d in dims:
            if isinstance(d, IntImm):
                args += [MatchShapeCode.ASSERT_EQUAL_TO_IMM, d.value]
            elif isinstance(d, T.Var):
                k = self.key(d)
                if k in self.bound:
                    args += [MatchShapeCode.ASSERT_EQUAL_TO_LOAD, self.slot_of(d)]
                else:
                    args += [MatchShapeCode.STORE_TO_HEAP, self.slot_of(d)]
                    self.bound.add(k)
            else:
                args += [MatchShapeCode.NO_OP, 0]
                later = True
        name = "vm.builtin.match_prim_value" if prim else "vm.builtin.match_shape"
        head = [val, self.heap] if prim else [val, self.heap, _pv(len(dims))]
        if any(a != MatchShapeCode.NO_OP for a in args[::2]):
            self.heap_used = True
            out.append(self._void(_packed(name, head + [_pv(a) for a in args] +
                                          [StringImm(ctx)])))
        if later:
            deferred.append((val, dims, ctx, prim))

    def finish_deferred(self, deferred, out) -> None:
        for val, dims, ctx, prim in deferred:
            args = []
            for d in dims:
                if isinstance(d, IntImm | T.Var):
                    args += [MatchShapeCode.NO_OP, 0]
                    continue
                if self.key(d) not in self.bound:
                    missing = [v.name for v in _tir_vars(d) if self.key(v) not in self.bound]
                    raise ValueError(f"VMShapeLower: {ctx}: the dimension {d} uses symbolic "
                                     f"variable(s) {', '.join(missing)} that no parameter or "
                                     "match_cast defines")
                args += [MatchShapeCode.ASSERT_EQUAL_TO_LOAD, self.slot_of(d)]
            name = "vm.builtin.match_prim_value" if prim else "vm.builtin.match_shape"
            head = [val, self.heap] if prim else [val, self.heap, _pv(len(dims))]
            self.heap_used = True
            out.append(self._void(_packed(name, head + [_pv(a) for a in args] +
                                          [StringImm(ctx)])))

    def _void(self, call) -> VarBinding:
        return VarBinding(Var(self.namer.fresh("_"), _VOID), call)

    # ------------------------------------------------------------------ values
    def static_shape(self, e: ShapeExpr) -> bool:
        """Whether every dimension of ``e`` is a constant (remembered per node: one shape node
        is often shared by 100,000 allocations and struct infos)."""
        known = self.static_shapes.get(id(e))
        if known is None:
            known = all(isinstance(d, IntImm) for d in e.values)
            self.static_shapes[id(e)] = known
            self.keep.append(e)  # (alive while its id is a key)
        return known

    def lower_operand(self, e, out: list):
        """A leaf operand with symbolic shapes / prim values replaced by heap reads."""
        if type(e) is ShapeExpr and self.static_shape(e):
            return e
        if isinstance(e, ShapeExpr) and not all(isinstance(d, IntImm) for d in e.values):
            args = []
            for d in e.values:
                if isinstance(d, IntImm):
                    args += [MakeShapeCode.USE_IMM, d.value]
                else:
                    args += [MakeShapeCode.LOAD_SHAPE, self.need(d)]
            c = _packed("vm.builtin.make_shape", [self.heap, _pv(len(e.values))] +
                        [_pv(a) for a in args], ShapeStructInfo(e.values))
            v = Var(self.namer.fresh("lv"), c._checked_type)
            out.append(VarBinding(v, c))
            return v
        if isinstance(e, PrimValue) and not isinstance(e.value, IntImm | T.FloatImm):
            c = _packed("vm.builtin.make_prim_value",
                        [self.heap, _pv(MakeShapeCode.LOAD_SHAPE), _pv(self.need(e.value))],
                        PrimStructInfo(e.value.dtype, e.value))
            v = Var(self.namer.fresh("lv"), c._checked_type)
            out.append(VarBinding(v, c))
            return v
        if isinstance(e, Tuple):
            fields = [self.lower_operand(f, out) for f in e.fields]
            if any(a is not b for a, b in zip(fields, e.fields, strict=True)):
                t = Tuple(fields, e.span)
                t._checked_type = e._checked_type
                return t
        return e

    def need(self, d) -> int:
        k = self.key(d)
        if k not in self.bound:
            names = ", ".join(v.name for v in _tir_vars(d) if self.key(v) not in self.bound)
            raise ValueError(f"VMShapeLower: in {self.fname}, the shape value {d} needs "
                             f"symbolic variable(s) {names or d} before any parameter or "
                             "match_cast defines them")
        return self.slot_of(d)

    def lower_value(self, v, out: list):
        if type(v) in _AS_IS or id(v) in self.plain_calls:
            return v  # (a call scan_composites found nothing to lower in, a variable)
        if isinstance(v, Call):
            old = v.args
            # a variable, a constant or a constant shape is its own lowering (most operands of
            # a static graph)
            if self.plain_args(old, self.static_shape):
                return v
            args = [a if type(a) in _AS_IS else self.lower_operand(a, out) for a in old]
            if all(a is b for a, b in zip(args, old, strict=True)):
                return v
            c = Call(v.op, args, v.attrs, v.sinfo_args, v.span)
            c._checked_type = v._checked_type
            return c
        return self.lower_operand(v, out)

    # ------------------------------------------------------------------ driver
    def run(self) -> Function:
        self.pending_funcs: list = []
        self.func_gvs: list = []
        self.scan_composites()
        out: list = []
        deferred: list = []
        for k, p in enumerate(self.func.params):
            ctx = (f"ErrorContext(fn={self.fname}, loc=param[{k}], param={p.name_hint}, "
                   f"annotation={p._struct_info})")
            self.check_value(p, p._struct_info, ctx, out, deferred)
        self.compute_ready(out)
        self.finish_deferred(deferred, out)
        body = self.lower_seq(self.func.body, out)
        uses_heap = self.heap_used or bool(self.slot)
        blocks = []
        if uses_heap:
            alloc = vm_op.call_builtin_with_ctx("vm.builtin.alloc_shape_heap",
                                                Tuple([_pv(len(self.slot))]),
                                                self.heap._struct_info)
            alloc._checked_type = self.heap._struct_info
            out.insert(0, VarBinding(self.heap, alloc))
        # the checks go before the body; like TVM's normalizer, an empty block is dropped and
        # the checks join the body's first block when it is a plain binding block (adjacent
        # blocks of one kind are one block: what the TVMScript of the result parses back to)
        rest = list(body.blocks)
        if rest and type(rest[0]) is BindingBlock:
            first = rest.pop(0)
            out = out + list(first.bindings)
        if out:
            blocks.append(BindingBlock(out))
        seq = SeqExpr(blocks + rest, body.body, body.span)
        seq._checked_type = body._checked_type
        self.add_shape_funcs()
        return Function(self.func.params, seq, self.func.ret_struct_info, False,
                        self.func.attrs, self.func.span)

    def add_shape_funcs(self) -> None:
        k = len(self.slot)
        for gv_tmp, (H0, stores) in zip(self.func_gvs, self.pending_funcs, strict=True):
            H = decl_buffer((IntImm("int64", k),), "int64", "H")
            body = []
            for slot, value in stores:
                value = _rebuffer(value, H0, H)
                body.append(BufferStore(H, value, [IntImm("int64", slot)]))
            f = PrimFunc([H], stmt_seq(*body), attrs={"tir.is_host_func": 1})
            name = _fresh_global(self.out_mod, "shape_func")
            gv_tmp.name_hint = name
            self.out_mod[gv_tmp] = f

    def lower_seq(self, seq: SeqExpr, prologue: list) -> SeqExpr:
        """Rewrite a sequence (nested If branches through an explicit stack)."""
        # frames: [seq, bindings_out, block_index, binding_index, saved_bound, pending_if]
        root = {"seq": seq, "out": [], "bi": 0, "ki": 0, "pending": None}
        stack = [root]
        result = None
        while stack:
            fr = stack[-1]
            s = fr["seq"]
            if fr["pending"] is not None:  # a branch came back
                b, done = fr["pending"]
                if len(done) < 2:
                    br = b.value.true_branch if not done else b.value.false_branch
                    saved = set(self.bound)
                    fr["saved"] = saved
                    stack.append({"seq": br, "out": [], "bi": 0, "ki": 0, "pending": None})
                    continue
                nv = If(self.lower_operand(b.value.cond, fr["out"]), done[0], done[1],
                        b.value.span)
                nv._checked_type = b.value._checked_type
                fr["out"].append(VarBinding(b.var, nv, b.span))
                fr["pending"] = None
                fr["ki"] += 1
                continue
            blocks = s.blocks
            if fr["bi"] >= len(blocks):
                body = self.lower_operand(s.body, fr["out"])
                new = SeqExpr([BindingBlock(fr["out"])] if fr["out"] else [], body, s.span)
                new._checked_type = s._checked_type
                stack.pop()
                if stack:
                    parent = stack[-1]
                    self.bound = parent.pop("saved", self.bound)
                    parent["pending"][1].append(new)
                else:
                    result = new
                continue
            bindings = blocks[fr["bi"]].bindings
            if fr["ki"] >= len(bindings):
                fr["bi"] += 1
                fr["ki"] = 0
                continue
            b = bindings[fr["ki"]]
            out = fr["out"]
            if isinstance(b, MatchCast):
                value = self.lower_operand(b.value, out)
                deferred: list = []
                ctx = (f"ErrorContext(fn={self.fname}, loc=match_cast, var={b.var.name_hint}, "
                       f"annotation={b.struct_info})")
                self.check_value(value, b.struct_info, ctx, out, deferred)
                self.compute_ready(out)
                self.finish_deferred(deferred, out)
                out.append(VarBinding(b.var, value, b.span))
                fr["ki"] += 1
            elif isinstance(b.value, If):
                fr["pending"] = (b, [])
            else:
                # the run of plain bindings up to the next MatchCast / If in one loop (not a
                # trip through the frame per binding: a fifth of the pass on a 100k graph)
                ki, n = fr["ki"], len(bindings)
                lower_value, bind_from_result = self.lower_value, self.bind_from_result
                quiet, plain = self.quiet_sinfo, self.plain_calls
                while ki < n:
                    b = bindings[ki]
                    v = b.value
                    if type(b) is MatchCast or isinstance(v, If):
                        break
                    # (a call scan_composites found plain, a variable: kept as it is)
                    value = v if id(v) in plain or type(v) in _AS_IS else lower_value(v, out)
                    # an unchanged value keeps its binding: a 100,000-call static graph
                    # rebuilt every binding for nothing
                    out.append(b if value is v else VarBinding(b.var, value, b.span))
                    ki += 1
                    if type(v) is Call:
                        # (whether the result's struct info can name a variable, once per
                        # struct-info object: the lowering passes share one among many calls)
                        si = b.var._checked_type
                        hit = quiet.get(id(si))
                        if hit is None or hit[0] is not si:
                            hit = quiet[id(si)] = (si, self.names_no_variable(si))
                        if not hit[1]:
                            bind_from_result(b, out)
                fr["ki"] = ki
        return result

    def names_no_variable(self, sinfo) -> bool:
        """Whether a call result of struct info ``sinfo`` has nothing to check or bind: a
        tensor of static or unknown shape, an opaque object, an empty tuple."""
        t = type(sinfo)
        if t is TensorStructInfo and (type(sinfo.shape) is not ShapeExpr or
                                      self.static_shape(sinfo.shape)):
            return True
        return t is ObjectStructInfo or (t is TupleStructInfo and not sinfo.fields)

    def bind_from_result(self, b, out: list) -> None:
        """A call whose result struct info names symbolic variables not known yet (a packed
        function returning a data-dependent shape): check the result and bind them."""
        if not isinstance(b.value, Call):
            return
        sinfo = b.var._struct_info
        t = type(sinfo)
        if t is TensorStructInfo and (type(sinfo.shape) is not ShapeExpr or
                                      self.static_shape(sinfo.shape)):
            return  # a static (or unknown) shape names no variable: nothing to bind
        if t is ObjectStructInfo or (t is TupleStructInfo and not sinfo.fields):
            return  # (a kernel call's empty tuple: no value to check)
        fresh = [v for e in sinfo_prim_fields(sinfo) if not isinstance(e, IntImm)
                 for v in _tir_vars(e) if self.key(v) not in self.bound]
        if not fresh:
            return
        deferred: list = []
        ctx = (f"ErrorContext(fn={self.fname}, loc=call result, var={b.var.name_hint}, "
               f"annotation={b.var._struct_info})")
        self.check_value(b.var, b.var._struct_info, ctx, out, deferred)
        self.compute_ready(out)
        self.finish_deferred(deferred, out)


def _rebuffer(e, old, new):
    """``e`` with loads of buffer ``old`` reading ``new``."""
    from ...tir.stmt_functor import transform_expr

    def fpost(n):
        if isinstance(n, T.BufferLoad) and n.buffer is old:
            return T.BufferLoad(new, n.indices)
        return None

    return transform_expr(e, fpost)


def _fresh_global(mod, hint: str) -> str:
    names = {gv.name_hint for gv in mod.functions}
    if hint not in names:
        return hint
    k = 1
    while f"{hint}{k}" in names:
        k += 1
    return f"{hint}{k}"


def vm_shape_lower(func: Function, fname: str, mod, out_mod) -> Function:
    """``func`` with shape checks and heap-based symbolic shapes; shape_funcs go to out_mod."""
    return _Lowerer(func, fname, mod, out_mod).run()


@register("VMShapeLower")
def VMShapeLower(*, emit_err_ctx: bool = True):  # noqa: N802 - TVM's name
    """Module pass (opt 0): shape checks at entry and after match_cast; heap-based shapes."""

    @gc_paused
    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        out = mod.shallow_copy()
        n = 0
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function) and not (func.attrs and
                                                   func.attrs.get("Primitive")):
                out.update_func(gv, vm_shape_lower(func, gv.name_hint, mod, out))
                n += 1
        if n:
            record_stat("functions lowered", n)
        return out

    return module_pass(run, opt_level=0, name="VMShapeLower")
