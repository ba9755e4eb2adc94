"""Numpy references of the reductions (sum, mean, max, ..., argmax/argmin, variance)."""

from __future__ import annotations

import builtins

import numpy as np

from ..utils import reduce_axes, reduce_shape, reference
from .fp_errors import quietly


def _axes_of(attrs, ndim: int, name: str) -> tuple:
    return tuple(reduce_axes(ndim, attrs.axis, attrs.exclude, name))


def _reducer(np_fn, name):
    def impl(attrs, args, out_type):
        x = np.asarray(args[0])
        axes = _axes_of(attrs, x.ndim, name)
        out = quietly(lambda: np_fn(x, axis=axes, keepdims=bool(attrs.keepdims)))
        return np.asarray(out).astype(out_type.dtype, copy=False)

    return impl


def reduce_identity(name: str, dtype) -> object:
    """What max / min give over an empty axis (``name`` "max" or "min"): -inf / +inf for
    floats (ONNX's ReduceMax / ReduceMin, the compiled kernels' init), an integer type's
    extremes, False / True for bool."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return name == "min"
    if dt.kind in "iu":
        return np.iinfo(dt).min if name == "max" else np.iinfo(dt).max
    return -np.inf if name == "max" else np.inf


def _extreme(np_fn, name):
    """numpy's max / min, which raise over an empty axis, giving ``reduce_identity`` there."""
    def fn(x, axis, keepdims):
        if x.size == 0:
            return np_fn(x, axis=axis, keepdims=keepdims, initial=reduce_identity(name, x.dtype))
        return np_fn(x, axis=axis, keepdims=keepdims)

    return fn


def _mean(x, axis, keepdims):
    if np.issubdtype(x.dtype, np.integer):
        count = int(np.prod([x.shape[a] for a in axis])) if axis else 1
        total = np.sum(x, axis=axis, keepdims=keepdims)
        return np.trunc(total / builtins.max(count, 1))  # TVM divides integers truncating
    return np.mean(x, axis=axis, keepdims=keepdims)


REDUCERS = {
    "sum": np.sum, "mean": _mean, "max": _extreme(np.max, "max"), "min": _extreme(np.min, "min"), "prod": np.prod,
    "all": np.all, "any": np.any,
}

for _name, _fn in REDUCERS.items():
    reference(_name)(_reducer(_fn, _name))


def _arg_reducer(np_fn, name):
    def impl(attrs, args, out_type):
        x = np.asarray(args[0])
        axes = _axes_of(attrs, x.ndim, name)
        keep = [i for i in range(x.ndim) if i not in axes]
        # Move reduced axes last and flatten them, so one numpy arg-reduction covers them all.
        moved = np.transpose(x, keep + list(axes))
        # (the reduced size written out: numpy cannot infer -1 when a kept axis is 0)
        size = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
        flat = moved.reshape(tuple(x.shape[i] for i in keep) + (size,))
        if attrs.select_last_index:
            idx = flat.shape[-1] - 1 - np_fn(flat[..., ::-1], axis=-1)
        else:
            idx = np_fn(flat, axis=-1)
        out_shape = reduce_shape(x.shape, axes, bool(attrs.keepdims))
        return np.asarray(idx).reshape(out_shape).astype(out_type.dtype)

    return impl


for _name, _fn in {"argmax": np.argmax, "argmin": np.argmin}.items():
    reference(_name)(_arg_reducer(_fn, _name))


@reference("variance")
def _variance(attrs, args, out_type):
    x, m = np.asarray(args[0]), np.asarray(args[1])
    axes = _axes_of(attrs, x.ndim, "variance")
    count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    sq = np.sum(np.square(x - m), axis=axes, keepdims=bool(attrs.keepdims))
    denom = count - 1 if attrs.unbiased else count
    return (sq / builtins.max(denom, 1)).astype(out_type.dtype)
