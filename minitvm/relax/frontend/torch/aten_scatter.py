"""Core-ATen scatters onto ``relax.op``: ``scatter`` / ``scatter_add`` / ``scatter_reduce`` (one
index a row, broadcast, as a ``scatter_nd`` of whole rows), ``index_reduce``, ``index_put`` /
``index_copy`` and ``masked_scatter``."""

from __future__ import annotations

import numpy as np

from ....frontend_common.index_put_plan import plan_sliced_put
from ....frontend_common.scatter_plan import broadcasts_one_index_per_row
from ... import op as _op
from ...expr import Call, Expr, const
from .context import AtenContext, register


def _in_int32(ctx: AtenContext, x, values, reduce):
    """``reduce(x, values)`` of a bool ``x`` (an accumulating scatter or put) done in int32 and
    read back as ``!= 0``: bool's add and max are or, its mul and min and (the kernels add in
    one bit otherwise: True + True was False)."""
    out = reduce(ctx.emit(_op.astype(x, "int32")), ctx.emit(_op.astype(values, "int32")))
    return ctx.emit(_op.not_equal(out, ctx.tensor(0, out)))


def _scatter_elements(ctx: AtenContext, x, index, src, axis: int, red: str):
    """A scatter along ``axis``; one along the leading axis whose index is a broadcast of one
    index per row (``scatter_add(0, idx[:, None].expand(..), h)``: a graph network's per-graph
    readout) as a ``scatter_nd`` of whole rows, which reads and bounds-checks one index per
    row and combines a contiguous row where the element form does so per element."""
    if ctx.dtype(x) == "bool" and red != "update":
        return _in_int32(ctx, x, src,
                         lambda a, b: _scatter_elements(ctx, a, index, b, axis, red))
    rows = _row_index(ctx, index, ctx.shape(x), axis)
    if rows is not None and ctx.shape(src) == ctx.shape(index):
        return ctx.emit(_op.scatter_nd(x, rows, src, red))
    return ctx.emit(_op.scatter_elements(x, index, src, axis, red))


def _row_index(ctx: AtenContext, index, shape, axis: int):
    """The ``[rows, 1]`` index tuples of a row scatter when ``index`` is bound to a
    ``broadcast_to`` of one index per row (``expand`` imports so), else None."""
    bound = ctx.bb.lookup_binding(index)
    if not isinstance(bound, Call) or getattr(bound.op, "name", None) != "relax.broadcast_to":
        return None
    source, ishape = bound.args[0], ctx.shape(index)
    if not broadcasts_one_index_per_row(ctx.shape(source), ishape, shape, axis):
        return None
    if ctx.shape(source) == [ishape[0], 1]:
        return source
    return ctx.emit(_op.reshape(source, ctx.shape_expr([ishape[0], 1])))


@register("scatter_add.default")
def _scatter_add(ctx: AtenContext, args):
    """scatter_add(self, dim, index, src): a graph network's messages summed into nodes."""
    x, dim, index, src = args[:4]
    return _scatter_elements(ctx, x, index, src, int(dim) % ctx.ndim(x), "add")


@register("scatter.src", "scatter.value", "scatter.reduce", "scatter.value_reduce")
def _scatter(ctx: AtenContext, args):
    """scatter(self, dim, index, src or value[, reduce]): ``src`` (or the number) written at
    ``index`` along ``dim`` (an MoE's routing weights into a dense gate). torch reads only
    ``src``'s leading index-shaped block, so a larger ``src`` is cut to it first."""
    x, dim, index, src = args[:4]
    axis = int(dim) % ctx.ndim(x)
    ishape = ctx.shape(index)
    if isinstance(src, Expr):
        if ctx.shape(src) != ishape:
            n = len(ishape)
            src = ctx.emit(_op.strided_slice(src, list(range(n)), [0] * n, list(ishape)))
    else:
        src = ctx.emit(_op.full(ctx.shape_expr(ishape), ctx.tensor(src, x), ctx.dtype(x)))
    reduce = args[4] if len(args) > 4 else None
    modes = {None: "update", "add": "add", "sum": "add", "multiply": "mul", "prod": "mul"}
    if reduce not in modes:
        raise ctx.fail(f"scatter with reduce={reduce!r} is not supported")
    return _scatter_elements(ctx, x, index, src, axis, modes[reduce])


# torch's scatter_reduce names -> scatter_elements' reductions and the value include_self=False
# starts each scattered position from
_SCATTER_REDUCE = {"sum": ("add", 0.0), "prod": ("mul", 1.0), "amax": ("max", -np.inf),
                   "amin": ("min", np.inf), "mean": ("add", 0.0)}


@register("scatter_reduce.two")
def _scatter_reduce(ctx: AtenContext, args):
    """scatter_reduce(self, dim, index, src, reduce, include_self=True): a graph attention's
    per-node max (amax) or mean of its incoming edges. Without ``self`` the scattered
    positions start from the reduction's identity; the mean divides by the count landed."""
    x, dim, index, src, reduce = args[:5]
    include_self = bool(args[5]) if len(args) > 5 and args[5] is not None else True
    if reduce not in _SCATTER_REDUCE:
        raise ctx.fail(f"scatter_reduce with reduce={reduce!r} is not supported")
    red, identity = _SCATTER_REDUCE[reduce]
    axis = int(dim) % ctx.ndim(x)
    ishape = ctx.shape(index)
    if ctx.shape(src) != ishape:
        n = len(ishape)
        src = ctx.emit(_op.strided_slice(src, list(range(n)), [0] * n, list(ishape)))

    def filled(value):
        dt = np.dtype(ctx.dtype(x))
        if dt.kind in "iu" and np.isinf(value):  # integers' identities of max and min
            value = int(np.iinfo(dt).min if value < 0 else np.iinfo(dt).max)
        if dt.kind == "b":  # bool's: False for amax and sum, True for amin and prod (a
            value = value > 0  # cast of -inf gave True, so amax kept every landed True)
        return ctx.emit(_op.full(ctx.shape_expr(ishape), const(np.array(value, dt)), str(dt)))

    base = x
    if not include_self:
        base = _scatter_elements(ctx, x, index, filled(identity), axis, "update")
    out = _scatter_elements(ctx, base, index, src, axis, red)
    if reduce != "mean":
        return out
    start = ctx.emit(_op.ones_like(x))
    if not include_self:
        start = _scatter_elements(ctx, start, index, filled(0.0), axis, "update")
    count = _scatter_elements(ctx, start, index, filled(1.0), axis, "add")
    count = ctx.emit(_op.maximum(count, ctx.tensor(1.0, x)))
    fn = _op.divide if ctx.dtype(x).startswith("float") else _op.floor_divide
    return ctx.emit(fn(out, count))


