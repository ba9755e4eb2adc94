"""Quantized operators: definitions (type relations, references from ``topi.reference.qnn``)
and constructors. Scales are float32 and zero points int32, each a scalar or, for per-channel
quantization, a 1-D tensor along ``axis``."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType, TupleType
from ...expr import Call, Expr, Tuple, const
from ...op.nn.nn import _conv2d_attrs
from ...op.op import define_op
from ...op.type_relations import broadcast_shapes, check_num_args, tensor_arg, type_str

_QUANT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")
_COMPUTE_DTYPES = ("None", "int64", "float32", "float64")
_ROUNDINGS = ("UPWARD", "TONEAREST")


class RequantizeConfig:
    """Defaults for requantize calls whose ``rounding`` / ``compute_dtype`` is "None"
    (TVM's ``relay.qnn.op.requantize_config``); read when the op is lowered or evaluated."""

    def __init__(self, rounding: str = "UPWARD", compute_dtype: str = "int64"):
        if rounding not in _ROUNDINGS:
            raise ValueError(f"requantize_config: rounding must be UPWARD or TONEAREST, got "
                             f"{rounding!r}")
        if compute_dtype not in _COMPUTE_DTYPES[1:]:
            raise ValueError(f"requantize_config: compute_dtype must be int64, float32 or "
                             f"float64, got {compute_dtype!r}")
        self.rounding = rounding
        self.compute_dtype = compute_dtype

    def get_rounding(self) -> str:
        return self.rounding

    def get_compute_dtype(self) -> str:
        return self.compute_dtype

    def __enter__(self):
        _CONFIGS.append(self)
        return self

    def __exit__(self, *exc):
        _CONFIGS.remove(self)


_CONFIGS: list = []


def requantize_config(**kwargs) -> RequantizeConfig:
    """A RequantizeConfig to use as ``with relay.qnn.op.requantize_config(rounding=...):``."""
    return RequantizeConfig(**kwargs)


def current_requantize_config() -> RequantizeConfig:
    """The innermost active RequantizeConfig (TVM's defaults outside any)."""
    return _CONFIGS[-1] if _CONFIGS else RequantizeConfig()


def requantize_rounding(attrs) -> str:
    """A requantize call's rounding, "None" resolved through the current config."""
    r = attrs.rounding
    return current_requantize_config().rounding if r in ("None", None) else r


def requantize_compute_dtype(attrs=None) -> str:
    """A requantization's compute dtype: the call's, else the current config's."""
    own = getattr(attrs, "compute_dtype", None) if attrs is not None else None
    return own if own not in (None, "None") else current_requantize_config().compute_dtype


class QuantizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("out_dtype", "int8"), ("axis", -1))


class DequantizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", -1), ("out_dtype", "float32"))


class RequantizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", -1), ("rounding", "None"), ("compute_dtype", "None"),
               ("out_dtype", "int8"))


class SimulatedQuantizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", -1), ("out_dtype", "int8"))


class BroadcastAttrs(Attrs):
    __slots__ = ()
    _fields = (("lhs_axis", -1), ("rhs_axis", -1))


class ConcatenateAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0),)


class QnnDenseAttrs(Attrs):
    __slots__ = ()
    _fields = (("units", None), ("out_dtype", "int32"))


def _qparam(arg_types, i, op_name, dtype, what, data_type=None, axis=-1):
    t = tensor_arg(arg_types, i, op_name)
    if t.dtype != dtype:
        raise TypeError(f"{op_name}: {what} must be {dtype}, got {type_str(t)}")
    if len(t.shape) > 1:
        raise TypeError(f"{op_name}: {what} must be a scalar or 1-D, got {type_str(t)}")
    if len(t.shape) == 1 and data_type is not None and int(t.shape[0]) != 1:
        ndim = len(data_type.shape)
        ax = axis % ndim if ndim else 0
        if ndim == 0 or int(t.shape[0]) != int(data_type.shape[ax]):
            raise TypeError(f"{op_name}: per-channel {what} has {t.shape[0]} entries but axis "
                            f"{axis} of the input {type_str(data_type)} does not")
    return t


def _out_dtype(op_name, dtype):
    if dtype not in _QUANT_DTYPES:
        raise TypeError(f"{op_name}: out_dtype must be one of {', '.join(_QUANT_DTYPES)}, "
                        f"got {dtype!r}")
    return dtype


def _quantize_rel(arg_types, attrs):
    check_num_args("qnn.quantize", arg_types, 3)
    data = tensor_arg(arg_types, 0, "qnn.quantize")
    if not data.dtype.startswith(("float", "bfloat")):
        raise TypeError(f"qnn.quantize: the input must be a float tensor, got {type_str(data)}")
    _qparam(arg_types, 1, "qnn.quantize", "float32", "the scale", data, attrs.axis)
    _qparam(arg_types, 2, "qnn.quantize", "int32", "the zero point", data, attrs.axis)
    return TensorType(data.shape, _out_dtype("qnn.quantize", attrs.out_dtype))


