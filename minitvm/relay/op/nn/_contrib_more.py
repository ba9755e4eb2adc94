"""nn.contrib_depthwise_conv2d_NCHWc, nn.contrib_dense_pack, nn.internal.sparse_dense_padded,
nn.sparse_add and nn.sparse_transpose with TVM's attrs, type relations and constructors
(numpy references: ``minitvm.topi.reference.contrib_more``)."""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType, TupleType
from ...expr import Call, Expr, TupleWrapper, const
from ..op import define_op, register_numpy_only
from ..type_relations import check_num_args, dims_equal, is_static_dim, tensor_arg, type_str
from . import attrs as A
from ._conv import conv_rel
from ._dense import sparse_dense_rel
from ._utils import arith
from .nn import _conv2d_attrs

__all__ = ["DensePackAttrs", "contrib_depthwise_conv2d_nchwc", "contrib_dense_pack",
           "sparse_add", "sparse_transpose"]


class DensePackAttrs(Attrs):
    __slots__ = ()
    _fields = (("units", A.REQUIRED), ("out_dtype", ""), ("weight_layout", "NC"))


def _depthwise_rel(arg_types, attrs):
    return conv_rel(arg_types, attrs, "nn.contrib_depthwise_conv2d_NCHWc", 2)


def _padded_rel(arg_types, attrs):
    return sparse_dense_rel(arg_types, attrs, "nn.internal.sparse_dense_padded")


def _dense_pack_rel(arg_types, attrs):
    op_name = "nn.contrib_dense_pack"
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    w = tensor_arg(arg_types, 1, op_name)
    if len(data.shape) != 2 or len(w.shape) not in (2, 3, 4):
        raise TypeError(f"{op_name}: expects 2-D data and (N, K), packed (N/n, K, n) or "
                        f"(N/n, K/k, n, k) weights, got {type_str(data)} and {type_str(w)}")
    k = w.shape[1] if len(w.shape) < 4 else arith(lambda a, b: a * b, w.shape[1], w.shape[3])
    if not dims_equal(data.shape[1], k):
        raise TypeError(f"{op_name}: data {type_str(data)} and weight {type_str(w)} disagree "
                        f"on the reduction length")
    n = w.shape[0] if len(w.shape) == 2 else arith(lambda a, b: a * b, w.shape[0], w.shape[2])
    if attrs.units is not None and attrs.units is not A.REQUIRED and is_static_dim(n) and \
            int(attrs.units) != n:
        raise TypeError(f"{op_name}: units={attrs.units} does not match the weight's {n} rows")
    return TensorType((data.shape[0], n), attrs.out_dtype or data.dtype)


def _csr_args(arg_types, first, op_name):
    sdata, sind, sptr = (tensor_arg(arg_types, i, op_name) for i in (first, first + 1,
                                                                         first + 2))
    if len(sdata.shape) != 1 or len(sind.shape) != 1 or len(sptr.shape) != 1:
        raise TypeError(f"{op_name}: expects a CSR matrix (1-D data, indices and indptr), got "
                        f"{type_str(sdata)}, {type_str(sind)} and {type_str(sptr)}")
    return sdata, sind, sptr


def _sparse_add_rel(arg_types, attrs):
    op_name = "nn.sparse_add"
    check_num_args(op_name, arg_types, 4)
    dense = tensor_arg(arg_types, 0, op_name)
    sdata, _, sptr = _csr_args(arg_types, 1, op_name)
    if len(dense.shape) != 2:
        raise TypeError(f"{op_name}: the dense operand must be 2-D, got {type_str(dense)}")
    if is_static_dim(sptr.shape[0]) and is_static_dim(dense.shape[0]) and \
            sptr.shape[0] != dense.shape[0] + 1:
        raise TypeError(f"{op_name}: indptr {type_str(sptr)} does not fit {dense.shape[0]} "
                        f"rows of {type_str(dense)}")
    if sdata.dtype != dense.dtype:
        raise TypeError(f"{op_name}: sparse data dtype {sdata.dtype} differs from the dense "
                        f"operand's {dense.dtype}")
    return TensorType(dense.shape, dense.dtype)


def _sparse_transpose_rel(arg_types, attrs):
    op_name = "nn.sparse_transpose"
    check_num_args(op_name, arg_types, 3)
    sdata, sind, sptr = _csr_args(arg_types, 0, op_name)
    return TupleType([TensorType(sdata.shape, sdata.dtype), TensorType(sind.shape, sind.dtype),
                      TensorType(sptr.shape, sptr.dtype)])


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
define_op("nn.contrib_depthwise_conv2d_NCHWc", _depthwise_rel, pattern=_FUSABLE,
          attrs_type=A.Conv2DAttrs, num_inputs=2,
          describe="Depthwise 2D convolution on packed NCHW{x}c data.")
define_op("nn.internal.sparse_dense_padded", _padded_rel, pattern=_FUSABLE,
          attrs_type=A.SparseDenseAttrs, num_inputs=4,
          describe="sparse_dense on rows padded for the GPU schedule.")
define_op("nn.contrib_dense_pack", _dense_pack_rel, pattern=_FUSABLE, attrs_type=DensePackAttrs,
          num_inputs=2, describe="Dense with packed (N/n, K, n) weights.")
define_op("nn.sparse_add", _sparse_add_rel, pattern=OpPattern.OPAQUE, num_inputs=4,
          describe="Dense + CSR sparse matrix.")
define_op("nn.sparse_transpose", _sparse_transpose_rel, pattern=OpPattern.OPAQUE, num_inputs=3,
          describe="Transpose of a square CSR matrix.")


def contrib_depthwise_conv2d_nchwc(data: Expr, kernel: Expr, strides=(1, 1), padding=(0, 0),
                                   dilation=(1, 1), groups: int = 1, channels=None,
                                   kernel_size=None, data_layout: str = "NCHW8c",
                                   kernel_layout: str = "OIHW", out_layout: str = "",
                                   out_dtype: str = "") -> Call:
    attrs = _conv2d_attrs(strides, padding, dilation, groups, channels, kernel_size, data_layout,
                          kernel_layout, out_layout, out_dtype)
    return Call(Op.get("nn.contrib_depthwise_conv2d_NCHWc"), [data, kernel], attrs)


def contrib_dense_pack(data: Expr, weight: Expr, weight_layout: str = "NC", units=None,
                       out_dtype: str = "") -> Call:
    attrs = DensePackAttrs(units=None if units is None else int(units), out_dtype=out_dtype,
                           weight_layout=weight_layout)
    return Call(Op.get("nn.contrib_dense_pack"), [data, weight], attrs)


def _csr_parts(sparse_mat):
    parts = ([sparse_mat.data, sparse_mat.indices, sparse_mat.indptr]
             if hasattr(sparse_mat, "indices") else list(sparse_mat))
    return [p if isinstance(p, Expr) else const(np.asarray(p)) for p in parts]


def sparse_add(dense_mat: Expr, sparse_mat) -> Call:
    """``dense + sparse``; ``sparse_mat`` is (data, indices, indptr) or has those fields."""
    return Call(Op.get("nn.sparse_add"), [dense_mat, *_csr_parts(sparse_mat)])


def sparse_transpose(x) -> TupleWrapper:
    """The transpose of a square CSR matrix, as (data, indices, indptr)."""
    return TupleWrapper(Call(Op.get("nn.sparse_transpose"), _csr_parts(x)), 3)

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("nn.sparse_add", "sparse operand: work depends on the non-zero pattern")
