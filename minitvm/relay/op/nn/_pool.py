"""Pooling: nn.max_pool2d, nn.avg_pool2d (and 1d), global and adaptive 2d pooling.

Pooling works in the input layout (NCHW, NHWC, NCHW16c, ...): the H and W axes are found in the
layout string and the window slides over them with ``sliding_window_view``.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ..op import define_op
from ..type_relations import check_num_args, tensor_arg
from . import attrs as A
from ._utils import arith, check_positive, check_window_attrs, pad_tuple, parse_layout

_NAMES = {"H": "height", "W": "width"}


def _spatial_axes(layout: str, ndim: int, spatial: str, op_name: str) -> list[int]:
    axes = parse_layout(layout, op_name)
    if len(axes) != ndim:
        raise TypeError(f"{op_name}: input has rank {ndim} but layout {layout} has {len(axes)} "
                        f"axes")
    names = [n for n, _ in axes]
    out = []
    for a in spatial:
        if a not in names:
            raise ValueError(f"{op_name}: layout {layout} has no {a} axis")
        if a.lower() in names:
            raise ValueError(f"{op_name}: layout {layout} splits the pooled axis {a}")
        out.append(names.index(a))
    return out


def _as_tuple(v, n):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(x) for x in v)
    return v * n if len(v) == 1 else v


def _pool_out(size, k, pb, pa, stride, dilation, ceil_mode):
    dk = (k - 1) * dilation + 1
    if ceil_mode:
        return arith(lambda s: (s + pb + pa - dk + stride - 1) // stride + 1, size)
    return arith(lambda s: (s + pb + pa - dk) // stride + 1, size)


def pool_rel(arg_types, attrs, op_name: str = "nn.max_pool2d", spatial: str = "HW"):
    """Output type of max/avg pooling in the input layout."""
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    nd = len(spatial)
    idx = _spatial_axes(attrs.layout, len(data.shape), spatial, op_name)
    pool = _as_tuple(attrs.pool_size, nd)
    strides = _as_tuple(attrs.strides, nd)
    dilation = _as_tuple(attrs.dilation, nd)
    pad = pad_tuple(attrs.padding, nd, op_name)
    check_window_attrs(op_name, nd, pad, pool_size=pool, strides=strides, dilation=dilation)
    shape = list(data.shape)
    for i, a in enumerate(spatial):
        shape[idx[i]] = _pool_out(shape[idx[i]], pool[i], pad[i], pad[i + nd], strides[i],
                                  dilation[i], attrs.ceil_mode)
        check_positive(op_name, f"output {_NAMES.get(a, a)}", shape[idx[i]])
    return TensorType(shape, data.dtype)


def _pool_np(attrs, args, out_type, kind: str, spatial: str = "HW"):
    x = args[0]
    nd = len(spatial)
    idx = _spatial_axes(attrs.layout, x.ndim, spatial, "pool")
    pool = _as_tuple(attrs.pool_size, nd)
    strides = _as_tuple(attrs.strides, nd)
    dilation = _as_tuple(attrs.dilation, nd)
    pad = pad_tuple(attrs.padding, nd)
    lead = x.ndim - nd
    x = np.moveaxis(x, idx, list(range(lead, x.ndim)))
    sizes = x.shape[lead:]
    outs = [_pool_out(s, pool[i], pad[i], pad[i + nd], strides[i], dilation[i], attrs.ceil_mode)
            for i, s in enumerate(sizes)]
    dks = [(pool[i] - 1) * dilation[i] + 1 for i in range(nd)]
    # extra padding at the end so that ceil-mode windows fit
    extra = [max(0, (outs[i] - 1) * strides[i] + dks[i] - (sizes[i] + pad[i] + pad[i + nd]))
             for i in range(nd)]
    widths = [(0, 0)] * lead + [(pad[i], pad[i + nd] + extra[i]) for i in range(nd)]
    sl = tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d)
                                                                for d in dilation)
    cut = (Ellipsis,) + tuple(slice(0, o) for o in outs) + (slice(None),) * nd
    axes = tuple(range(-nd, 0))
    if kind == "max":
        if np.issubdtype(x.dtype, np.floating):
            low = -np.inf
        elif x.dtype == np.bool_:
            low = False
        else:
            low = np.iinfo(x.dtype).min
        xp = np.pad(x, widths, constant_values=low)
        win = sliding_window_view(xp, dks, axis=tuple(range(lead, x.ndim)))
        res = win[(Ellipsis,) + sl][cut].max(axis=axes)
    else:
        acc = np.float64 if x.dtype == np.float64 else np.float32
        xp = np.pad(x.astype(acc), widths)
        win = sliding_window_view(xp, dks, axis=tuple(range(lead, x.ndim)))
        total = win[(Ellipsis,) + sl][cut].sum(axis=axes)
        mask = np.zeros([s + w[0] + w[1] for s, w in zip(sizes, widths[lead:])], dtype=acc)
        if attrs.count_include_pad:
            region = tuple(slice(0, sizes[i] + pad[i] + pad[i + nd]) for i in range(nd))
        else:
            region = tuple(slice(pad[i], pad[i] + sizes[i]) for i in range(nd))
        mask[region] = 1
        mwin = sliding_window_view(mask, dks)[sl][tuple(slice(0, o) for o in outs)]
        count = np.maximum(mwin.sum(axis=axes), 1)
        res = total / count
        if np.issubdtype(x.dtype, np.integer):
            res = np.floor(res)
    res = res.astype(x.dtype, copy=False)
    return np.ascontiguousarray(np.moveaxis(res, list(range(lead, x.ndim)), idx))


# --------------------------------------------------------------------------- global / adaptive
def adaptive_rel(arg_types, attrs, op_name: str = "nn.adaptive_avg_pool2d"):
    """Output type of adaptive pooling: H and W become ``output_size`` (global: 1)."""
    check_num_args(op_name, arg_types, 1)
    data = tensor_arg(arg_types, 0, op_name)
    idx = _spatial_axes(attrs.layout, len(data.shape), "HW", op_name)
    size = _output_size(attrs, data.shape, idx, op_name)
    shape = list(data.shape)
    for i, d in zip(idx, size):
        shape[i] = d
    return TensorType(shape, data.dtype)


def _output_size(attrs, shape, idx, op_name):
    if "output_size" not in attrs:
        return (1, 1)
    size = tuple(attrs.output_size or ())
    if len(size) == 0:
        return tuple(shape[i] for i in idx)
    if len(size) == 1:
        return size * 2
    if len(size) != 2:
        raise ValueError(f"{op_name}: output_size must have 1 or 2 values, got {list(size)}")
    return tuple(shape[i] if s is None else s for s, i in zip(size, idx))


def _adaptive_np(attrs, args, out_type, kind: str):
    x = args[0]
    idx = _spatial_axes(attrs.layout, x.ndim, "HW", "pool")
    oh, ow = (int(d) for d in _output_size(attrs, x.shape, idx, "pool"))
    x = np.moveaxis(x, idx, [x.ndim - 2, x.ndim - 1])
    h, w = x.shape[-2:]
    reduce = np.max if kind == "max" else np.mean
    if h % oh == 0 and w % ow == 0:
        blocks = x.reshape(x.shape[:-2] + (oh, h // oh, ow, w // ow))
        res = reduce(blocks, axis=(-3, -1))
    else:
        res = np.empty(x.shape[:-2] + (oh, ow), dtype=np.result_type(x, np.float32)
                       if kind == "avg" else x.dtype)
        for i in range(oh):
            h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
            for j in range(ow):
                w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
                res[..., i, j] = reduce(x[..., h0:h1, w0:w1], axis=(-2, -1))
    res = res.astype(x.dtype, copy=False)
    return np.ascontiguousarray(np.moveaxis(res, [x.ndim - 2, x.ndim - 1], idx))


def _def_pool(name, kind, attrs_type, spatial):
    def rel(arg_types, attrs):
        return pool_rel(arg_types, attrs, name, spatial)

    def impl(attrs, args, out_type):
        return _pool_np(attrs, args, out_type, kind, spatial)

    rel.__name__ = f"pool_rel[{name}]"
    define_op(name, rel, impl, OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type, 1,
              f"{kind} pooling over {spatial}.")


def _def_adaptive(name, kind, attrs_type):
    def rel(arg_types, attrs):
        return adaptive_rel(arg_types, attrs, name)

    def impl(attrs, args, out_type):
        return _adaptive_np(attrs, args, out_type, kind)

    rel.__name__ = f"adaptive_rel[{name}]"
    define_op(name, rel, impl, OpPattern.OUT_ELEMWISE_FUSABLE, attrs_type, 1,
              f"{kind} pooling to a fixed output size.")


_def_pool("nn.max_pool2d", "max", A.MaxPool2DAttrs, "HW")
_def_pool("nn.avg_pool2d", "avg", A.AvgPool2DAttrs, "HW")
_def_pool("nn.max_pool1d", "max", A.MaxPool1DAttrs, "W")
_def_pool("nn.avg_pool1d", "avg", A.AvgPool1DAttrs, "W")
_def_adaptive("nn.global_max_pool2d", "max", A.GlobalPool2DAttrs)
_def_adaptive("nn.global_avg_pool2d", "avg", A.GlobalPool2DAttrs)
_def_adaptive("nn.adaptive_max_pool2d", "max", A.AdaptivePool2DAttrs)
_def_adaptive("nn.adaptive_avg_pool2d", "avg", A.AdaptivePool2DAttrs)

__all__ = ["pool_rel", "adaptive_rel"]
