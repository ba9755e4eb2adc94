"""Quantized elementwise functions (``qnn.sqrt``, ``qnn.rsqrt``, ``qnn.exp``, ``qnn.erf``,
``qnn.sigmoid``, ``qnn.tanh``, ``qnn.abs``, ``qnn.log``) and ``qnn.leaky_relu``: definitions,
numpy references and canonicalization.

Each computes ``quantize(f(dequantize(x)))`` with its own output parameters, in the input's
dtype. Canonicalized, an 8-bit input with constant parameters becomes a lookup table (TVM's
``create_integer_lookup_op``: gather over the 256 bit patterns); otherwise the float detour
(dequantize, f, quantize) is written out.
"""

from __future__ import annotations

import numpy as np

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern, register_op_attr
from ....ir.type import TensorType
from ...expr import Call, Constant
from ...op.op import define_op
from ...op.type_relations import check_num_args, tensor_arg, type_str
from .qnn import _f32, _i32, _qparam

__all__ = ["sqrt", "rsqrt", "exp", "erf", "sigmoid", "tanh", "abs", "log", "leaky_relu",
           "UNARY_FUNCS"]

_INT = ("int8", "uint8", "int16", "uint16", "int32")

# qnn op -> the float op it quantizes
UNARY_FUNCS = {"sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "erf": "erf",
               "sigmoid": "sigmoid", "tanh": "tanh", "abs": "abs", "log": "log"}


class LeakyReluAttrs(Attrs):
    __slots__ = ()
    _fields = (("alpha", 0.01),)


def _unary_rel(name, first_param=1):
    def rel(arg_types, attrs):
        check_num_args(name, arg_types, first_param + 4)
        x = tensor_arg(arg_types, 0, name)
        if x.dtype not in _INT:
            raise TypeError(f"{name}: the input must be an integer tensor, got {type_str(x)}")
        for i, (dt, what) in enumerate((("float32", "input scale"), ("int32", "input zero point"),
                                        ("float32", "output scale"),
                                        ("int32", "output zero point"))):
            _qparam(arg_types, first_param + i, name, dt, f"the {what}")
        return TensorType(x.shape, x.dtype)

    return rel


def _dequantize_np(q, scale, zp):
    return (q.astype("int32") - np.int32(zp)).astype("float32") * np.float32(scale)


def _quantize_np(v, scale, zp, dtype):
    info = np.iinfo(dtype)
    q = np.round(v.astype("float32") / np.float32(scale)) + np.float32(zp)
    return np.clip(q, info.min, info.max).astype(dtype)


def float_function(float_op: str):
    """The float op's numpy reference as a function of one float32 array."""
    impl = Op.get(float_op).get_attr("FNumpy")
    return lambda arr: np.asarray(impl(None, [np.asarray(arr, "float32")],
                                       TensorType(np.shape(arr), "float32")), "float32")


def _unary_np(float_op):
    f = float_function(float_op)

    def impl(attrs, args, out_type):
        x, s, z, os_, oz = args
        with np.errstate(all="ignore"):
            return _quantize_np(f(_dequantize_np(x, s, z)), os_, oz, out_type.dtype)

    return impl


def _leaky_np(attrs, args, out_type):
    x, s, z, os_, oz = args
    v = _dequantize_np(x, s, z)
    v = np.where(v < 0, v * np.float32(attrs.alpha), v).astype("float32")
    return _quantize_np(v, os_, oz, out_type.dtype)


def _make_unary(qname: str, float_op: str):
    op_name = f"qnn.{qname}"
    define_op(op_name, _unary_rel(op_name), _unary_np(float_op), pattern=OpPattern.OPAQUE,
              num_inputs=5, describe=f"Quantized {float_op}: quantize({float_op}(dequantize(x))).")
    Op.get(op_name).set_attr("TNonComputational", True)

    def make(x, scale, zero_point, output_scale, output_zero_point) -> Call:
        return Call(Op.get(op_name), [x, _f32(scale), _i32(zero_point), _f32(output_scale),
                                      _i32(output_zero_point)])

    make.__name__ = qname
    make.__doc__ = f"Quantized {float_op} (TVM's relay.qnn.op.{qname})."
    register_op_attr(op_name, "FTVMQnnCanonicalize", _canonicalize_unary(float_op))
    return make


def _canonicalize_unary(float_op: str):
    def canon(attrs, args, arg_types):
        from .canonicalizations import create_integer_lookup_op

        x, s, z, os_, oz = args
        dtype = arg_types[0].dtype
        if np.dtype(dtype).itemsize == 1 and all(isinstance(a, Constant) and a.data.numpy().size
                                                 == 1 for a in (s, z, os_, oz)):
            return create_integer_lookup_op(x, float_function(float_op), s, z, os_, oz,
                                            in_dtype=dtype, out_dtype=dtype)
        from ...op import tensor as _t

        return _float_quantize(getattr(_t, float_op)(_float_dequantize(x, s, z)), os_, oz,
                               dtype)

    return canon


sqrt = _make_unary("sqrt", "sqrt")
rsqrt = _make_unary("rsqrt", "rsqrt")
exp = _make_unary("exp", "exp")
erf = _make_unary("erf", "erf")
sigmoid = _make_unary("sigmoid", "sigmoid")
tanh = _make_unary("tanh", "tanh")
abs = _make_unary("abs", "abs")  # noqa: A001 - TVM's name
log = _make_unary("log", "log")

define_op("qnn.leaky_relu", _unary_rel("qnn.leaky_relu"), _leaky_np, pattern=OpPattern.OPAQUE,
          attrs_type=LeakyReluAttrs, num_inputs=5,
          describe="Quantized leaky relu with its own output parameters.")
Op.get("qnn.leaky_relu").set_attr("TNonComputational", True)


def leaky_relu(x, alpha, input_scale, input_zero_point, output_scale,
               output_zero_point) -> Call:
    """Quantized leaky relu (TVM's relay.qnn.op.leaky_relu)."""
    return Call(Op.get("qnn.leaky_relu"), [x, _f32(input_scale), _i32(input_zero_point),
                                           _f32(output_scale), _i32(output_zero_point)],
                LeakyReluAttrs(alpha=float(alpha)))


def _float_dequantize(x, s, z):
    """Integer Relay for dequantize with scalar parameters (qnn.dequantize's lowering)."""
    from ...op import tensor as _t

    return _t.multiply(_t.cast(_t.subtract(_t.cast(x, "int32"), z), "float32"), s)


def _float_quantize(v, s, z, dtype):
    """Integer Relay for quantize with scalar parameters (qnn.quantize's lowering)."""
    from ...op import tensor as _t

    info = np.iinfo(dtype)
    q = _t.add(_t.round(_t.divide(v, s)), _t.cast(z, "float32"))
    return _t.cast(_t.clip(q, int(info.min), int(info.max)), dtype)


@register_op_attr("qnn.leaky_relu", "FTVMQnnCanonicalize")
def _canonicalize_leaky_relu(attrs, args, arg_types):
    from ...expr import const
    from ...op import tensor as _t

    x, s, z, os_, oz = args
    v = _float_dequantize(x, s, z)
    v = _t.where(_t.less(v, _t.zeros_like(v)), _t.multiply(v, const(float(attrs.alpha))), v)
    return _float_quantize(v, os_, oz, arg_types[0].dtype)
