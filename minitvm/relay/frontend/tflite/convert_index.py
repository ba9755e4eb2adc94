"""Float converters of the reductions and index ops: MEAN / SUM / REDUCE_*, ARG_MAX / ARG_MIN,
CUMSUM, TOPK_V2, GATHER / GATHER_ND, SCATTER_ND, EMBEDDING_LOOKUP, ONE_HOT, and SHAPE / RANK /
FILL / RANGE."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from .op_context import _axis, _ints, _out_dtype, register
from .tensor_data import infer_shape


def _reduce(fn):
    def convert(ctx):
        axes = [int(a) for a in ctx.value(1, "the reduction axes").reshape(-1)]
        opt = ctx.options()
        keep = bool(opt.KeepDims()) if opt is not None else False
        return fn(ctx.inputs[0], axes, keepdims=keep)

    return convert


register("MEAN")(_reduce(_op.mean))
register("SUM")(_reduce(_op.sum))
register("REDUCE_MAX")(_reduce(_op.max))
register("REDUCE_MIN")(_reduce(_op.min))
register("REDUCE_PROD")(_reduce(_op.prod))
register("REDUCE_ANY")(_reduce(_op.any))
register("REDUCE_ALL")(_reduce(_op.all))


@register("GATHER")
def _gather(ctx):
    x, idx = ctx.inputs[0], ctx.inputs[1]
    opt = ctx.options()
    ndim = len(infer_shape(x))
    axis = _axis(int(opt.Axis()), ndim) if opt is not None else 0
    bd = int(opt.BatchDims()) if opt is not None and hasattr(opt, "BatchDims") else 0
    return _op.take(x, idx, axis=axis, batch_dims=bd, mode="fast")


@register("GATHER_ND")
def _gather_nd(ctx):
    x, idx = ctx.inputs[0], ctx.inputs[1]
    r = len(infer_shape(idx))
    return _op.gather_nd(x, _op.transpose(idx, [r - 1] + list(range(r - 1))))


def _arg(fn):
    def convert(ctx):
        x = ctx.inputs[0]
        axis = _axis(_ints(ctx, 1, "the axis")[0], len(infer_shape(x)))
        return _op.cast(fn(x, axis=[axis]), _out_dtype(ctx))

    return convert


register("ARG_MAX")(_arg(_op.argmax))
register("ARG_MIN")(_arg(_op.argmin))


@register("SHAPE")
def _shape(ctx):
    shape = infer_shape(ctx.inputs[0])
    if None in shape:  # a dynamic batch: computed when the model runs
        return _op.shape_of(ctx.inputs[0], _out_dtype(ctx))
    return _expr.const(np.array(shape, _out_dtype(ctx)))


@register("FILL")
def _fill(ctx):
    shape = _ints(ctx, 0, "the shape")
    value = ctx.inputs[1]
    return _op.full(value, shape, dtype=_out_dtype(ctx))


@register("RANGE")
def _range(ctx):
    vals = [ctx.value(k, "the range bounds").reshape(-1)[0] for k in range(3)]
    return _expr.const(np.arange(*vals).astype(_out_dtype(ctx)))


@register("RANK")
def _rank(ctx):
    return _expr.const(np.array(len(infer_shape(ctx.inputs[0])), _out_dtype(ctx)))


@register("ONE_HOT")
def _one_hot(ctx):
    depth = _ints(ctx, 1, "the depth")[0]
    opt = ctx.options()
    axis = int(opt.Axis()) if opt is not None else -1
    return _op.one_hot(ctx.inputs[0], ctx.inputs[2], ctx.inputs[3], depth, axis,
                       _out_dtype(ctx))


@register("CUMSUM")
def _cumsum(ctx):
    x = ctx.inputs[0]
    axis = _axis(_ints(ctx, 1, "the axis")[0], len(infer_shape(x)))
    opt = ctx.options()
    exclusive = bool(opt.Exclusive()) if opt is not None else False
    rev = bool(opt.Reverse()) if opt is not None else False
    if rev:
        x = _op.reverse(x, axis)
    out = _op.cumsum(x, axis=axis, exclusive=exclusive)
    return _op.reverse(out, axis) if rev else out


@register("TOPK_V2")
def _topk(ctx):
    k = _ints(ctx, 1, "k")[0]
    out = _op.topk(ctx.inputs[0], k=k, axis=-1, ret_type="both", dtype=_out_dtype(ctx, 1))
    return [out[0], out[1]]


@register("EMBEDDING_LOOKUP")
def _embedding_lookup(ctx):
    return _op.take(ctx.inputs[1], ctx.inputs[0], axis=0, mode="fast")


@register("SCATTER_ND")
def _scatter_nd(ctx):
    idx, updates = ctx.inputs[0], ctx.inputs[1]
    shape = _ints(ctx, 2, "the output shape")
    r = len(infer_shape(idx))
    base = _op.zeros(shape, _out_dtype(ctx))
    return _op.scatter_nd(base, _op.transpose(idx, [r - 1] + list(range(r - 1))), updates,
                          mode="add")
