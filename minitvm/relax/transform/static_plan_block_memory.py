"""StaticPlanBlockMemory (TVM's ``relax.transform.StaticPlanBlockMemory``): tensors from
``R.builtin.alloc_tensor`` share storage when their lives do not overlap.

Within the top-level binding sequence of each function, every allocation gets a storage token;
a token is released after the last use of every variable that may alias its tensor (plain
copies, tuples, tuple items, reshape views) and is then reused by a later allocation of the same
dtype — any size when the sizes are constants (the token grows to the largest). A symbolic size
is first bounded by the function's ``tir_var_upper_bound`` attribute when it has one (TVM's
rule); otherwise sizes ``k1 * M`` and ``k2 * M`` that are constant multiples of one product
``M`` of shape variables (``M >= 0``, e.g. ``602112 * batch`` and ``150528 * batch``) share a
storage sized ``max(k1, k2) * M``, computed by the VM at run time; any other symbolic size only
reuses a provably equal one. Tensors reaching the function's result, or handed to a call that
may keep them (a Relax function, a closure), are left as they are. The result:

    storage = R.memory.alloc_storage(R.shape([bytes]), R.prim_value(0), R.str("global"),
                                     R.dtype("float32"))
    alloc = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([n, 128]),
                                  R.dtype("float32"))
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.gc_pause import gc_paused
from ...ir.op import Op
from ...ir.prim_expr import IntImm
from ...tir.function import PrimFunc
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..analysis.leaf_reads import leaf_reads
from ..expr import (
    Call,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..op import memory
from ..struct_info import TupleStructInfo
from .lower_utils import (
    AllocSinfo,
    Leaves,
    Namer,
    dtype_bytes,
    normalized,
    rewrite_function_seqs,
    simplify,
    vars_used,
)
from .utils import has_relax_function, register, substitute_prim

__all__ = ["StaticPlanBlockMemory", "plan_memory"]

_VIEW_PACKED = frozenset({"vm.builtin.reshape"})


class _Token:
    __slots__ = ("dtype", "size", "static", "scale", "var", "first", "users")

    def __init__(self, dtype, size, static, scale=None):
        self.dtype, self.size, self.static = dtype, size, static
        self.scale = scale  # (k, M's key) when the size is k * M (symbolic), else None
        self.var = None
        self.first = None  # binding index of the first allocation using it
        self.users = 0


def _is_op(v, name: str) -> bool:
    return isinstance(v, Call) and isinstance(v.op, Op) and v.op.name == name


def _nbytes(shape_values, dtype: str, bounds: dict):
    if all(isinstance(d, IntImm) for d in shape_values):  # a static shape: plain arithmetic
        n = dtype_bytes(dtype)
        for d in shape_values:
            n *= d.value
        return IntImm("int64", n), True
    size = IntImm("int64", dtype_bytes(dtype))
    for d in shape_values:
        size = size * d
    size = simplify(size)
    if not isinstance(size, IntImm) and bounds:
        bounded = simplify(substitute_prim(size, bounds.get))
        if isinstance(bounded, IntImm):
            return bounded, True
    return size, isinstance(size, IntImm)


def _scaled(size, canon):
    """``(k, key)`` when symbolic ``size`` is a positive constant ``k`` times a product of
    variables (``key`` names that product), else None. ``M >= 0`` then, as ``k * M`` is an
    allocation's size, so ``max(k1, k2) * M`` holds either of two such sizes."""
    poly = canon.of(size)
    if len(poly) != 1:
        return None
    (mono, k), = poly.items()
    if k <= 0 or not mono or any(canon.atoms[a][0] != "var" for a in mono):
        return None
    return k, mono


def _upper_bounds(func: Function) -> dict:
    attrs = func.attrs
    ub = attrs.get("tir_var_upper_bound") if attrs else None
    if not ub:
        return {}
    from .utils import used_symbolic_vars

    by_name = {str(k): int(getattr(v, "value", v)) for k, v in dict(ub.items() if hasattr(
        ub, "items") else ub).items()}
    return {v: IntImm(v.dtype, by_name[v.name]) for v in used_symbolic_vars(func)
            if v.name in by_name}