def _dequantize_rel(arg_types, attrs):
    check_num_args("qnn.dequantize", arg_types, 3)
    data = tensor_arg(arg_types, 0, "qnn.dequantize")
    if data.dtype not in _QUANT_DTYPES:
        raise TypeError(f"qnn.dequantize: the input must be an integer tensor, got "
                        f"{type_str(data)}")
    _qparam(arg_types, 1, "qnn.dequantize", "float32", "the scale", data, attrs.axis)
    _qparam(arg_types, 2, "qnn.dequantize", "int32", "the zero point", data, attrs.axis)
    return TensorType(data.shape, attrs.out_dtype)


def _requantize_rel(arg_types, attrs):
    check_num_args("qnn.requantize", arg_types, 5)
    data = tensor_arg(arg_types, 0, "qnn.requantize")
    if data.dtype not in _QUANT_DTYPES:
        raise TypeError(f"qnn.requantize: the input must be an integer tensor, got "
                        f"{type_str(data)}")
    _qparam(arg_types, 1, "qnn.requantize", "float32", "the input scale", data, attrs.axis)
    _qparam(arg_types, 2, "qnn.requantize", "int32", "the input zero point", data, attrs.axis)
    _qparam(arg_types, 3, "qnn.requantize", "float32", "the output scale")
    _qparam(arg_types, 4, "qnn.requantize", "int32", "the output zero point")
    if attrs.rounding not in ("None", "UPWARD", "TONEAREST"):
        raise TypeError(f"qnn.requantize: rounding must be UPWARD or TONEAREST, got "
                        f"{attrs.rounding!r}")
    if attrs.compute_dtype not in _COMPUTE_DTYPES:
        raise TypeError(f"qnn.requantize: compute_dtype must be one of "
                        f"{', '.join(_COMPUTE_DTYPES)}, got {attrs.compute_dtype!r}")
    return TensorType(data.shape, _out_dtype("qnn.requantize", attrs.out_dtype))


def _simulated_rel(name):
    def rel(arg_types, attrs):
        check_num_args(name, arg_types, 3)
        data = tensor_arg(arg_types, 0, name)
        return TensorType(data.shape, data.dtype)

    return rel


def _conv2d_rel(arg_types, attrs):
    check_num_args("qnn.conv2d", arg_types, 6)
    data = tensor_arg(arg_types, 0, "qnn.conv2d")
    kernel = tensor_arg(arg_types, 1, "qnn.conv2d")
    for t, what in ((data, "data"), (kernel, "kernel")):
        if t.dtype not in ("int8", "uint8", "int16"):
            raise TypeError(f"qnn.conv2d: the {what} must be int8/uint8/int16, got {type_str(t)}")
    _qparam(arg_types, 2, "qnn.conv2d", "int32", "the input zero point")
    _qparam(arg_types, 3, "qnn.conv2d", "int32", "the kernel zero point")
    _qparam(arg_types, 4, "qnn.conv2d", "float32", "the input scale")
    _qparam(arg_types, 5, "qnn.conv2d", "float32", "the kernel scale")
    rel = Op.get("nn.conv2d").get_attr("FTypeRelation")
    out = rel([data, kernel], attrs)
    return TensorType(out.shape, attrs.out_dtype or "int32")


def _dense_rel(arg_types, attrs):
    check_num_args("qnn.dense", arg_types, 6)
    data = tensor_arg(arg_types, 0, "qnn.dense")
    weight = tensor_arg(arg_types, 1, "qnn.dense")
    if len(weight.shape) != 2 or int(weight.shape[-1]) != int(data.shape[-1]):
        raise TypeError(f"qnn.dense: weight {type_str(weight)} does not match the input "
                        f"{type_str(data)} (expects (units, {data.shape[-1]}))")
    for i, (dt, what) in enumerate((("int32", "input zero point"),
                                    ("int32", "kernel zero point"),
                                    ("float32", "input scale"), ("float32", "kernel scale"))):
        _qparam(arg_types, 2 + i, "qnn.dense", dt, f"the {what}")
    return TensorType(tuple(data.shape[:-1]) + (weight.shape[0],), attrs.out_dtype or "int32")


