"""Core-ATen shape and layout ops onto ``relax.op``: views and reshapes, permutes and transposes,
``expand``, copies and casts (``_to_copy``), (un)squeeze, ``cat``, ``slice`` / ``select`` /
``split``, ``repeat``, ``flip`` / ``rot90``, ``diagonal``, ``tril`` / ``triu`` and constant
padding."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_promote import tensors_result_dtype
from ....frontend_common.torch_rot90 import rot90_plan
from ....ir.prim_expr import PrimExpr
from ... import op as _op
from ...expr import TupleGetItem, const
from ..common import crop_negative_pads
from .context import AtenContext, register, torch_dtype


@register("view.default", "_unsafe_view.default", "reshape.default")
def _view(ctx: AtenContext, args):
    x, size = args
    return ctx.emit(_op.reshape(x, ctx.shape_expr(list(size))))


@register("permute.default")
def _permute(ctx: AtenContext, args):
    return ctx.emit(_op.permute_dims(args[0], [int(a) for a in args[1]]))


@register("transpose.int")
def _transpose(ctx: AtenContext, args):
    x, a, b = args
    n = ctx.ndim(x)
    perm = list(range(n))
    perm[a % n], perm[b % n] = perm[b % n], perm[a % n]
    return ctx.emit(_op.permute_dims(x, perm))


@register("mT.default", "mH.default", "adjoint.default")
def _matrix_transpose(ctx: AtenContext, args):
    """``x.mT`` (and, for real tensors, ``mH`` / ``adjoint``): the last two axes swapped."""
    n = ctx.ndim(args[0])
    return ctx.emit(_op.permute_dims(args[0], list(range(n - 2)) + [n - 1, n - 2]))


@register("t.default")
def _t(ctx: AtenContext, args):
    return ctx.emit(_op.permute_dims(args[0], [1, 0])) if ctx.ndim(args[0]) == 2 else args[0]


@register("expand.default")
def _expand(ctx: AtenContext, args):
    x, size = args[0], list(args[1])
    in_dims = ctx.shape(x)
    lead = len(size) - len(in_dims)
    out = [in_dims[i - lead] if isinstance(s, int) and s == -1 else s
           for i, s in enumerate(size)]
    if out == in_dims:
        return x
    return ctx.emit(_op.broadcast_to(x, ctx.shape_expr(out)))


@register("clone.default", "alias.default", "detach.default", "contiguous.default",
          "lift_fresh_copy.default", "dropout.default")
def _identity(ctx: AtenContext, args):
    return args[0]


@register("_to_copy.default")
def _to_copy(ctx: AtenContext, args):
    x, dtype = args[0], args[1]
    if dtype is None:
        return x
    dtype = torch_dtype(dtype)
    return x if ctx.dtype(x) == dtype else ctx.emit(_op.astype(x, dtype))


@register("unsqueeze.default")
def _unsqueeze(ctx: AtenContext, args):
    x, dim = args
    return ctx.emit(_op.expand_dims(x, int(dim) % (ctx.ndim(x) + 1)))


@register("squeeze.dims", "squeeze.dim", "squeeze.default")
def _squeeze(ctx: AtenContext, args):
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    if isinstance(dims, int):
        dims = [dims]
    n = ctx.ndim(x)
    shape = ctx.shape(x)
    if dims is not None:
        dims = [d % n for d in dims if shape[d % n] == 1]  # torch ignores non-1 dims
        if not dims:
            return x
    return ctx.emit(_op.squeeze(x, dims))


@register("cat.default")
def _cat(ctx: AtenContext, args):
    """Tensors of several dtypes are cast to the one torch joins them in (``torch_promote``)."""
    tensors, dim = args
    dt = tensors_result_dtype([ctx.dtype(t) for t in tensors])
    tensors = [t if ctx.dtype(t) == dt else ctx.emit(_op.astype(t, dt)) for t in tensors]
    return ctx.emit(_op.concat(tensors, int(dim)))


@register("slice.Tensor")
def _slice(ctx: AtenContext, args):
    x, dim, start, end, step = args
    n = ctx.ndim(x)
    dim = int(dim) % n
    d = ctx.shape(x)[dim]
    start = 0 if start is None else start
    if end is None or (isinstance(end, int) and end >= 2**62):
        end = d
    if isinstance(start, int) and start == 0 and (end is d) and step == 1:
        return x
    inbound = _proved_inbound(ctx, d, dim, start, end, int(step))
    return ctx.emit(_op.strided_slice(x, [dim], [start], [end], [int(step)],
                                      assume_inbound=inbound))


def _proved_inbound(ctx: AtenContext, d, dim: int, start, end, step: int) -> bool:
    """Whether torch proved the slice ``start:end:step`` of a symbolic axis ``d`` in bounds:
    its own output extent (the node's ``val``, computed under the export's range constraints)
    is the unclamped ``ceil((end - start) / step)``. ``x[:1]`` of a batch ``Dim`` (at least 2)
    then keeps length 1 where the slice rule alone gives ``min(batch, 1)``, which no later
    broadcast against the batch can resolve."""
    if isinstance(d, int) or not all(isinstance(v, int) for v in (start, end)) or step <= 0 \
            or start < 0 or end < 0:
        return False
    val = ctx.node.meta.get("val") if ctx.node is not None else None
    shape = getattr(val, "shape", None)
    if shape is None or len(shape) <= dim:
        return False
    extent = ctx.sym(shape[dim])
    return isinstance(extent, int) and extent == max(0, -(-(end - start) // step))


@register("select.int")
def _select(ctx: AtenContext, args):
    x, dim, index = args
    n = ctx.ndim(x)
    dim = int(dim) % n
    size = ctx.shape(x)[dim]
    if isinstance(index, int) and index < 0:  # take's fast mode does not wrap negatives
        if not isinstance(size, int):  # symbolic dim: slice [size + index, size + index + 1)
            part = _op.strided_slice(x, [dim], [size + index], [size + index + 1], [1])
            return ctx.emit(_op.squeeze(part, [dim]))
        index += size
    idx = const(np.array(index, "int64")) if isinstance(index, int) else ctx.tensor(index)
    return ctx.emit(_op.take(x, idx, dim))


@register("split_with_sizes.default", "split.Tensor")
def _split(ctx: AtenContext, args):
    x, sizes, dim = args
    dim = int(dim) % ctx.ndim(x)
    if isinstance(sizes, int):
        total = ctx.shape(x)[dim]
        if not isinstance(total, int):
            raise ctx.fail("split of a symbolic dim by size is not supported")
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    cuts, acc = [], 0
    for s in sizes[:-1]:
        acc += int(s)
        cuts.append(acc)
    tup = ctx.emit(_op.split(x, cuts, dim))
    return [ctx.emit(TupleGetItem(tup, i)) for i in range(len(sizes))]


@register("constant_pad_nd.default")
def _constant_pad(ctx: AtenContext, args):
    x, pad, value = args
    n = ctx.ndim(x)
    flat = [0] * (2 * n)
    for i in range(len(pad) // 2):  # torch lists (before, after) from the last axis backwards
        axis = n - 1 - i
        flat[2 * axis], flat[2 * axis + 1] = int(pad[2 * i]), int(pad[2 * i + 1])
    crop, flat = crop_negative_pads(x, flat)
    if crop is not None:
        x = ctx.emit(crop)
        if not any(flat):
            return x
    return ctx.emit(_op.nn.pad(x, flat, float(value)))


@register("tril.default", "triu.default")
def _trilu(ctx: AtenContext, args):
    fn = _op.tril if "tril" in ctx.node.target.__name__ else _op.triu
    return ctx.emit(fn(args[0], int(args[1])))


@register("repeat.default")
def _repeat(ctx: AtenContext, args):
    """``x.repeat(*reps)``: a tile; with a run-time count (``query.repeat(batch, 1, 1)`` of a
    dynamic batch), each axis of size d repeated r times is (r, d) broadcast from (1, d) and
    merged, so the sizes stay symbolic."""
    x, reps = args[0], list(args[1])
    extra = len(reps) - ctx.ndim(x)
    if extra > 0:
        x = ctx.emit(_op.reshape(x, ctx.shape_expr([1] * extra + list(ctx.shape(x)))))
    if all(isinstance(r, int) or not isinstance(r, PrimExpr) for r in reps):
        return ctx.emit(_op.tile(x, [int(r) for r in reps]))
    shape = list(ctx.shape(x))
    split = [d for n in shape for d in (1, n)]
    wide = [d for r, n in zip(reps, shape, strict=True) for d in (r, n)]
    x = ctx.emit(_op.broadcast_to(ctx.emit(_op.reshape(x, ctx.shape_expr(split))),
                                  ctx.shape_expr(wide)))
    return ctx.emit(_op.reshape(x, ctx.shape_expr([r * n for r, n in zip(reps, shape,
                                                                          strict=True)])))


@register("diagonal.default")
def _diagonal(ctx: AtenContext, args):
    x, off, d1, d2 = args[0], int(args[1]), args[2], args[3]
    n = ctx.ndim(x)
    d1, d2 = int(d1) % n, int(d2) % n
    shape = ctx.shape(x)
    n1, n2 = shape[d1], shape[d2]
    if not isinstance(n1, int) or not isinstance(n2, int):
        raise ctx.fail("diagonal over symbolic dims is not supported")
    rest = [d for d in range(n) if d not in (d1, d2)]
    moved = _op.permute_dims(x, rest + [d1, d2])
    flat = ctx.emit(_op.reshape(moved, ctx.shape_expr([shape[d] for d in rest] + [n1 * n2])))
    rows = np.arange(max(0, -off), min(n1, n2 - off))
    return ctx.emit(_op.take(flat, const((rows * n2 + rows + off).astype("int64")), len(rest)))


@register("flip.default")
def _flip(ctx: AtenContext, args):
    x = args[0]
    for d in args[1]:
        x = ctx.emit(_op.flip(x, int(d) % ctx.ndim(x)))
    return x


@register("rot90.default")
def _rot90(ctx: AtenContext, args):
    """``torch.rot90``: flips and an axis swap (``frontend_common.torch_rot90``)."""
    x = args[0]
    k = int(args[1]) if len(args) > 1 and args[1] is not None else 1
    dims = args[2] if len(args) > 2 and args[2] is not None else [0, 1]
    plan = rot90_plan(ctx.ndim(x), k, dims, ctx.fail)
    for axis in plan.flips:
        x = ctx.emit(_op.flip(x, axis))
    return x if plan.perm is None else ctx.emit(_op.permute_dims(x, plan.perm))