def plan_memory(func: Function, mod=None) -> tuple[Function, int, int]:
    """``func`` with storage reuse planned; and (allocations planned, storages created)."""
    from ...schedule.flat_index import Canon

    bounds = _upper_bounds(func)
    canon = Canon()  # one numbering of the variables for the whole function
    namer = Namer(func)
    leaves = Leaves()
    allocs_sinfo = AllocSinfo(mod)
    view_op = Op.get("relax.memory.alloc_tensor")
    sizes: dict = {}      # (id(shape node), dtype) -> (node, size, static, scale)
    kernel_gvs: dict = {}  # a callee GlobalVar -> whether it is a PrimFunc (a DPS kernel)
    stats = [0, 0]

    def size_of(shape, dtype):
        """``_nbytes`` / ``_scaled`` of an allocation, once per shape node and dtype (a
        chain's 100,000 allocations share one output shape node)."""
        hit = sizes.get((id(shape), dtype))
        if hit is not None and hit[0] is shape:
            return hit[1:]
        size, static = _nbytes(shape.values, dtype, bounds)
        scale = None if static else _scaled(size, canon)
        sizes[(id(shape), dtype)] = (shape, size, static, scale)
        return size, static, scale

    def is_kernel_call(v):
        op = v.op
        if isinstance(op, GlobalVar):
            known = kernel_gvs.get(op)
            if known is None:
                known = kernel_gvs[op] = _is_dps_kernel_call(v, mod)
            return known
        return _is_dps_kernel_call(v, mod)

    def rewrite(bindings, body, top):
        if not top:
            return bindings, body
        alloc_at: dict[int, tuple] = {}  # binding index -> (ShapeExpr, dtype)
        alias: dict[Var, set] = {}       # var -> allocation indices it may hold
        pinned: set[int] = set()         # allocations that must keep their own memory
        last_use: dict[int, int] = {}
        for i, b in enumerate(bindings):
            v = b.value
            # (the callee's kind looked up once per binding, not once per test below)
            is_call = isinstance(v, Call)
            op = v.op if is_call else None
            op_name = op.name if is_call and isinstance(op, Op) else None
            if op_name == "relax.builtin.alloc_tensor" and isinstance(b, VarBinding) and \
                    isinstance(v.args[0], ShapeExpr) and isinstance(v.args[1], DataTypeImm):
                alloc_at[i] = (v.args[0], v.args[1].value)
                alias[b.var] = {i}
                last_use[i] = i
                continue
            held = None
            reads = leaf_reads(v)  # (a call of leaves, most bindings: no walk)
            for u in vars_used(v) if reads is None else reads:
                found = alias.get(u)
                if found:
                    if held is None:
                        held = set()
                    for a in found:
                        last_use[a] = i
                        held.add(a)
            if not held:
                continue
            if isinstance(v, Var | Tuple | TupleGetItem) or op_name == "relax.reshape" or (
                    is_call and isinstance(op, ExternFunc) and
                    op.global_symbol in _VIEW_PACKED):
                alias[b.var] = held  # the result is (part of) the same memory
            elif isinstance(v, If) or (is_call and not is_kernel_call(v)):
                pinned |= held  # it may keep or return the tensor
                alias[b.var] = held
        for u in vars_used(body):
            pinned |= alias.get(u, set())
        # assign storage tokens in program order
        free: list[_Token] = []
        token_of: dict[int, _Token] = {}
        releases: dict[int, list[int]] = {}
        for a, last in last_use.items():
            releases.setdefault(last, []).append(a)
        # (only the indices where something happens, in program order)
        for i in sorted(alloc_at.keys() | releases.keys()):
            if i in alloc_at and i not in pinned:
                shape, dtype = alloc_at[i]
                size, static, scale = size_of(shape, dtype)
                tok = _take(free, dtype, size, static, scale)
                if tok is None:
                    tok = _Token(dtype, size, static, scale)
                    tok.first = i
                    stats[1] += 1
                tok.users += 1
                token_of[i] = tok
                stats[0] += 1
            for a in releases.get(i, ()):
                if a in token_of:
                    free.append(token_of[a])
        if not token_of:
            return bindings, body
        out = []
        for i, b in enumerate(bindings):
            tok = token_of.get(i)
            if tok is None:
                out.append(b)
                continue
            if tok.first == i:
                size = tok.size
                s = normalized(memory.alloc_storage(ShapeExpr([size]), 0, "global", tok.dtype),
                               mod)
                tok.var = Var(namer.fresh("storage"), s.struct_info)
                out.append(VarBinding(tok.var, s))
            shape, dtype = alloc_at[i]
            # the allocation's own shape node: an IR node may be shared, and a copy of it (a
            # tuple of its dimensions, their struct info) was a sixth of the pass
            t = allocs_sinfo.call(view_op, (tok.var, leaves.prim(0), shape,
                                            leaves.dtype(dtype)), shape, dtype)
            out.append(VarBinding(b.var, t, b.span))
        return out, body

    new = rewrite_function_seqs(func, rewrite)
    return (new if stats[0] else func), stats[0], stats[1]


