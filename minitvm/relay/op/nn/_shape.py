"""Shape-changing nn ops: nn.pad, nn.batch_flatten, nn.upsampling."""

from __future__ import annotations

import numpy as np

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any
from ..op import define_op
from ..type_relations import check_num_args, dims_product, is_static_dim, shape_str, tensor_arg
from . import attrs as A
from ._utils import arith, parse_layout

_PAD_MODES = ("constant", "edge", "reflect")


def pad_rel(arg_types, attrs, op_name: str = "nn.pad"):
    """``(data, pad_value)``: each dim grows by its (before, after) widths."""
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    value = tensor_arg(arg_types, 1, op_name)
    if len(value.shape) != 0:
        raise TypeError(f"{op_name}: pad_value must be a scalar, got {shape_str(value.shape)}")
    widths = attrs.pad_width
    if len(widths) != len(data.shape):
        raise TypeError(f"{op_name}: pad_width has {len(widths)} entries but the data has rank "
                        f"{len(data.shape)} {shape_str(data.shape)}")
    if attrs.pad_mode not in _PAD_MODES:
        raise ValueError(f"{op_name}: pad_mode must be one of {_PAD_MODES}, got "
                         f"{attrs.pad_mode!r}")
    shape = []
    for i, (d, w) in enumerate(zip(data.shape, widths)):
        if len(w) != 2:
            raise ValueError(f"{op_name}: pad_width[{i}] must be a (before, after) pair, got {w}")
        before, after = int(w[0]), int(w[1])
        if before < 0 or after < 0:
            raise ValueError(f"{op_name}: pad widths must be non-negative, got {list(w)} at "
                             f"axis {i}")
        shape.append(arith(lambda x, b=before, a=after: x + b + a, d) if before or after else d)
    return TensorType(shape, data.dtype)


def _pad_np(attrs, args, out_type):
    x, value = args
    widths = [(int(b), int(a)) for b, a in attrs.pad_width]
    if attrs.pad_mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value.astype(x.dtype))
    return np.pad(x, widths, mode=attrs.pad_mode)


def _batch_flatten_rel(arg_types, attrs):
    check_num_args("nn.batch_flatten", arg_types, 1)
    data = tensor_arg(arg_types, 0, "nn.batch_flatten")
    if len(data.shape) == 0:
        raise TypeError("nn.batch_flatten: the data must have at least one dimension")
    return TensorType((data.shape[0], dims_product(data.shape[1:])), data.dtype)


def _batch_flatten_np(attrs, args, out_type):
    x = args[0]
    return x.reshape(x.shape[0], -1)


def _hw_axes(layout, ndim, op_name):
    axes = parse_layout(layout, op_name)
    names = [n for n, _ in axes]
    if len(axes) != ndim or "H" not in names or "W" not in names:
        raise TypeError(f"{op_name}: layout {layout} does not fit a rank-{ndim} tensor with H "
                        f"and W axes")
    return names.index("H"), names.index("W")


def _scaled(d, scale):
    if is_static_dim(d):
        return int(round(d * float(scale)))
    if float(scale).is_integer() and not isinstance(d, Any):
        return d * int(scale)
    return Any()


def upsampling_rel(arg_types, attrs, op_name: str = "nn.upsampling"):
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    h, w = _hw_axes(attrs.layout, len(data.shape), op_name)
    if attrs.method not in ("nearest_neighbor", "bilinear", "bicubic"):
        raise ValueError(f"{op_name}: unknown method {attrs.method!r}")
    shape = list(data.shape)
    shape[h] = _scaled(shape[h], attrs.scale_h)
    shape[w] = _scaled(shape[w], attrs.scale_w)
    return TensorType(shape, data.dtype)


def _source_coords(n_out, n_in, align_corners):
    o = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return o * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    return o * (n_in / n_out)


def _upsampling_np(attrs, args, out_type):
    x = args[0]
    h, w = _hw_axes(attrs.layout, x.ndim, "nn.upsampling")
    oh, ow = (int(out_type.shape[h]), int(out_type.shape[w]))
    ih, iw = x.shape[h], x.shape[w]
    ch = _source_coords(oh, ih, attrs.align_corners)
    cw = _source_coords(ow, iw, attrs.align_corners)
    if attrs.method == "nearest_neighbor":
        rnd = np.round if attrs.align_corners else np.floor
        ih_idx = np.minimum(rnd(ch).astype(np.int64), ih - 1)
        iw_idx = np.minimum(rnd(cw).astype(np.int64), iw - 1)
        return np.take(np.take(x, ih_idx, axis=h), iw_idx, axis=w)
    if attrs.method != "bilinear":
        raise NotImplementedError(f"nn.upsampling: method {attrs.method!r} has no numpy "
                                  f"reference")
    out = x.astype(np.float64)
    for axis, coords, n in ((h, ch, ih), (w, cw, iw)):
        lo = np.clip(np.floor(coords).astype(np.int64), 0, n - 1)
        hi = np.minimum(lo + 1, n - 1)
        frac = coords - np.floor(coords)
        shape = [1] * x.ndim
        shape[axis] = -1
        frac = frac.reshape(shape)
        out = np.take(out, lo, axis=axis) * (1 - frac) + np.take(out, hi, axis=axis) * frac
    return out.astype(x.dtype)


define_op("nn.pad", pad_rel, _pad_np, OpPattern.INJECTIVE, A.PadAttrs, 2,
          "Pad a tensor with a constant, its edge values or a reflection.")
define_op("nn.batch_flatten", _batch_flatten_rel, _batch_flatten_np, OpPattern.INJECTIVE, None,
          1, "Flatten all dims but the first.")
define_op("nn.upsampling", upsampling_rel, _upsampling_np, OpPattern.INJECTIVE,
          A.UpSamplingAttrs, 1, "Upsample H and W by scale factors.")

__all__ = ["pad_rel", "upsampling_rel"]
