"""nn.bitpack and nn.sparse_conv2d with TVM's attrs, type relations and constructors (numpy
references: ``minitvm.topi.reference.bit_sparse``)."""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ...expr import Call, Expr, const
from ..op import define_op
from ..type_relations import check_num_args, is_static_dim, normalize_axis, tensor_arg, type_str
from ._utils import arith

__all__ = ["BitPackAttrs", "SparseConv2DAttrs", "bitpack", "sparse_conv2d"]

_WIDTH = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "int8": 8, "int16": 16,
          "int32": 32, "int64": 64}


class BitPackAttrs(Attrs):
    __slots__ = ()
    _fields = (("bits", 1), ("pack_axis", 1), ("bit_axis", -1), ("pack_type", "uint32"),
               ("name", "BitPack"))


class SparseConv2DAttrs(Attrs):
    __slots__ = ()
    _fields = (("layout", "NHWC"), ("kernel_size", (1, 1)))


def _bitpack_rel(arg_types, attrs):
    op_name = "nn.bitpack"
    check_num_args(op_name, arg_types, 1)
    x = tensor_arg(arg_types, 0, op_name)
    nd = len(x.shape)
    if attrs.pack_type not in _WIDTH:
        raise TypeError(f"{op_name}: pack_type must be an integer type, got {attrs.pack_type!r}")
    width = _WIDTH[attrs.pack_type]
    pack_axis = normalize_axis(int(attrs.pack_axis), nd, op_name)
    bit_axis = normalize_axis(int(attrs.bit_axis), nd + 1, op_name)
    d = x.shape[pack_axis]
    if is_static_dim(d) and d % width:
        raise TypeError(f"{op_name}: axis {pack_axis} of {type_str(x)} is not a multiple of the "
                        f"{width}-bit word")
    if int(attrs.bits) < 1:
        raise ValueError(f"{op_name}: bits must be positive, got {attrs.bits}")
    shape = list(x.shape)
    shape[pack_axis] = arith(lambda v: v // width, d)
    shape.insert(bit_axis, int(attrs.bits))
    return TensorType(tuple(shape), attrs.pack_type)


def _sparse_conv2d_rel(arg_types, attrs):
    op_name = "nn.sparse_conv2d"
    check_num_args(op_name, arg_types, 4)
    data = tensor_arg(arg_types, 0, op_name)
    wdata, wind, wptr = (tensor_arg(arg_types, i, op_name) for i in (1, 2, 3))
    ks = tuple(int(k) for k in attrs.kernel_size)
    if attrs.layout not in ("NHWC", "NCHW") or len(data.shape) != 4:
        raise TypeError(f"{op_name}: expects 4-D NHWC or NCHW data, got {type_str(data)} with "
                        f"layout {attrs.layout!r}")
    if ks not in ((1, 1), (3, 3)) or (ks == (3, 3) and attrs.layout != "NHWC"):
        raise ValueError(f"{op_name}: supports 1x1 kernels, and 3x3 in NHWC, got {list(ks)} "
                         f"in {attrs.layout}")
    if len(wdata.shape) not in (1, 3) or len(wind.shape) != 1 or len(wptr.shape) != 1:
        raise TypeError(f"{op_name}: the weight must be CSR (1-D data) or BSR (3-D data), got "
                        f"{type_str(wdata)}")
    out_ch = arith(lambda p: p - 1, wptr.shape[0])
    if len(wdata.shape) == 3:
        out_ch = arith(lambda r, b: r * b, out_ch, wdata.shape[1])
    n = data.shape[0]
    if attrs.layout == "NHWC":
        return TensorType((n, data.shape[1], data.shape[2], out_ch), data.dtype)
    return TensorType((n, out_ch, data.shape[2], data.shape[3]), data.dtype)


define_op("nn.bitpack", _bitpack_rel, pattern=OpPattern.INJECTIVE, attrs_type=BitPackAttrs,
          num_inputs=1, describe="Pack bit planes of integers into words.")
define_op("nn.sparse_conv2d", _sparse_conv2d_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=SparseConv2DAttrs, num_inputs=4,
          describe="1x1 (or 3x3 NHWC) convolution by a sparse weight matrix.")


def bitpack(data: Expr, bits: int = 1, pack_axis: int = 1, bit_axis: int = 2,
            pack_type: str = "uint32", name: str = "BitPack") -> Call:
    attrs = BitPackAttrs(bits=int(bits), pack_axis=int(pack_axis), bit_axis=int(bit_axis),
                         pack_type=pack_type, name=name)
    return Call(Op.get("nn.bitpack"), [data], attrs)


def sparse_conv2d(dense_data: Expr, sparse_kernel, layout: str = "NHWC", kernel_size=1) -> Call:
    """Convolution by ``sparse_kernel`` = (data, indices, indptr) of an (O, k*k*C) matrix."""
    parts = ([sparse_kernel.data, sparse_kernel.indices, sparse_kernel.indptr]
             if hasattr(sparse_kernel, "indices") else list(sparse_kernel))
    parts = [p if isinstance(p, Expr) else const(np.asarray(p)) for p in parts]
    ks = (int(kernel_size),) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
    return Call(Op.get("nn.sparse_conv2d"), [dense_data, *parts],
                SparseConv2DAttrs(layout=layout, kernel_size=ks))
