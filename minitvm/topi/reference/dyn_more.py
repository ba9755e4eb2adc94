"""Numpy references of dyn.topk, dyn.squeeze, dyn.sparse_to_dense, dyn.nn.upsampling,
dyn.nn.upsampling3d and dyn.image.resize2d: read the run-time parameters, then run the static
op's reference with the static attributes and output type."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...ir.type import TensorType
from ..shape import hw_axes, spatial_axes
from ..utils import get_reference, reference


def _ints(a) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(a).reshape(-1))


def _with(attrs, **changes):
    """A copy of ``attrs``'s fields (a namespace) with ``changes``."""
    values = dict(attrs.items())
    values.update(changes)
    return SimpleNamespace(**values)


@reference("dyn.topk")
def _topk(attrs, args, out_type):
    data, k = args
    return get_reference("topk")(_with(attrs, k=int(np.asarray(k).reshape(-1)[0])), [data],
                                 out_type)


@reference("dyn.squeeze")
def _squeeze(attrs, args, out_type):
    data, axes = args
    axes = tuple(a + data.ndim if a < 0 else a for a in _ints(axes))
    bad = [a for a in axes if data.shape[a] != 1]
    if bad:
        raise ValueError(f"dyn.squeeze: axes {bad} of shape {data.shape} are not of size 1")
    return np.squeeze(data, axis=axes)


@reference("dyn.sparse_to_dense")
def _sparse_to_dense(attrs, args, out_type):
    idx, values, default, shape = args
    static = SimpleNamespace(output_shape=_ints(shape))
    return get_reference("sparse_to_dense")(static, [idx, values, default],
                                            TensorType(_ints(shape), out_type.dtype))


def _scaled(shape, axes, scales):
    out = list(shape)
    for a, s in zip(axes, scales):
        out[a] = int(np.round(shape[a] * float(s)))
    return tuple(out)


@reference("dyn.nn.upsampling")
def _upsampling(attrs, args, out_type):
    data, sh, sw = args
    scales = (float(np.asarray(sh).reshape(-1)[0]), float(np.asarray(sw).reshape(-1)[0]))
    shape = _scaled(data.shape, hw_axes(attrs.layout, data.ndim, "dyn.nn.upsampling"), scales)
    static = _with(attrs, scale_h=scales[0], scale_w=scales[1])
    return get_reference("nn.upsampling")(static, [data], TensorType(shape, out_type.dtype))


@reference("dyn.nn.upsampling3d")
def _upsampling3d(attrs, args, out_type):
    data, *scales = args
    scales = [float(np.asarray(s).reshape(-1)[0]) for s in scales]
    axes = spatial_axes(attrs.layout, data.ndim, "DHW", "dyn.nn.upsampling3d")
    shape = _scaled(data.shape, axes, scales)
    static = _with(attrs, scale_d=scales[0], scale_h=scales[1], scale_w=scales[2])
    return get_reference("nn.upsampling3d")(static, [data], TensorType(shape, out_type.dtype))


@reference("dyn.image.resize2d")
def _resize2d(attrs, args, out_type):
    data, size, roi = args
    static = _with(attrs, size=_ints(size), roi=tuple(float(r) for r in np.reshape(roi, -1)))
    return get_reference("image.resize2d")(static, [data], out_type)
