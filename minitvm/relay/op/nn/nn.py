"""``relay.nn`` constructors with TVM's signatures and argument normalizations.

As in TVM's Python wrappers, ints become tuples and conv/pool padding is expanded to four values
(top, left, bottom, right), so ``relay.nn.conv2d(x, w)`` prints ``padding=[0, 0, 0, 0]``.
"""

from __future__ import annotations

import numpy as np

from ....ir.op import Op
from ...expr import Call, Constant, Expr, TupleWrapper, const
from . import attrs as A

__all__ = [
    "conv1d", "conv2d", "conv2d_transpose", "contrib_conv2d_nchwc", "dense", "matmul",
    "batch_matmul", "sparse_dense", "bias_add", "relu", "leaky_relu", "prelu", "softmax",
    "fast_softmax", "log_softmax", "dropout", "dropout_raw", "batch_norm", "layer_norm",
    "group_norm", "instance_norm", "lrn", "l2_normalize", "max_pool1d", "avg_pool1d",
    "max_pool2d", "avg_pool2d", "global_max_pool2d", "global_avg_pool2d", "adaptive_max_pool2d",
    "adaptive_avg_pool2d", "pad", "batch_flatten", "upsampling", "get_pad_tuple2d",
]


def _call(op_name: str, args, attrs=None) -> Call:
    return Call(Op.get(op_name), list(args), attrs)


def _tup(value, n: int):
    """An int becomes an n-tuple; sequences (incl. tvm Arrays) become tuples."""
    if isinstance(value, int | np.integer):
        return (int(value),) * n
    return tuple(value)


def get_pad_tuple2d(padding) -> tuple:
    """1 int, 2 values (h, w) or 4 values (top, left, bottom, right) -> 4 values."""
    if isinstance(padding, int | np.integer):
        return (int(padding),) * 4
    padding = tuple(padding)
    if len(padding) == 2:
        return padding + padding
    if len(padding) == 4:
        return padding
    raise ValueError(f"Size of padding can only be 2 or 4, got {len(padding)}: {padding}")


def _get_pad_tuple1d(padding) -> tuple:
    if isinstance(padding, int | np.integer):
        return (int(padding),) * 2
    padding = tuple(padding)
    if len(padding) == 1:
        return padding * 2
    if len(padding) == 2:
        return padding
    raise ValueError(f"Size of padding can only be 1 or 2, got {len(padding)}: {padding}")


# --------------------------------------------------------------------------- convolutions
def conv1d(data: Expr, weight: Expr, strides=1, padding=0, dilation=1, groups=1, channels=None,
           kernel_size=None, data_layout="NCW", kernel_layout="OIW", out_layout="",
           out_dtype="") -> Call:
    """1D convolution."""
    if kernel_size is not None:
        kernel_size = _tup(kernel_size, 1)
    attrs = A.Conv1DAttrs(
        strides=_tup(strides, 1), padding=_get_pad_tuple1d(padding), dilation=_tup(dilation, 1),
        groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )
    return _call("nn.conv1d", [data, weight], attrs)


def _conv2d_attrs(strides, padding, dilation, groups, channels, kernel_size, data_layout,
                  kernel_layout, out_layout, out_dtype):
    if kernel_size is not None:
        kernel_size = _tup(kernel_size, 2)
    return A.Conv2DAttrs(
        strides=_tup(strides, 2), padding=get_pad_tuple2d(padding), dilation=_tup(dilation, 2),
        groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )


def conv2d(data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="OIHW",
           out_layout="", out_dtype="") -> Call:
    """2D convolution; ``padding`` takes 1, 2 or 4 values, stored as 4."""
    attrs = _conv2d_attrs(strides, padding, dilation, groups, channels, kernel_size, data_layout,
                          kernel_layout, out_layout, out_dtype)
    return _call("nn.conv2d", [data, weight], attrs)


def contrib_conv2d_nchwc(data: Expr, kernel: Expr, strides=(1, 1), padding=(0, 0),
                         dilation=(1, 1), groups=1, channels=None, kernel_size=None,
                         data_layout="NCHW8c", kernel_layout="OIHW", out_layout="",
                         out_dtype="") -> Call:
    """2D convolution on packed data (``NCHW{x}c``) and weights (``OIHW{y}i{z}o``)."""
    attrs = _conv2d_attrs(strides, padding, dilation, groups, channels, kernel_size, data_layout,
                          kernel_layout, out_layout, out_dtype)
    return _call("nn.contrib_conv2d_NCHWc", [data, kernel], attrs)


def conv2d_transpose(data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                     groups=1, channels=None, kernel_size=None, data_layout="NCHW",
                     kernel_layout="IOHW", out_layout="", output_padding=(0, 0),
                     out_dtype="") -> Call:
    """Transposed 2D convolution; the weight is (in_channels, out_channels / groups, kh, kw)."""
    if kernel_size is not None:
        kernel_size = _tup(kernel_size, 2)
    attrs = A.Conv2DTransposeAttrs(
        channels=channels, kernel_size=kernel_size, strides=_tup(strides, 2),
        output_padding=_tup(output_padding, 2), padding=get_pad_tuple2d(padding),
        dilation=_tup(dilation, 2), groups=groups, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )
    return _call("nn.conv2d_transpose", [data, weight], attrs)