def _is_dps_kernel_call(v: Call, mod) -> bool:
    """A call that only reads its inputs and writes its outputs: a PrimFunc, a packed function
    returning nothing, or a Relax op."""
    if isinstance(v.op, Op):
        return v.op.name not in ("relax.make_closure", "relax.invoke_closure",
                                 "relax.invoke_pure_closure", "relax.call_builtin_with_ctx")
    if isinstance(v.op, GlobalVar):
        f = mod.functions.get(v.op) if mod is not None and v.op in mod.functions else None
        return isinstance(f, PrimFunc)
    if isinstance(v.op, ExternFunc):
        s = v._checked_type
        return isinstance(s, TupleStructInfo) and not s.fields
    return False


def _take(free: list, dtype: str, size, static: bool, scale=None):
    """The free token to reuse for an allocation (removed from ``free``), or None. Constant
    sizes, and symbolic ``k * M`` sizes of the same ``M``, take the smallest token that fits,
    else the largest one, grown; other symbolic sizes only a token of a provably equal size."""
    def amount(tok):
        if static:
            return tok.size.value if tok.static else None
        if scale is not None and tok.scale is not None and tok.scale[1] == scale[1]:
            return tok.scale[0]
        return None

    # Of equally good tokens the first freed wins. Measured against other choices (one thread,
    # thread CPU time, 9 interleaved rounds, outputs bit-identical, same storage bytes):
    # the most recently freed token that fits (LIFO, as a cache-hot choice), best fit with
    # ties to the most recently freed, and LIFO within 2x of the size won nothing beyond
    # noise on UNet / ResNet-18 at batch 1 and 4 (0.96-1.03x), and all made MobileNetV3-small
    # at batch 4 5-6% slower (5.06 -> 5.32 ms). UNet's plan reuses memory step for step as
    # relay.build's graph plan does (the same bytes touched between a buffer's uses at every
    # step), so the order of reuse is not what makes some of its steps slower than Relay's
    # in some processes (steps summed: 19.20 vs 19.02 ms in one, 20.94 vs 19.59 in another,
    # its 3x3 convs after the concatenations +0.28 / +0.32 ms there): addresses differ, the
    # order of reuse does not.
    need = size.value if static else (scale[0] if scale is not None else None)
    best = best_amount = None
    for k, tok in enumerate(free):
        if tok.dtype != dtype or tok.static != static:
            continue
        if need is None:
            d = simplify(tok.size - size)
            if isinstance(d, IntImm) and d.value == 0:
                best = k
                break
            continue
        a = amount(tok)
        if a is None:
            continue
        # prefer the smallest token that fits, else the largest one (grown)
        if best is None or (best_amount >= need and need <= a < best_amount) or (
                best_amount < need and a > best_amount):
            best, best_amount = k, a
    if best is None:
        return None
    tok = free.pop(best)
    if need is not None and best_amount < need:
        tok.size, tok.scale = size, scale  # the larger multiple: max(k1, k2) * M
    return tok


@register("StaticPlanBlockMemory")
def StaticPlanBlockMemory():  # noqa: N802 - TVM's name
    """Module pass (opt 0): storage reuse between allocations whose lives do not overlap."""

    @gc_paused
    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        out = mod.shallow_copy()
        planned = storages = 0
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function):
                new, p, s = plan_memory(func, mod)
                if p:
                    out.update_func(gv, new)
                    planned, storages = planned + p, storages + s
        if planned:
            record_stat("tensors planned", planned)
            record_stat("storages", storages)
        return out

    return module_pass(run, opt_level=0, name="StaticPlanBlockMemory")
