"""Numpy references of the dyn.* operators: the shape parameters arrive as tensors, are read,
and the static operator's reference does the work."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..utils import get_reference, reference


def _ints(a) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(a).reshape(-1))


def _static(name):
    ref = get_reference(name)
    if ref is None:
        raise ValueError(f"dyn ops: no numpy reference for {name}")
    return ref


@reference("dyn.reshape")
def _reshape(attrs, args, out_type):
    static = SimpleNamespace(newshape=_ints(args[1]), allowzero=bool(attrs.allowzero))
    return _static("reshape")(static, [args[0]], out_type)


@reference("dyn.broadcast_to")
def _broadcast_to(attrs, args, out_type):
    return np.broadcast_to(np.asarray(args[0]), _ints(args[1])).copy()


@reference("dyn.tile")
def _tile(attrs, args, out_type):
    return np.tile(np.asarray(args[0]), _ints(args[1]))


@reference("dyn.strided_slice")
def _strided_slice(attrs, args, out_type):
    strides = _ints(args[3]) if len(args) > 3 else None
    static = SimpleNamespace(begin=_ints(args[1]), end=_ints(args[2]), strides=strides or None,
                             slice_mode=attrs.slice_mode, axes=None)
    return _static("strided_slice")(static, [args[0]], out_type)


@reference("dyn.expand_dims")
def _expand_dims(attrs, args, out_type):
    data = np.asarray(args[0])
    axis = int(np.asarray(args[1]))
    axis = axis + data.ndim + 1 if axis < 0 else axis
    shape = list(data.shape)
    shape[axis:axis] = [1] * int(attrs.num_newaxis)
    return data.reshape(shape)


@reference("dyn.one_hot")
def _one_hot(attrs, args, out_type):
    idx, on, off, depth = (np.asarray(a) for a in args)
    static = SimpleNamespace(depth=int(depth), axis=attrs.axis, dtype=out_type.dtype)
    return _static("one_hot")(static, [idx, on, off], out_type)


@reference("dyn.full")
def _full(attrs, args, out_type):
    fill, shape = args
    return np.full(_ints(shape), np.asarray(fill), dtype=out_type.dtype)


@reference("dyn.zeros")
def _zeros(attrs, args, out_type):
    return np.zeros(_ints(args[0]), dtype=out_type.dtype)


@reference("dyn.ones")
def _ones(attrs, args, out_type):
    return np.ones(_ints(args[0]), dtype=out_type.dtype)


@reference("dyn.nn.pad")
def _pad(attrs, args, out_type):
    data, widths, value = (np.asarray(a) for a in args)
    pairs = [tuple(int(w) for w in row) for row in widths]
    if attrs.pad_mode == "constant":
        return np.pad(data, pairs, constant_values=value.reshape(()).item())
    return np.pad(data, pairs, mode={"edge": "edge", "reflect": "reflect"}[attrs.pad_mode])