@register("index_reduce.default")
def _index_reduce(ctx: AtenContext, args):
    """index_reduce(self, dim, index, source, reduce, include_self=True): source's slice i
    reduced into self's slice index[i] along dim (a point cloud's max pooling into voxels):
    the 1-D index broadcast to the source's shape, then that ``scatter_reduce``."""
    x, dim, index, src, reduce = args[:5]
    include_self = args[5] if len(args) > 5 else True
    rank = ctx.ndim(x)
    if rank == 0 or ctx.ndim(index) != 1:
        raise ctx.fail("index_reduce: needs a tensor of rank >= 1 and a 1-D index")
    axis = int(dim) % rank
    sshape = ctx.shape(src)
    idx = ctx.emit(_op.reshape(index, ctx.shape_expr(
        [sshape[axis] if i == axis else 1 for i in range(rank)])))
    idx = ctx.emit(_op.broadcast_to(idx, ctx.shape_expr(list(sshape))))
    if ctx.dtype(src) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    return _scatter_reduce(ctx, [x, axis, idx, src, reduce, include_self])


@register("index_put.default")
def _index_put(ctx: AtenContext, args):
    """index_put(self, indices, values, accumulate=False): ``x[i0, i1, ...] = values`` (``+=``
    when accumulating), the index tensors on the leading axes (torch.export's form of
    ``index_add`` along axis 0 and of ``x[idx] += v``)."""
    x, indices, values = args[0], list(args[1]), args[2]
    accumulate = bool(args[3]) if len(args) > 3 and args[3] is not None else False
    if any(i is not None and ctx.dtype(i) == "bool" for i in indices):
        raise ctx.fail("index_put with a boolean mask is not supported")
    if accumulate and ctx.dtype(x) == "bool" and isinstance(values, Expr):
        return _in_int32(ctx, x, values, lambda a, b: _index_put(ctx, [a, indices, b, True]))
    if not isinstance(values, Expr):
        values = ctx.tensor(values, x)
    elif ctx.dtype(values) != ctx.dtype(x):
        values = ctx.emit(_op.astype(values, ctx.dtype(x)))
    if any(i is None for i in indices):  # x[:, :, i] = v: the put with the indexed axes first
        given = [i for i in indices if i is not None]
        shapes = [tuple(ctx.shape(i)) for i in given]
        bshape = shapes[0] if len(set(shapes)) == 1 else np.broadcast_shapes(*shapes)
        plan = plan_sliced_put(ctx.shape(x), [i is not None for i in indices], bshape)
        values = _op.permute_dims(_op.broadcast_to(values, ctx.shape_expr(plan.value_shape)),
                                  list(plan.value_perm))
        x = ctx.emit(_op.permute_dims(x, list(plan.perm)))
        put = _op.index_put(x, given, ctx.emit(values), accumulate)
        return ctx.emit(_op.permute_dims(put, list(plan.inverse)))
    return ctx.emit(_op.index_put(x, indices, values, accumulate))


@register("index_copy.default")
def _index_copy(ctx: AtenContext, args):
    """index_copy(self, dim, index, source): source's slice i written to self's slice index[i]
    along dim (Hugging Face's static KV cache writes ``cache_position`` so): the put
    ``self[:, ..., index] = source`` with ``dim`` sliced axes in front."""
    x, dim, index, src = args[:4]
    if ctx.ndim(index) != 1:
        raise ctx.fail("index_copy: the index must be 1-D")
    return _index_put(ctx, [x, [None] * (int(dim) % ctx.ndim(x)) + [index], src, False])


@register("masked_scatter.default")
def _masked_scatter(ctx: AtenContext, args):
    """``x.masked_scatter(mask, source)``: masked positions (the mask broadcast to ``x``) take
    ``source``'s leading elements in row-major order, each at the count of masked positions
    before it (an exclusive cumsum, a take, a select); static shapes."""
    x, mask, source = args[:3]
    shape = [int(d) for d in ctx.shape(x)]
    if [int(d) for d in ctx.shape(mask)] != shape:
        mask = ctx.emit(_op.broadcast_to(mask, shape))
    flat_mask = ctx.emit(_op.reshape(mask, (-1,)))
    rank = ctx.emit(_op.cumsum(ctx.emit(_op.astype(flat_mask, "int64")), 0, exclusive=True))
    src = ctx.emit(_op.reshape(source, (-1,)))
    if ctx.dtype(source) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    picked = ctx.emit(_op.take(src, rank, 0, mode="clip"))
    flat = ctx.emit(_op.where(flat_mask, picked, ctx.emit(_op.reshape(x, (-1,)))))
    return ctx.emit(_op.reshape(flat, shape))
