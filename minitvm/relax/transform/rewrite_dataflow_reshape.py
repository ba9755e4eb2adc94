"""RewriteDataflowReshape (TVM's ``relax.transform.RewriteDataflowReshape``): inside dataflow
blocks, a ``R.call_tir`` of a PrimFunc that only reshapes (each output element is the input
element at the same row-major position, same dtype and size) becomes ``R.reshape(x, shape)``,
which the VM runs as a view without copying (``vm.builtin.reshape``).

The reshape pattern is proved on the single block's store and load positions, flattened
row-major over their buffers' shapes: first as polynomials over variables and floor-division
atoms (``minitvm.schedule.flat_index``, exact with no bounds, which takes the ``// n`` and
``% n`` of a reshape under a symbolic batch), else by the Analyzer simplifying their
difference to zero."""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.gc_pause import gc_paused
from ...ir.op import Op
from ...ir.prim_expr import IntImm
from ...tir import expr as T
from ...tir import stmt as S
from ...tir.function import PrimFunc
from ...tir.stmt_functor import walk_stmts
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import (
    Call,
    DataflowBlock,
    Function,
    SeqExpr,
    ShapeExpr,
    Tuple,
    VarBinding,
)
from ..op.manipulate import reshape
from ..struct_info import TensorStructInfo
from .lower_utils import normalized, simplify
from .utils import has_relax_function, register

__all__ = ["RewriteDataflowReshape", "is_reshape_prim_func"]


def _as_int64(e, memo: dict):
    """``e`` with int32 variables and constants made int64 and integer casts dropped, so that
    index expressions mixing both widths simplify as one."""
    from ...tir.stmt_functor import transform_expr

    def fpost(n):
        if isinstance(n, T.Var) and n.dtype == "int32":
            return memo.setdefault(id(n), T.Var(n.name, "int64"))
        if isinstance(n, IntImm) and n.dtype == "int32":
            return IntImm("int64", n.value)
        if isinstance(n, T.Cast) and n.dtype.startswith("int") and \
                n.value.dtype.startswith("int"):
            return n.value
        if isinstance(n, T.BinaryOp) and n.dtype == "int32":
            return type(n)(n.a, n.b)  # the dtype follows the (now int64) operands
        return None

    return transform_expr(e, fpost)


def _flat(shape, indices, memo: dict):
    pos = IntImm("int64", 0)
    for d, i in zip(shape, indices, strict=True):
        pos = pos * _as_int64(d, memo) + _as_int64(i, memo)
    return pos


def is_reshape_prim_func(func: PrimFunc) -> bool:
    """Whether ``func`` copies its one input to its one output in row-major order (any further
    parameters are scalars, the shape variables a call passes as ``tir_vars``)."""
    bufs = [func.buffer_map[p] for p in func.params if p in func.buffer_map]
    # the input and output buffers, then any scalar shape parameters (``tir_vars``)
    if len(bufs) != 2 or any(p not in func.buffer_map for p in func.params[:2]):
        return False
    src, dst = bufs
    if src.dtype != dst.dtype:
        return False
    blocks = [s for s in walk_stmts(func.body) if isinstance(s, S.Block)]
    inner = [b for b in blocks if b.iter_vars]
    if len(inner) != 1 or inner[0].init is not None or any(b.alloc_buffers for b in blocks):
        return False
    if any(isinstance(s, S.BlockRealize) and not (
            isinstance(s.predicate, IntImm) and s.predicate.value == 1)
            for s in walk_stmts(func.body)):
        return False  # a guarded store may leave part of the output unwritten
    store = inner[0].body
    if not isinstance(store, S.BufferStore) or store.buffer is not dst or \
            not isinstance(store.value, T.BufferLoad) or store.value.buffer is not src:
        return False
    if _same_flat_offset(src, dst, store):
        return True
    memo: dict = {}
    try:
        size_diff = simplify(_prod(src.shape, memo) - _prod(dst.shape, memo))
        diff = simplify(simplify(_flat(dst.shape, store.indices, memo)) -
                        simplify(_flat(src.shape, store.value.indices, memo)))
    except Exception:  # an expression the analyzer cannot take: not provably a reshape
        return False
    return _is_zero(diff) and _is_zero(size_diff)


def _same_flat_offset(src, dst, store) -> bool:
    """Whether the load and the store reach the same row-major offset of buffers of the same
    size, as polynomials over variables and floor-division atoms (``flat_index``): exact for
    any values of the variables, so it proves the ``// n`` and ``% n`` of a reshape under a
    symbolic batch, which the analyzer cannot drop without bounds."""
    from ...schedule.flat_index import Canon, flat_offset

    if src.strides or dst.strides:
        return False
    canon = Canon()
    stored = flat_offset(canon, dst, store.indices)
    loaded = flat_offset(canon, src, store.value.indices)
    if stored is None or loaded is None or stored != loaded:
        return False
    return canon.of(_shape_product(src.shape)) == canon.of(_shape_product(dst.shape))


def _shape_product(shape):
    p = IntImm("int64", 1)
    for d in shape:
        p = T.Mul(p, d) if d.dtype == "int64" else T.Mul(p, T.Cast("int64", d))
    return p


def _prod(shape, memo: dict):
    p = IntImm("int64", 1)
    for d in shape:
        p = p * _as_int64(d, memo)
    return p


def _is_zero(e) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _rewrite_func(func: Function, mod, memo: dict) -> tuple[Function, int]:
    if not isinstance(func.body, SeqExpr):
        return func, 0
    count = 0
    blocks = []
    for block in func.body.blocks:
        if not isinstance(block, DataflowBlock):
            blocks.append(block)
            continue
        out = []
        for b in block.bindings:
            v = b.value
            if isinstance(b, VarBinding) and isinstance(v, Call) and isinstance(v.op, Op) and \
                    v.op.name == "relax.call_tir" and len(v.args) in (2, 3) and \
                    isinstance(v.args[0], GlobalVar) and isinstance(v.args[1], Tuple) and \
                    len(v.args[1].fields) == 1:
                gv = v.args[0]
                if gv not in memo:
                    f = mod.functions.get(gv) if gv in mod.functions else None
                    memo[gv] = isinstance(f, PrimFunc) and is_reshape_prim_func(f)
                out_s = v.sinfo_args[0]
                if memo[gv] and isinstance(out_s, TensorStructInfo) and \
                        isinstance(out_s.shape, ShapeExpr):
                    new = normalized(reshape(v.args[1].fields[0], ShapeExpr(out_s.shape.values)),
                                     mod)
                    out.append(VarBinding(b.var, new, b.span))
                    count += 1
                    continue
            out.append(b)
        blocks.append(DataflowBlock(out, block.span) if count else block)
    if not count:
        return func, 0
    seq = SeqExpr(blocks, func.body.body, func.body.span)
    seq._checked_type = func.body._checked_type
    return Function(func.params, seq, func.ret_struct_info, func.is_pure, func.attrs,
                    func.span), count


@register("RewriteDataflowReshape")
def RewriteDataflowReshape():  # noqa: N802 - TVM's name
    """Module pass (opt 0): reshape-only call_tir in dataflow blocks -> R.reshape."""

    @gc_paused
    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        out = mod.shallow_copy()
        memo: dict = {}
        total = 0
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function):
                new, n = _rewrite_func(func, mod, memo)
                if n:
                    out.update_func(gv, new)
                    total += n
        if total:
            record_stat("reshapes rewritten", total)
        return out

    return module_pass(run, opt_level=0, name="RewriteDataflowReshape")