def _binary_rel(name):
    def rel(arg_types, attrs):
        check_num_args(name, arg_types, 8)
        lhs = tensor_arg(arg_types, 0, name)
        rhs = tensor_arg(arg_types, 1, name)
        if lhs.dtype != rhs.dtype or lhs.dtype not in _QUANT_DTYPES:
            raise TypeError(f"{name}: both inputs must have the same integer dtype, got "
                            f"{type_str(lhs)} and {type_str(rhs)}")
        for i, what in ((2, "lhs scale"), (4, "rhs scale"), (6, "output scale")):
            _qparam(arg_types, i, name, "float32", f"the {what}")
        for i, what in ((3, "lhs zero point"), (5, "rhs zero point"), (7, "output zero point")):
            _qparam(arg_types, i, name, "int32", f"the {what}")
        return TensorType(broadcast_shapes(lhs.shape, rhs.shape, name), lhs.dtype)

    return rel


def _concatenate_rel(arg_types, attrs):
    check_num_args("qnn.concatenate", arg_types, 5)
    data, scales, zps = arg_types[:3]
    for t, what in ((data, "data"), (scales, "input scales"), (zps, "input zero points")):
        if not isinstance(t, TupleType):
            raise TypeError(f"qnn.concatenate: the {what} must be a tuple, got {type_str(t)}")
    if not (len(data.fields) == len(scales.fields) == len(zps.fields)):
        raise TypeError("qnn.concatenate: data, input scales and zero points must have the "
                        "same number of entries")
    return Op.get("concatenate").get_attr("FTypeRelation")([data], attrs)


_INJ = OpPattern.OPAQUE
define_op("qnn.quantize", _quantize_rel, pattern=_INJ, attrs_type=QuantizeAttrs, num_inputs=3,
          describe="Quantize a float tensor: clip(round(x / scale) + zero_point).")
define_op("qnn.dequantize", _dequantize_rel, pattern=_INJ, attrs_type=DequantizeAttrs,
          num_inputs=3, describe="Dequantize: (q - zero_point) * scale.")
define_op("qnn.requantize", _requantize_rel, pattern=_INJ, attrs_type=RequantizeAttrs,
          num_inputs=5, describe="Change the quantization parameters of a quantized tensor.")
define_op("qnn.simulated_quantize", _simulated_rel("qnn.simulated_quantize"), pattern=_INJ,
          attrs_type=SimulatedQuantizeAttrs, num_inputs=3,
          describe="Quantize, keeping the float dtype (quantization-aware flows).")
define_op("qnn.simulated_dequantize", _simulated_rel("qnn.simulated_dequantize"), pattern=_INJ,
          attrs_type=SimulatedQuantizeAttrs, num_inputs=3,
          describe="Dequantize values held in a float tensor.")
define_op("qnn.conv2d", _conv2d_rel, pattern=_INJ, attrs_type=type(_conv2d_attrs(
    1, 0, 1, 1, None, None, "NCHW", "OIHW", "", "int32")), num_inputs=6,
    describe="Quantized 2-D convolution accumulating in int32.")
define_op("qnn.dense", _dense_rel, pattern=_INJ, attrs_type=QnnDenseAttrs, num_inputs=6,
          describe="Quantized dense layer accumulating in int32.")
for _name in ("qnn.add", "qnn.subtract", "qnn.mul"):
    define_op(_name, _binary_rel(_name), pattern=_INJ, attrs_type=BroadcastAttrs, num_inputs=8,
              describe=f"Quantized elementwise {_name[4:]} with output requantization.")
define_op("qnn.concatenate", _concatenate_rel, pattern=_INJ, attrs_type=ConcatenateAttrs,
          num_inputs=5, describe="Concatenate quantized tensors, requantizing to one output.")
def _requantize_np(attrs, args, out_type):
    from ....topi.reference.qnn import requantize_values

    data, in_scale, in_zp, out_scale, out_zp = args
    return requantize_values(data, in_scale, in_zp, out_scale, out_zp, attrs.axis,
                             requantize_rounding(attrs), out_type.dtype,
                             compute=requantize_compute_dtype(attrs))


def _addsub_np(sign: int):
    def evaluate(attrs, args, out_type):
        from ....topi.reference.qnn import _add

        return _add(*args, attrs, out_type.dtype, sign=sign,
                    compute=current_requantize_config().compute_dtype)

    return evaluate


def _config_np(name: str):
    """The reference of ``name`` computing in the current config's compute dtype."""
    def evaluate(attrs, args, out_type):
        from ....topi.reference import qnn as ref

        return getattr(ref, name)(attrs, args, out_type,
                                  compute=current_requantize_config().compute_dtype)

    return evaluate


