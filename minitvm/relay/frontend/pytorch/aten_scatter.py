"""ATen scatters: ``scatter`` (a source tensor or a value, optionally reduced), ``scatter_add``,
``scatter_reduce`` (sum, prod, mean, amax, amin, with or without ``self``), ``index_add``,
``index_reduce`` and
``index_put`` (integer index tensors, or one boolean mask). They are what a mixture of experts
(``zeros.scatter(-1, topk_idx, weights)``), a graph network (``index_add`` / ``scatter_add``
messages into nodes) or ``x[idx] += v`` trace to. Each becomes Relay's ``scatter_elements`` or
``scatter_nd``; a scatter along one axis whose index is known at import (an edge list held in
a buffer) becomes a gather and a reduction instead (``frontend_common.scatter_plan``), which
lower natively in time linear in the updates.
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.index_put_plan import plan_sliced_put
from ....frontend_common.unpool_plan import plan_unpool
from ... import expr as _expr
from ... import op as _op
from ..scatter import scatter_elements as _scatter_elements_any
from ..scatter import wrap_index as _wrap
from .aten import _is_expr, _norm_dim, _scalar_like, register

# torch's reduce names -> scatter_elements' reductions (and the identity that include_self=False
# writes first)
_REDUCE = {"sum": ("add", 0.0), "add": ("add", 0.0), "prod": ("mul", 1.0),
           "multiply": ("mul", 1.0), "amax": ("max", -np.inf), "amin": ("min", np.inf),
           "mean": ("add", 0.0)}


def _bool_reduced(scatter):
    """``scatter(ctx, data, index, updates, ..., reduction)`` with a bool ``data`` reduced in
    int32 and read back as ``!= 0`` (bool's add and max are or, its mul and min and; no kernel
    reduces bools directly)."""
    def reduced(ctx, data, index, updates, *rest):
        if ctx.dtype(data) != "bool" or rest[-1] == "update":
            return scatter(ctx, data, index, updates, *rest)
        out = scatter(ctx, _op.cast(data, "int32"), index, _op.cast(updates, "int32"), *rest)
        return _op.not_equal(out, _expr.const(np.array(0, "int32"), "int32"))
    return reduced


_scatter_elements = _bool_reduced(_scatter_elements_any)
_scatter_nd = _bool_reduced(lambda ctx, *args: _op.scatter_nd(*args))


def _identity(reduce: str, dtype: str):
    """The value ``include_self=False`` writes first: the reduction's identity in ``dtype``
    (an integer's extreme for amax / amin; infinity would not convert)."""
    red, identity = _REDUCE[reduce]
    if red in ("max", "min") and not dtype.startswith(("float", "bfloat")):
        info = np.iinfo(dtype) if dtype != "bool" else None
        low, high = (info.min, info.max) if info is not None else (0, 1)
        return low if red == "max" else high
    return identity


def _fitted(ctx, src, index):
    """torch reads only the leading ``index.shape`` block of ``src``; scatter_elements wants
    them equal."""
    s, i = ctx.shape(src), ctx.shape(index)
    if tuple(s) == tuple(i):
        return src
    if len(s) != len(i) or any(int(b) > int(a) for a, b in zip(s, i, strict=True)):
        raise ctx.fail(f"scatter: index of shape {tuple(i)} does not fit a source of shape "
                       f"{tuple(s)}")
    return _op.strided_slice(src, [0] * len(i), [int(d) for d in i])


def _updates(ctx, x, index, src):
    """The updates tensor: ``src`` cut to the index's shape, or a scalar value broadcast."""
    if _is_expr(src):
        src = _fitted(ctx, src, index)
        return src if ctx.dtype(src) == ctx.dtype(x) else _op.cast(src, ctx.dtype(x))
    return _op.broadcast_to(_scalar_like(ctx, src, x), tuple(int(d) for d in ctx.shape(index)))


def _scatter_reduced(ctx, x, axis, index, upd, reduce, include_self=True):
    if reduce not in _REDUCE:
        raise ctx.fail(f"scatter: reduce={reduce!r} is not supported (one of "
                       f"{', '.join(_REDUCE)})")
    red = _REDUCE[reduce][0]
    base = x
    if not include_self:  # the scattered positions start from the reduction's identity
        fill = _op.broadcast_to(_scalar_like(ctx, _identity(reduce, ctx.dtype(x)), x),
                                tuple(int(d) for d in ctx.shape(index)))
        base = _scatter_elements(ctx, x, index, fill, axis, "update")
    out = _scatter_elements(ctx, base, index, upd, axis, red)
    if reduce != "mean":
        return out
    # the mean divides by how many values landed on each position (plus self when included)
    ones = _op.ones_like(upd)
    start = _op.ones_like(x)
    if not include_self:
        start = _scatter_elements(ctx, start, index, _op.zeros_like(upd), axis, "update")
    count = _scatter_elements(ctx, start, index, ones, axis, "add")
    count = _op.maximum(count, _op.ones_like(count))
    if ctx.dtype(x).startswith("float"):
        return _op.divide(out, count)
    return _op.floor_divide(out, count)


@register("scatter", "scatter_")
def _scatter(ctx, args):
    """scatter(self, dim, index, src|value[, reduce])."""
    x, dim, index, src = args[:4]
    axis = _norm_dim(dim, len(ctx.shape(x)))
    upd = _updates(ctx, x, index, src)
    reduce = args[4] if len(args) > 4 else None
    if reduce is None:
        return _scatter_elements(ctx, x, index, upd, axis, "update")
    return _scatter_reduced(ctx, x, axis, index, upd, str(reduce))


@register("scatter_add", "scatter_add_")
def _scatter_add(ctx, args):
    x, dim, index, src = args[:4]
    axis = _norm_dim(dim, len(ctx.shape(x)))
    return _scatter_elements(ctx, x, index, _updates(ctx, x, index, src), axis, "add")


@register("scatter_reduce", "scatter_reduce_")
def _scatter_reduce(ctx, args):
    """scatter_reduce(self, dim, index, src, reduce, include_self=True)."""
    x, dim, index, src, reduce = args[:5]
    include_self = bool(args[5]) if len(args) > 5 and args[5] is not None else True
    axis = _norm_dim(dim, len(ctx.shape(x)))
    return _scatter_reduced(ctx, x, axis, index, _updates(ctx, x, index, src), str(reduce),
                            include_self)


@register("index_add", "index_add_")
def _index_add(ctx, args):
    """index_add(self, dim, index, source, alpha=1): source's slice i added to self's slice
    index[i] along dim; the 1-D index is broadcast to the source's shape."""
    x, dim, index, src = args[:4]
    alpha = args[4] if len(args) > 4 and args[4] is not None else 1
    rank = len(ctx.shape(x))
    axis = _norm_dim(dim, rank)
    sshape = tuple(int(d) for d in ctx.shape(src))
    if len(ctx.shape(index)) > 1:
        raise ctx.fail("index_add: the index must be 1-D")
    if rank == 0:
        return _op.add(x, src)
    idx = _op.reshape(index, tuple(sshape[axis] if i == axis else 1 for i in range(rank)))
    idx = _op.broadcast_to(idx, sshape)
    if ctx.dtype(src) != ctx.dtype(x):
        src = _op.cast(src, ctx.dtype(x))
    if alpha != 1:
        src = _op.multiply(src, _scalar_like(ctx, alpha, x))
    return _scatter_elements(ctx, x, idx, src, axis, "add")


@register("index_reduce", "index_reduce_")
def _index_reduce(ctx, args):
    """index_reduce(self, dim, index, source, reduce, include_self=True): source's slice i
    reduced (prod, mean, amax, amin) into self's slice index[i] along dim (a point cloud's
    max pooling into voxels): the 1-D index broadcast to the source's shape, then the
    scatter_reduce of the same reduction."""
    x, dim, index, src, reduce = args[:5]
    include_self = bool(args[5]) if len(args) > 5 and args[5] is not None else True
    rank = len(ctx.shape(x))
    if rank == 0 or len(ctx.shape(index)) != 1:
        raise ctx.fail("index_reduce: needs a tensor of rank >= 1 and a 1-D index")
    axis = _norm_dim(dim, rank)
    sshape = tuple(int(d) for d in ctx.shape(src))
    idx = _op.reshape(index, tuple(sshape[axis] if i == axis else 1 for i in range(rank)))
    idx = _op.broadcast_to(idx, sshape)
    if ctx.dtype(src) != ctx.dtype(x):
        src = _op.cast(src, ctx.dtype(x))
    return _scatter_reduced(ctx, x, axis, idx, src, str(reduce), include_self)


@register("index_put", "index_put_", "_index_put_impl_")
def _index_put(ctx, args):
    """index_put(self, indices, values, accumulate=False): ``x[i0, i1, ...] = values`` (or
    ``+=``) with integer index tensors on the leading axes, or one boolean mask."""
    x, indices, values = args[0], list(args[1]), args[2]
    accumulate = bool(args[3]) if len(args) > 3 and args[3] is not None else False
    shape = tuple(int(d) for d in ctx.shape(x))
    if not _is_expr(values):
        values = _scalar_like(ctx, values, x)
    elif ctx.dtype(values) != ctx.dtype(x):
        values = _op.cast(values, ctx.dtype(x))
    if len(indices) == 1 and indices[0] is not None and ctx.dtype(indices[0]) == "bool":
        mask = indices[0]
        mshape = tuple(int(d) for d in ctx.shape(mask))
        vshape = tuple(int(d) for d in ctx.shape(values))
        if int(np.prod(vshape, dtype=np.int64)) != 1:
            raise ctx.fail("index_put: a boolean mask with a tensor of values gives a "
                           "data-dependent layout; only a single value is supported (use "
                           "torch.where or masked_fill)")
        m = _op.reshape(mask, mshape + (1,) * (len(shape) - len(mshape)))
        v = _op.reshape(values, ())
        return _op.where(m, _op.add(x, v) if accumulate else v, x)
    if any(i is not None and not ctx.dtype(i).startswith(("int", "uint")) for i in indices):
        raise ctx.fail("index_put: mixing boolean masks with other indices is not supported")
    if any(i is None for i in indices):  # x[:, :, i] = v: the put with the indexed axes first
        return _sliced_put(ctx, x, indices, values, accumulate)
    ishapes = [tuple(int(d) for d in ctx.shape(i)) for i in indices]
    bshape = np.broadcast_shapes(*ishapes)
    m = len(indices)
    if m == 1:  # x[idx] (+)= v: a scatter along axis 0 of slices (the native paths above)
        n = int(np.prod(bshape, dtype=np.int64))
        rest = shape[1:]
        if not accumulate and shape[0] * n <= _MAX_SLOT_PAIRS:
            return _slices_written(ctx, x, indices[0], values, bshape, n, shape)
        idx = _op.broadcast_to(_op.reshape(indices[0], (n,) + (1,) * len(rest)), (n,) + rest)
        vals = _op.reshape(_op.broadcast_to(values, tuple(bshape) + rest), (n,) + rest)
        return _scatter_elements(ctx, x, idx, vals, 0, "add" if accumulate else "update")
    # negative indices count from the end, as in torch
    stacked = _op.stack([_wrap(ctx, _op.broadcast_to(i, bshape) if s != bshape else i,
                               shape[k]) for k, (i, s) in enumerate(zip(indices, ishapes,
                                                                        strict=True))], 0)
    stacked = _op.cast(stacked, "int64") if ctx.dtype(indices[0]) != "int64" else stacked
    upd_shape = tuple(bshape) + shape[m:]
    values = _op.broadcast_to(values, upd_shape)
    return _scatter_nd(ctx, x, stacked, values, "add" if accumulate else "update")


# the largest (rows x written slices) comparison ``_slices_written`` makes
_MAX_SLOT_PAIRS = 1 << 20


def _slices_written(ctx, x, index, values, bshape, n, shape):
    """``x[idx] = v`` writing whole rows (a static KV cache's ``cache_position`` slots): each
    row of ``x`` takes the last update aimed at it, found by comparing the rows with the
    ``n`` indices only (a (rows, n) table, not one comparison per element), then one gather
    of the updates and a select. Scattered element by element, every element of every row
    was compared with every update (4x the whole model's cache write time)."""
    rows, rest = shape[0], shape[1:]
    idx = _wrap(ctx, _op.reshape(index, (1, n)), rows)
    idt = ctx.dtype(index)
    hit = _op.equal(idx, _expr.const(np.arange(rows, dtype=idt).reshape(rows, 1), idt))
    order = _expr.const(np.arange(n, dtype="int64").reshape(1, n), "int64")
    last = _op.max(_op.where(hit, order, _expr.const(np.array(-1, "int64"), "int64")),
                   axis=1)                                                    # (rows,)
    written = _op.reshape(_op.greater_equal(last, _expr.const(np.array(0, "int64"), "int64")),
                          (rows,) + (1,) * len(rest))
    vals = _op.reshape(_op.broadcast_to(values, tuple(bshape) + rest), (n,) + rest)
    taken = _op.take(vals, _op.clip(last, 0, n - 1), axis=0)
    return _op.where(written, taken, x)


def _sliced_put(ctx, x, indices, values, accumulate):
    """An index put through sliced axes (``frontend_common.index_put_plan``): ``x`` and the
    values transposed so the indexed axes lead, the leading-axes put, ``x`` transposed back."""
    shape = tuple(int(d) for d in ctx.shape(x))
    given = [i for i in indices if i is not None]
    bshape = np.broadcast_shapes(*[tuple(int(d) for d in ctx.shape(i)) for i in given])
    plan = plan_sliced_put(shape, [i is not None for i in indices], bshape)
    values = _op.transpose(_op.broadcast_to(values, plan.value_shape), plan.value_perm)
    put = _index_put(ctx, [_op.transpose(x, plan.perm), given, values, accumulate])
    return _op.transpose(put, plan.inverse)


@register("index_copy", "index_copy_")
def _index_copy(ctx, args):
    """index_copy(self, dim, index, source): source's slice i written to self's slice index[i]
    along dim (Hugging Face's static KV cache writes ``cache_position`` so): the index put
    ``self[:, ..., index] = source`` with ``dim`` sliced axes in front."""
    x, dim, index, src = args[:4]
    axis = _norm_dim(dim, len(ctx.shape(x)))
    if len(ctx.shape(index)) != 1:
        raise ctx.fail("index_copy: the index must be 1-D")
    return _index_put(ctx, [x, [None] * axis + [index], src, False])


@register("max_unpool2d", "max_unpool3d")
def _max_unpool(ctx, args):
    """max_unpool2d(self, indices, output_size) / max_unpool3d(..., stride, padding): each
    value written at its ``max_pool*d_with_indices`` position (flat within its N, C plane) of
    a zero tensor of ``output_size`` (SegNet's decoder). When the indices come from a pool of
    non-overlapping windows imported here, a gather per spatial axis and a comparison
    (``frontend_common.unpool_plan``); otherwise one scatter along the flattened plane."""
    x, index, size = args[0], args[1], [int(d) for d in args[2]]
    s = ctx.shape(x)
    n = len(size)
    if len(s) != n + 2 or tuple(ctx.shape(index)) != tuple(s):
        raise ctx.fail(f"max_unpool: input {tuple(s)} and indices {tuple(ctx.shape(index))} "
                       f"must be one batched {n}-D shape")
    dt = ctx.dtype(x)
    geometry = ctx.pool_geometry.get(index)
    plan = plan_unpool([int(d) for d in s[2:]], size, *geometry) if geometry else None
    if plan is not None:
        gx, gi = x, index
        for a, src in enumerate(plan.sources):
            rows = _expr.const(src, "int64")
            gx, gi = _op.take(gx, rows, axis=2 + a), _op.take(gi, rows, axis=2 + a)
        idt = ctx.dtype(index)
        keep = _op.equal(gi, _expr.const(plan.position.astype(idt), idt))
        if plan.inside is not None:
            keep = _op.logical_and(keep, _expr.const(plan.inside, "bool"))
        return _op.where(keep, gx, _expr.const(np.zeros((), dt), dt))
    plane_in, plane_out = int(np.prod(s[2:])), int(np.prod(size))
    flat = (int(s[0]), int(s[1]))
    zeros = _op.zeros(flat + (plane_out,), dt)
    y = _op.scatter_elements(zeros, _op.reshape(index, flat + (plane_in,)),
                             _op.reshape(x, flat + (plane_in,)), 2)
    return _op.reshape(y, flat + tuple(size))
