"""Core-ATen sorting onto ``relax.op``: ``sort`` (values and int64 indices), ``topk`` and
``kthvalue`` (the last of an ascending ``topk``)."""

from __future__ import annotations

from ....ir.prim_expr import IntImm, PrimExpr
from ... import op as _op
from ...expr import TupleGetItem, const
from .context import AtenContext, register


@register("sort.default", "sort.stable")
def _sort(ctx: AtenContext, args):
    """``torch.sort`` -> (values, int64 indices); ``sort.stable`` (self, stable, dim,
    descending) puts its keyword-only ``stable`` first. Sparsemax sorts its scores."""
    x = args[0]
    if ctx.node.target.__name__.endswith("stable"):
        dim = args[2] if len(args) > 2 and args[2] is not None else -1
        desc = bool(args[3]) if len(args) > 3 else False
    else:
        dim = args[1] if len(args) > 1 else -1
        desc = bool(args[2]) if len(args) > 2 else False
    axis = int(dim) % ctx.ndim(x)
    return (ctx.emit(_op.sort(x, axis, desc)),
            ctx.emit(_op.argsort(x, axis, desc, "int64")))


@register("topk.default")
def _topk(ctx: AtenContext, args):
    """``torch.topk``; a ``k`` known only at run time (a symbolic expression of the batch: an
    expert-choice router's capacity ``b * t * f // e``) is the first ``k`` of a sort, since
    ``relax.topk`` takes ``k`` as an integer attribute."""
    x, k, dim, largest = args[0], args[1], args[2], args[3]
    axis = int(dim) % ctx.ndim(x)
    if isinstance(k, PrimExpr) and not isinstance(k, IntImm):
        desc = bool(largest)
        head = [ctx.emit(_op.sort(x, axis, desc)), ctx.emit(_op.argsort(x, axis, desc, "int64"))]
        return tuple(ctx.emit(_op.strided_slice(t, [axis], [0], [k])) for t in head)
    tup = ctx.emit(_op.topk(x, int(k), axis, "both", bool(largest), "int64"))
    return (ctx.emit(TupleGetItem(tup, 0)), ctx.emit(TupleGetItem(tup, 1)))


@register("kthvalue.default")
def _kthvalue(ctx: AtenContext, args):
    """The ``k``-th smallest along ``dim`` and its int64 index (MaskGIT's re-masking
    threshold): the last of an ascending ``topk`` of ``k``."""
    x, k = args[0], int(args[1])
    axis = int(args[2] if len(args) > 2 else -1) % ctx.ndim(x)
    keep = bool(args[3]) if len(args) > 3 else False
    n = ctx.shape(x)[axis]
    if isinstance(n, int) and not 1 <= k <= n:
        raise ctx.fail(f"kthvalue: k = {k} is outside [1, {n}] along dim {axis}")
    tup = ctx.emit(_op.topk(x, k, axis, "both", False, "int64"))
    out = []
    for i in (0, 1):
        t = ctx.emit(_op.take(ctx.emit(TupleGetItem(tup, i)), const(k - 1, "int64"), axis))
        out.append(ctx.emit(_op.expand_dims(t, axis)) if keep else t)
    return out[0], out[1]