Op.get("qnn.requantize").set_attr("FNumpy", _requantize_np, 11)
Op.get("qnn.add").set_attr("FNumpy", _addsub_np(1), 11)
Op.get("qnn.subtract").set_attr("FNumpy", _addsub_np(-1), 11)
Op.get("qnn.mul").set_attr("FNumpy", _config_np("_qnn_mul"), 11)
Op.get("qnn.concatenate").set_attr("FNumpy", _config_np("_qnn_concatenate"), 11)
# As in TVM, qnn ops are non-computational until canonicalized: FoldConstant folds them only
# with fold_qnn=True.
for _name in Op.list_op_names():
    if _name.startswith("qnn."):
        Op.get(_name).set_attr("TNonComputational", True)


def _f32(v) -> Expr:
    return v if isinstance(v, Expr) else const(v, "float32")


def _i32(v) -> Expr:
    return v if isinstance(v, Expr) else const(v, "int32")


def quantize(data, output_scale, output_zero_point, axis: int = -1,
             out_dtype: str = "int8") -> Call:
    return Call(Op.get("qnn.quantize"), [data, _f32(output_scale), _i32(output_zero_point)],
                QuantizeAttrs(out_dtype=out_dtype, axis=int(axis)))


def dequantize(data, input_scale, input_zero_point, axis: int = -1,
               out_dtype: str = "float32") -> Call:
    return Call(Op.get("qnn.dequantize"), [data, _f32(input_scale), _i32(input_zero_point)],
                DequantizeAttrs(axis=int(axis), out_dtype=out_dtype))


def requantize(data, input_scale, input_zero_point, output_scale, output_zero_point,
               axis: int = -1, rounding: str = "None", compute_dtype: str = "None",
               out_dtype: str = "int8") -> Call:
    return Call(Op.get("qnn.requantize"),
                [data, _f32(input_scale), _i32(input_zero_point), _f32(output_scale),
                 _i32(output_zero_point)],
                RequantizeAttrs(axis=int(axis), rounding=rounding, compute_dtype=compute_dtype,
                                out_dtype=out_dtype))


def simulated_quantize(data, output_scale, output_zero_point, axis: int = -1,
                       out_dtype: str = "int8") -> Call:
    return Call(Op.get("qnn.simulated_quantize"),
                [data, _f32(output_scale), _f32(output_zero_point) if not isinstance(
                    output_zero_point, Expr) else output_zero_point],
                SimulatedQuantizeAttrs(axis=int(axis), out_dtype=out_dtype))


def simulated_dequantize(data, input_scale, input_zero_point, axis: int = -1,
                         in_dtype: str = "int8") -> Call:
    return Call(Op.get("qnn.simulated_dequantize"),
                [data, _f32(input_scale), _f32(input_zero_point) if not isinstance(
                    input_zero_point, Expr) else input_zero_point],
                SimulatedQuantizeAttrs(axis=int(axis), out_dtype=in_dtype))


def conv2d(data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale,
           kernel_size, channels, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype="int32") -> Call:
    attrs = _conv2d_attrs(strides, padding, dilation, groups, channels, kernel_size,
                          data_layout, kernel_layout, out_layout, out_dtype)
    return Call(Op.get("qnn.conv2d"),
                [data, kernel, _i32(input_zero_point), _i32(kernel_zero_point),
                 _f32(input_scale), _f32(kernel_scale)], attrs)


def dense(data, weight, input_zero_point, kernel_zero_point, input_scale, kernel_scale, units,
          out_dtype: str = "int32") -> Call:
    return Call(Op.get("qnn.dense"),
                [data, weight, _i32(input_zero_point), _i32(kernel_zero_point),
                 _f32(input_scale), _f32(kernel_scale)],
                QnnDenseAttrs(units=units, out_dtype=out_dtype))


def _binary(name):
    def make(lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale,
             output_zero_point, lhs_axis: int = -1, rhs_axis: int = -1) -> Call:
        return Call(Op.get(name),
                    [lhs, rhs, _f32(lhs_scale), _i32(lhs_zero_point), _f32(rhs_scale),
                     _i32(rhs_zero_point), _f32(output_scale), _i32(output_zero_point)],
                    BroadcastAttrs(lhs_axis=int(lhs_axis), rhs_axis=int(rhs_axis)))

    make.__name__ = name[4:]
    make.__doc__ = f"Quantized {name[4:]}: the result requantized to the output parameters."
    return make


add = _binary("qnn.add")
subtract = _binary("qnn.subtract")
mul = _binary("qnn.mul")


def concatenate(data, input_scales, input_zero_points, output_scale, output_zero_point,
                axis: int) -> Call:
    def tup(xs, conv):
        return xs if isinstance(xs, Expr) else Tuple([conv(x) for x in xs])

    return Call(Op.get("qnn.concatenate"),
                [tup(data, lambda x: x), tup(input_scales, _f32), tup(input_zero_points, _i32),
                 _f32(output_scale), _i32(output_zero_point)], ConcatenateAttrs(axis=int(axis)))
