"""The functional forms torch.export's decompositions give in-place writes, onto ``relax.op``:
``empty`` (a buffer about to be written), ``copy`` (its contents replaced) and
``slice_scatter`` / ``select_scatter`` (a slice or one index of an axis replaced). Circular
padding (``nn.Conv1d(padding_mode="circular")``, Informer's and TimesNet's token embeddings)
decomposes into exactly these, as does ``x[:, a:b] = y`` in a model's forward. Also
``max_unpool*d`` (kept whole by the importer), the write of pooled values back to the
positions their max pool recorded."""

from __future__ import annotations

import operator

import numpy as np

from ....frontend_common.unpool_plan import plan_unpool
from ... import op as _op
from ...expr import const
from .context import AtenContext, register, torch_dtype


@register("empty.memory_format", "empty_strided.default", "empty_permuted.default",
          "new_empty.default")
def _empty(ctx: AtenContext, args):
    """A tensor whose contents torch leaves undefined: zeros (every later read of it follows a
    write in the programs that use it)."""
    name = ctx.node.target.__name__
    # schema order: empty(size, *, dtype), empty_strided(size, stride, *, dtype),
    # empty_permuted(size, physical_layout, *, dtype), new_empty(self, size, *, dtype)
    size = args[1] if name.startswith("new_empty") else args[0]
    k = 1 if name.startswith("empty.") else 2
    dtype = args[k] if len(args) > k else None
    if dtype is not None:
        dtype = torch_dtype(dtype)
    else:
        dtype = ctx.dtype(args[0]) if name.startswith("new_empty") else "float32"
    dims = [ctx.sym(d) for d in size]
    if all(isinstance(d, int) for d in dims):
        return const(np.zeros(dims, dtype))
    return ctx.emit(_op.zeros(ctx.shape_expr(dims), dtype))


@register("copy.default")
def _copy(ctx: AtenContext, args):
    """copy(self, src): ``src`` broadcast to ``self``'s shape in ``self``'s dtype (the
    functional ``self.copy_(src)``; ``self``'s old values are not read)."""
    x, src = args[0], args[1]
    src = ctx.tensor(src, x)
    if ctx.dtype(src) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    shape = ctx.shape(x)
    if ctx.shape(src) == shape:
        return src
    return ctx.emit(_op.broadcast_to(src, ctx.shape_expr(shape)))


