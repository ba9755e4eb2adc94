"""ONNX reductions: Reduce* (axes as attribute or, from opset 13/18, as input) and ArgMax/Min."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ... import op as _op
from .registry import register


def _axes(ctx, ins, attrs):
    """The reduction axes, or None for all; returns (axes, noop)."""
    axes = None
    if len(ins) > 1 and ins[1] is not None:
        axes = [int(a) for a in ctx.value(ins[1], "the axes input").reshape(-1)]
    elif "axes" in attrs:
        axes = [int(a) for a in attrs["axes"]]
    if not axes:
        return None, _om.flag_attr(attrs, "noop_with_empty_axes", 0)
    return axes, False


def _reduce(build):
    def convert(ctx, ins, attrs):
        axes, noop = _axes(ctx, ins, attrs)
        x = ins[0]
        if noop:
            return x
        keep = _om.flag_attr(attrs, "keepdims", 1)
        empty = _empty_reduction(ctx, x, axes, keep)
        if empty is not None:
            return empty
        return build(x, axes, keep)

    return convert


def _empty_reduction(ctx, x, axes, keep):
    """ReduceMax / ReduceMin / ReduceLogSumExp over an empty axis: ONNX's identity value
    (-inf / +inf, the dtype's extreme for integers, False / True for bool), as a constant."""
    op = ctx.node.op_type if ctx.node is not None else ""
    if op not in ("ReduceMax", "ReduceMin", "ReduceLogSumExp"):
        return None
    shape = ctx.shape(x)
    red = range(len(shape)) if axes is None else [a % len(shape) for a in axes]
    if not all(isinstance(d, int) for d in shape) or all(shape[a] != 0 for a in red):
        return None
    out = [1 if a in red else d for a, d in enumerate(shape)] if keep else \
        [d for a, d in enumerate(shape) if a not in red]
    dt = np.dtype(ctx.dtype(x))
    lowest = op != "ReduceMin"
    if dt.kind == "b":
        fill = not lowest
    elif dt.kind in "iu":
        fill = np.iinfo(dt).min if lowest else np.iinfo(dt).max
    else:
        fill = -np.inf if lowest else np.inf
    return ctx.const(np.full(out, fill, dtype=dt))


def _sq(x):
    return _op.multiply(x, x)


register("ReduceSum")(_reduce(lambda x, a, k: _op.sum(x, a, keepdims=k)))
register("ReduceMean")(_reduce(lambda x, a, k: _op.mean(x, a, keepdims=k)))
register("ReduceMax")(_reduce(lambda x, a, k: _op.max(x, a, keepdims=k)))
register("ReduceMin")(_reduce(lambda x, a, k: _op.min(x, a, keepdims=k)))
register("ReduceProd")(_reduce(lambda x, a, k: _op.prod(x, a, keepdims=k)))
register("ReduceL1")(_reduce(lambda x, a, k: _op.sum(_op.abs(x), a, keepdims=k)))
register("ReduceL2")(_reduce(lambda x, a, k: _op.sqrt(_op.sum(_sq(x), a, keepdims=k))))
register("ReduceSumSquare")(_reduce(lambda x, a, k: _op.sum(_sq(x), a, keepdims=k)))
register("ReduceLogSum")(_reduce(lambda x, a, k: _op.log(_op.sum(x, a, keepdims=k))))
register("ReduceLogSumExp")(_reduce(lambda x, a, k: _op.logsumexp(x, a, keepdims=k)))


def _arg(fn):
    def convert(ctx, ins, attrs):
        axis = int(attrs.get("axis", 0))
        out = fn(ins[0], axis=[axis], keepdims=_om.flag_attr(attrs, "keepdims", 1),
                 select_last_index=bool(attrs.get("select_last_index", 0)))
        return _op.cast(out, "int64")

    return convert


register("ArgMax")(_arg(_op.argmax))
register("ArgMin")(_arg(_op.argmin))