# --------------------------------------------------------------------------- matrix products
def dense(data: Expr, weight: Expr, units=None, out_dtype="") -> Call:
    """``data @ weight.T`` with weight (units, input_dim)."""
    return _call("nn.dense", [data, weight], A.DenseAttrs(units=units, out_dtype=out_dtype))


def matmul(tensor_a: Expr, tensor_b: Expr, units=None, out_dtype="", transpose_a=False,
           transpose_b=False) -> Call:
    """``A @ B`` with optional transposes; (A, B^T) is emitted as ``nn.dense`` as TVM does."""
    if not transpose_a and transpose_b:
        return dense(tensor_a, tensor_b, units, out_dtype)
    attrs = A.MatmulAttrs(units=units, out_dtype=out_dtype, transpose_a=transpose_a,
                          transpose_b=transpose_b)
    return _call("nn.matmul", [tensor_a, tensor_b], attrs)


def batch_matmul(tensor_a: Expr, tensor_b: Expr, out_dtype="", transpose_a=False,
                 transpose_b=True) -> Call:
    """Batched product; by default B is (batch, N, K) (``transpose_b=True``)."""
    attrs = A.BatchMatmulAttrs(out_dtype=out_dtype, transpose_a=transpose_a,
                               transpose_b=transpose_b)
    return _call("nn.batch_matmul", [tensor_a, tensor_b], attrs)


def sparse_dense(dense_mat: Expr, sparse_mat, sparse_lhs=False) -> Call:
    """``dense @ sparse.T``; ``sparse_mat`` is (data, indices, indptr) or has those fields."""
    if hasattr(sparse_mat, "indices"):
        parts = [sparse_mat.data, sparse_mat.indices, sparse_mat.indptr]
    else:
        parts = list(sparse_mat)
    parts = [p if isinstance(p, Expr) else const(np.asarray(p)) for p in parts]
    return _call("nn.sparse_dense", [dense_mat, *parts],
                 A.SparseDenseAttrs(sparse_lhs=sparse_lhs))


# --------------------------------------------------------------------------- activations
def bias_add(data: Expr, bias: Expr, axis=1) -> Call:
    return _call("nn.bias_add", [data, bias], A.BiasAddAttrs(axis=axis))


def relu(data: Expr) -> Call:
    return _call("nn.relu", [data])


def leaky_relu(data: Expr, alpha=0.01) -> Call:
    return _call("nn.leaky_relu", [data], A.LeakyReluAttrs(alpha=float(alpha)))


def prelu(data: Expr, alpha: Expr, axis=1) -> Call:
    return _call("nn.prelu", [data, alpha], A.PReluAttrs(axis=axis))


def softmax(data: Expr, axis=-1) -> Call:
    return _call("nn.softmax", [data], A.SoftmaxAttrs(axis=axis))


def fast_softmax(data: Expr, axis=-1) -> Call:
    return _call("nn.fast_softmax", [data], A.SoftmaxAttrs(axis=axis))


def log_softmax(data: Expr, axis=-1) -> Call:
    return _call("nn.log_softmax", [data], A.SoftmaxAttrs(axis=axis))


def dropout_raw(data: Expr, rate=0.5) -> Call:
    """The ``nn.dropout`` call itself: a (output, mask) tuple."""
    return _call("nn.dropout", [data], A.DropoutAttrs(rate=float(rate)))


def dropout(data: Expr, rate=0.5):
    """The output (field 0) of ``nn.dropout``."""
    return TupleWrapper(dropout_raw(data, rate), 2)[0]


# --------------------------------------------------------------------------- normalization
def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True,
               scale=True) -> TupleWrapper:
    """Batch normalization; a TupleWrapper of (output, moving_mean, moving_var)."""
    attrs = A.BatchNormAttrs(axis=axis, epsilon=float(epsilon), center=center, scale=scale)
    call = _call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var], attrs)
    return TupleWrapper(call, 3)


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True) -> Call:
    attrs = A.LayerNormAttrs(axis=axis, epsilon=float(epsilon), center=center, scale=scale)
    return _call("nn.layer_norm", [data, gamma, beta], attrs)


def group_norm(data, gamma, beta, num_groups, axis=1, epsilon=1e-5, center=True,
               scale=True) -> Call:
    attrs = A.GroupNormAttrs(num_groups=num_groups, axis=axis, epsilon=float(epsilon),
                             center=center, scale=scale)
    return _call("nn.group_norm", [data, gamma, beta], attrs)


def instance_norm(data, gamma, beta, axis=1, epsilon=1e-5, center=True, scale=True) -> Call:
    attrs = A.InstanceNormAttrs(axis=axis, epsilon=float(epsilon), center=center, scale=scale)
    return _call("nn.instance_norm", [data, gamma, beta], attrs)


def lrn(data, size=5, axis=1, bias=2, alpha=0.00001, beta=0.75) -> Call:
    attrs = A.LRNAttrs(size=size, axis=axis, bias=float(bias), alpha=float(alpha),
                       beta=float(beta))
    return _call("nn.lrn", [data], attrs)


