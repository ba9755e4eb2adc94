"""Schedule of ``scatter_elements`` stages (tag ``scatter_elements``, ``topi.index_ops``): a
copy, then one sequential pass over the updates.

The stage's compute compares every output position with every update position (quadratic: a
graph network's ``index_add`` of 384 edge messages of 64 channels into 48 nodes is 75M
comparisons). Here the output starts as a copy of ``x`` and each update, in row-major order of
the index tensor, is combined into the position its index names (the index wrapped when
negative, clamped into the axis so that a bad index cannot write outside the buffer): the
order of a sequential scatter, so ``update`` keeps the last write and ``add`` rounds as
numpy's ``np.add.at`` does."""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..topi.index_ops import SCATTER_TAG
from .common import const_int, imm, lanes, vector_inner
from .lower import Rule, register_rule


def supported(t, options=None) -> bool:
    """Is ``t`` a scatter_elements stage with static shapes?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != SCATTER_TAG:
        return False
    return all(const_int(d) is not None for s in t.op.attrs["operands"] for d in s.shape)


def _i64(v) -> E.PrimExpr:
    if isinstance(v, int):
        return E.IntImm("int64", v)
    return v if v.dtype == "int64" else E.Cast("int64", v)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing scatter stage ``t`` into ``out``."""
    src, ind, upd = t.op.attrs["operands"]
    axis, red = t.op.attrs["axis"], t.op.attrs["reduction"]
    x, idx, u = (ctx.flat_view(ctx.buf[id(s)]) for s in (src, ind, upd))
    y = ctx.flat_view(out)
    dims = [const_int(d) for d in src.shape]
    ext = [const_int(d) for d in ind.shape]
    size, m = 1, 1
    for d in dims:
        size *= d
    for d in ext:
        m *= d
    copy = vector_inner(ctx, imm(size), lanes(t.dtype),
                        lambda j: S.BufferStore(y, E.BufferLoad(x, [j]), [j]))
    if m == 0 or size == 0:
        return copy
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    strides.reverse()
    j = ctx.fresh("j", "int64")
    # the update's coordinates in the index tensor (row-major), its target along the axis
    coords, rest = [], j
    for n in reversed(ext):
        coords.append(E.FloorMod(rest, _i64(n)))
        rest = E.FloorDiv(rest, _i64(n))
    coords.reverse()
    k = _i64(E.BufferLoad(idx, [j]))
    n_axis = _i64(dims[axis])
    k = E.Select(k < _i64(0), k + n_axis, k)
    k = E.Max(E.Min(k, n_axis - _i64(1)), _i64(0))
    off = _i64(0)
    for d, stride in enumerate(strides):
        off = off + (k if d == axis else coords[d]) * _i64(stride)
    v = E.BufferLoad(u, [j])
    old = E.BufferLoad(y, [off])
    new = {"update": lambda: v, "add": lambda: old + v, "mul": lambda: old * v,
           "min": lambda: E.Min(old, v), "max": lambda: E.Max(old, v)}[red]()
    loop = S.For(j, _i64(0), _i64(m), S.ForKind.SERIAL, S.BufferStore(y, new, [off]))
    return S.SeqStmt([copy, loop])


register_rule(SCATTER_TAG, Rule("scatter in order", "scatter", supported, emit,
                                materialize=True))
