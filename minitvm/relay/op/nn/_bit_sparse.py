"""nn.bitpack, nn.bitserial_dense, nn.bitserial_conv2d and nn.sparse_conv2d with TVM's attrs, type relations and constructors (numpy
references: ``minitvm.topi.reference.bit_sparse``)."""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....topi.shape_conditions import agree
from ...expr import Call, Expr, const
from ..op import define_op, register_numpy_only
from ..type_relations import check_num_args, is_static_dim, normalize_axis, tensor_arg, type_str
from ._utils import arith

__all__ = ["BitPackAttrs", "SparseConv2DAttrs", "BinaryDenseAttrs", "BinaryConv2DAttrs",
           "bitpack", "sparse_conv2d", "bitserial_dense", "bitserial_conv2d"]

_WIDTH = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "int8": 8, "int16": 16,
          "int32": 32, "int64": 64}


class BitPackAttrs(Attrs):
    __slots__ = ()
    _fields = (("bits", 1), ("pack_axis", 1), ("bit_axis", -1), ("pack_type", "uint32"),
               ("name", "BitPack"))


class SparseConv2DAttrs(Attrs):
    __slots__ = ()
    _fields = (("layout", "NHWC"), ("kernel_size", (1, 1)))


class BinaryDenseAttrs(Attrs):
    __slots__ = ()
    _fields = (("units", None), ("data_bits", 1), ("weight_bits", 1), ("pack_dtype", "uint32"),
               ("out_dtype", "int16"), ("unipolar", True))


class BinaryConv2DAttrs(Attrs):
    __slots__ = ()
    _fields = (("strides", (1, 1)), ("padding", (0, 0)), ("channels", None),
               ("kernel_size", (3, 3)), ("activation_bits", 1), ("weight_bits", 1),
               ("data_layout", "NCHW"), ("kernel_layout", "OIHW"), ("pack_dtype", "uint32"),
               ("out_dtype", "int16"), ("unipolar", True))


def _int_tensor(t, op_name, what):
    if not t.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: the {what} must be an integer tensor, got {type_str(t)}")


def _bitserial_dense_rel(arg_types, attrs):
    op_name = "nn.bitserial_dense"
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    _int_tensor(data, op_name, "data")
    _int_tensor(weight, op_name, "weight")
    if len(data.shape) != 2 or len(weight.shape) != 2 or (
            is_static_dim(data.shape[1]) and is_static_dim(weight.shape[1])
            and data.shape[1] != weight.shape[1]):
        raise TypeError(f"{op_name}: expects data (M, K) and weight (N, K), got {type_str(data)} "
                        f"and {type_str(weight)}")
    width = _WIDTH.get(str(attrs.pack_dtype), 0)
    if width == 0 or (is_static_dim(data.shape[1]) and data.shape[1] % width):
        raise TypeError(f"{op_name}: K={data.shape[1]} must be a multiple of the "
                        f"{attrs.pack_dtype} word")
    units = weight.shape[0] if attrs.units is None else int(attrs.units)
    if not agree(weight.shape[0], units):
        raise TypeError(f"{op_name}: units={units} does not match the weight {type_str(weight)}")
    return TensorType((data.shape[0], units), attrs.out_dtype)


def _bitserial_conv2d_rel(arg_types, attrs):
    op_name = "nn.bitserial_conv2d"
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    weight = tensor_arg(arg_types, 1, op_name)
    _int_tensor(data, op_name, "data")
    _int_tensor(weight, op_name, "weight")
    layouts = (attrs.data_layout, attrs.kernel_layout)
    if layouts not in (("NCHW", "OIHW"), ("NHWC", "HWIO")) or len(data.shape) != 4 or \
            len(weight.shape) != 4:
        raise TypeError(f"{op_name}: supports NCHW/OIHW or NHWC/HWIO, got {type_str(data)} and "
                        f"{type_str(weight)} in {layouts[0]}/{layouts[1]}")
    nchw = attrs.data_layout == "NCHW"
    n, c, h, w = data.shape if nchw else (data.shape[0], data.shape[3], *data.shape[1:3])
    o, i, kh, kw = weight.shape if nchw else (weight.shape[3], weight.shape[2],
                                               *weight.shape[:2])
    if not agree(c, i):
        raise TypeError(f"{op_name}: data channels {c} do not match weight in-channels {i}")
    width = _WIDTH.get(str(attrs.pack_dtype), 0)
    if width == 0 or (is_static_dim(c) and c % width):
        raise TypeError(f"{op_name}: channels {c} must be a multiple of the {attrs.pack_dtype} "
                        f"word")
    from ....topi.utils import pad_tuple

    pt, pl, pb, pr = pad_tuple(attrs.padding, 2, op_name)
    sh, sw = (int(s) for s in attrs.strides)
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    if oh < 1 or ow < 1:
        raise TypeError(f"{op_name}: the computed output size ({oh}, {ow}) is not positive")
    shape = (n, o, oh, ow) if nchw else (n, oh, ow, o)
    return TensorType(shape, attrs.out_dtype)


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
define_op("nn.bitserial_dense", _bitserial_dense_rel, pattern=OpPattern.OPAQUE,
          attrs_type=BinaryDenseAttrs, num_inputs=2,
          describe="Bit-serial (low-bit integer) dense product.")
define_op("nn.bitserial_conv2d", _bitserial_conv2d_rel, pattern=OpPattern.OPAQUE,
          attrs_type=BinaryConv2DAttrs, num_inputs=2,
          describe="Bit-serial (low-bit integer) 2D convolution.")
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


def bitserial_dense(data: Expr, weight: Expr, units=None, data_bits: int = 1,
                    weight_bits: int = 1, pack_dtype: str = "uint32", out_dtype: str = "int16",
                    unipolar: bool = True) -> Call:
    attrs = BinaryDenseAttrs(units=None if units is None else int(units),
                             data_bits=int(data_bits), weight_bits=int(weight_bits),
                             pack_dtype=pack_dtype, out_dtype=out_dtype, unipolar=bool(unipolar))
    return Call(Op.get("nn.bitserial_dense"), [data, weight], attrs)


def bitserial_conv2d(data: Expr, weight: Expr, strides=(1, 1), padding=(0, 0), channels=None,
                     kernel_size=(3, 3), activation_bits: int = 1, weight_bits: int = 1,
                     data_layout: str = "NCHW", kernel_layout: str = "OIHW",
                     pack_dtype: str = "uint32", out_dtype: str = "int16",
                     unipolar: bool = True) -> Call:
    attrs = BinaryConv2DAttrs(
        strides=tuple(strides), padding=tuple(padding) if not isinstance(padding, int)
        else (padding, padding), channels=channels, kernel_size=tuple(kernel_size),
        activation_bits=int(activation_bits), weight_bits=int(weight_bits),
        data_layout=data_layout, kernel_layout=kernel_layout, pack_dtype=pack_dtype,
        out_dtype=out_dtype, unipolar=bool(unipolar))
    return Call(Op.get("nn.bitserial_conv2d"), [data, weight], attrs)

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("nn.sparse_conv2d", "sparse operand: work depends on the non-zero pattern")