def l2_normalize(data, eps, axis=None) -> Call:
    axis = () if axis is None else _tup(axis, 1)
    return _call("nn.l2_normalize", [data], A.L2NormalizeAttrs(eps=float(eps), axis=axis))


# --------------------------------------------------------------------------- pooling
def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False) -> Call:
    attrs = A.MaxPool2DAttrs(pool_size=_tup(pool_size, 2), strides=_tup(strides, 2),
                             dilation=_tup(dilation, 2), padding=get_pad_tuple2d(padding),
                             layout=layout, out_layout=out_layout, ceil_mode=ceil_mode)
    return _call("nn.max_pool2d", [data], attrs)


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False, count_include_pad=False) -> Call:
    attrs = A.AvgPool2DAttrs(pool_size=_tup(pool_size, 2), strides=_tup(strides, 2),
                             dilation=_tup(dilation, 2), padding=get_pad_tuple2d(padding),
                             layout=layout, out_layout=out_layout, ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad)
    return _call("nn.avg_pool2d", [data], attrs)


def max_pool1d(data, pool_size=(1,), strides=(1,), dilation=(1,), padding=(0,), layout="NCW",
               out_layout="", ceil_mode=False) -> Call:
    attrs = A.MaxPool1DAttrs(pool_size=_tup(pool_size, 1), strides=_tup(strides, 1),
                             dilation=_tup(dilation, 1), padding=_tup(padding, 1),
                             layout=layout, out_layout=out_layout, ceil_mode=ceil_mode)
    return _call("nn.max_pool1d", [data], attrs)


def avg_pool1d(data, pool_size=(1,), strides=(1,), dilation=(1,), padding=(0,), layout="NCW",
               out_layout="", ceil_mode=False, count_include_pad=False) -> Call:
    attrs = A.AvgPool1DAttrs(pool_size=_tup(pool_size, 1), strides=_tup(strides, 1),
                             dilation=_tup(dilation, 1), padding=_tup(padding, 1),
                             layout=layout, out_layout=out_layout, ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad)
    return _call("nn.avg_pool1d", [data], attrs)


def global_max_pool2d(data, layout="NCHW", out_layout="") -> Call:
    return _call("nn.global_max_pool2d", [data],
                 A.GlobalPool2DAttrs(layout=layout, out_layout=out_layout))


def global_avg_pool2d(data, layout="NCHW", out_layout="") -> Call:
    return _call("nn.global_avg_pool2d", [data],
                 A.GlobalPool2DAttrs(layout=layout, out_layout=out_layout))


def _output_size(output_size):
    if output_size is None:
        return ()
    if isinstance(output_size, int | np.integer):
        return (int(output_size),)
    return tuple(output_size)


def adaptive_max_pool2d(data, output_size=None, layout="NCHW", out_layout="") -> Call:
    attrs = A.AdaptivePool2DAttrs(output_size=_output_size(output_size), layout=layout,
                                  out_layout=out_layout)
    return _call("nn.adaptive_max_pool2d", [data], attrs)


def adaptive_avg_pool2d(data, output_size=None, layout="NCHW", out_layout="") -> Call:
    attrs = A.AdaptivePool2DAttrs(output_size=_output_size(output_size), layout=layout,
                                  out_layout=out_layout)
    return _call("nn.adaptive_avg_pool2d", [data], attrs)


# --------------------------------------------------------------------------- shape ops
def pad(data, pad_width, pad_value=0, pad_mode="constant") -> Call:
    """Pad ``data``; ``pad_width`` is ((before, after), ...) per axis; pad_value a scalar."""
    if isinstance(pad_value, Constant):
        pad_value = pad_value.data.numpy().item()
    if isinstance(pad_width, Constant):
        pad_width = [list(w) for w in pad_width.data.numpy()]
    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    if isinstance(pad_width, Expr):
        from ..dyn import nn as _dyn_nn

        return _dyn_nn.pad(data, pad_width, pad_value, pad_mode)
    widths = tuple(tuple(int(v) for v in w) for w in pad_width)
    return _call("nn.pad", [data, pad_value], A.PadAttrs(pad_width=widths, pad_mode=pad_mode))


def batch_flatten(data) -> Call:
    return _call("nn.batch_flatten", [data])


def upsampling(data, scale_h=1, scale_w=1, layout="NCHW", method="nearest_neighbor",
               align_corners=False) -> Call:
    """Upsample H and W; a non-constant scale expression builds ``dyn.nn.upsampling``."""
    if isinstance(scale_h, Constant):
        scale_h = scale_h.data.numpy().item()
    if isinstance(scale_w, Constant):
        scale_w = scale_w.data.numpy().item()
    if isinstance(scale_h, Expr) or isinstance(scale_w, Expr):
        from ..dyn import _more as _dyn

        return _dyn.upsampling(data, scale_h, scale_w, layout, method, align_corners)
    attrs = A.UpSamplingAttrs(scale_h=float(scale_h), scale_w=float(scale_w), layout=layout,
                              method=method, align_corners=align_corners)
    return _call("nn.upsampling", [data], attrs)