@register("slice_scatter.default")
def _slice_scatter(ctx: AtenContext, args):
    """slice_scatter(self, src, dim=0, start=None, end=None, step=1): ``self`` with
    ``self[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    x, src = args[0], args[1]
    dim = int(args[2]) % ctx.ndim(x) if len(args) > 2 else 0
    start = args[3] if len(args) > 3 and args[3] is not None else 0
    end = args[4] if len(args) > 4 and args[4] is not None else ctx.shape(x)[dim]
    step = int(args[5]) if len(args) > 5 else 1
    n = ctx.shape(x)[dim]
    if isinstance(end, int) and isinstance(n, int):
        end = min(end, n)
    if isinstance(start, int) and isinstance(n, int) and start < 0:
        start = max(start + n, 0)  # (a start before the first element is the first: x[-5:])
    if isinstance(end, int) and isinstance(n, int) and end < 0:
        end = max(end + n, 0)
    if ctx.dtype(src) != ctx.dtype(x):
        src = ctx.emit(_op.astype(src, ctx.dtype(x)))
    return ctx.emit(_op.slice_scatter(x, src, start, end, step, dim))


@register("select_scatter.default")
def _select_scatter(ctx: AtenContext, args):
    """select_scatter(self, src, dim, index): ``self`` with index ``index`` of ``dim``
    replaced by ``src`` (whose rank is one less)."""
    x, src, dim, index = args[0], args[1], int(args[2]) % ctx.ndim(args[0]), int(args[3])
    n = ctx.shape(x)[dim]
    if index < 0:
        index += n
    src = ctx.emit(_op.expand_dims(src, dim))
    return _slice_scatter(ctx, [x, src, dim, index, index + 1, 1])


def _pool_geometry(ctx: AtenContext, index_node):
    """(kernel, stride, padding, dilation) of the ``max_pool*d_with_indices`` whose indices
    ``index_node`` reads, or None when they come from elsewhere."""
    if index_node is None or getattr(index_node, "target", None) is not operator.getitem:
        return None
    pool = index_node.args[0]
    if "max_pool" not in getattr(pool.target, "__name__", "") or index_node.args[1] != 1:
        return None
    kernel = [int(k) for k in pool.args[1]]
    n = len(kernel)

    def arg(i, default):
        v = pool.args[i] if len(pool.args) > i else pool.kwargs.get(
            ("stride", "padding", "dilation")[i - 2], default)
        v = [int(e) for e in (v if isinstance(v, list | tuple) else [v])] or default
        return v * n if len(v) == 1 else v

    return kernel, arg(2, kernel), arg(3, [0]), arg(4, [1])


@register("max_unpool2d.default", "max_unpool3d.default")
def _max_unpool(ctx: AtenContext, args):
    """max_unpool2d(self, indices, output_size) / max_unpool3d(..., stride, padding), kept
    whole by the importer: each value written at its ``max_pool*d_with_indices`` position (flat
    within its N, C plane) of a zero tensor of ``output_size``. When the indices come from a
    pool of non-overlapping windows, a gather per spatial axis and a comparison
    (``frontend_common.unpool_plan``); otherwise an ``index_put`` on the flattened planes."""
    x, index, size = args[0], args[1], [int(d) for d in args[2]]
    s = ctx.shape(x)
    n = len(size)
    if (len(s) != n + 2 or len(ctx.shape(index)) != n + 2
            or not all(isinstance(d, int) for d in s[2:])):
        raise ctx.fail(f"max_unpool: input {s} and indices {ctx.shape(index)} must be "
                       f"batched {n}-D with static spatial dims")
    if not all(ctx.analyzer.can_prove_equal(a, b) for a, b in zip(s, ctx.shape(index),
                                                                     strict=True)):
        raise ctx.fail(f"max_unpool: input {s} and indices {ctx.shape(index)} differ")
    dt, idt = ctx.dtype(x), ctx.dtype(index)
    geometry = _pool_geometry(ctx, ctx.node.args[1])
    plan = plan_unpool(s[2:], size, *geometry) if geometry else None
    if plan is not None:
        gx, gi = x, index
        for a, src in enumerate(plan.sources):
            gx = ctx.emit(_op.take(gx, const(src), axis=2 + a))
            gi = ctx.emit(_op.take(gi, const(src), axis=2 + a))
        keep = ctx.emit(_op.equal(gi, const(plan.position.astype(idt))))
        if plan.inside is not None:
            keep = ctx.emit(_op.logical_and(keep, const(plan.inside)))
        return ctx.emit(_op.where(keep, gx, const(np.zeros((), dt))))
    nb, ch = s[0], s[1]
    plane_in, plane_out = int(np.prod(s[2:])), int(np.prod(size))
    planes = ctx.simplify(nb * ch)
    if isinstance(planes, int):
        rows = const((np.arange(planes, dtype=idt) * plane_out).reshape(nb, ch, 1))
        zeros = const(np.zeros(planes * plane_out, dt))
    else:  # a symbolic batch: the planes' offsets and the zeros sized at run time
        rows = ctx.emit(_op.reshape(_op.multiply(_op.arange(0, planes, 1, idt),
                                                 const(np.array(plane_out, idt))),
                                    ctx.shape_expr([nb, ch, 1])))
        zeros = ctx.emit(_op.zeros(ctx.shape_expr([ctx.simplify(planes * plane_out)]), dt))
    flat_idx = ctx.emit(_op.reshape(ctx.emit(_op.add(ctx.emit(_op.reshape(
        index, ctx.shape_expr([nb, ch, plane_in]))), rows)),
        ctx.shape_expr([ctx.simplify(planes * plane_in)])))
    y = ctx.emit(_op.index_put(zeros, [flat_idx], ctx.emit(_op.reshape(x, [-1]))))
    return ctx.emit(_op.reshape(y, ctx.shape_expr([nb, ch] + size)))
