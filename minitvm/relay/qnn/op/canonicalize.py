"""FTVMQnnCanonicalize of every ``qnn.*`` op: the same computation in plain integer / float
Relay (QnnCanonicalize runs these in relay.build). With the ``int64`` compute dtype (TVM's
default) a requantization of constant scales is TVM's fixed-point lowering, bit for bit: the
int32 ``data - zero point`` shifted left by the positive part of the shift, times the 31-bit
significand of ``in_scale / out_scale`` in int64, plus the rounding offset ("UPWARD": half;
"TONEAREST": half, or half - 1 below zero), shifted right arithmetically, plus the output zero
point in int32 (``topi.reference.qnn`` computes the same in numpy). The ``float64`` compute dtype
multiplies by the float64 ratio; ``float32`` (the call's, or ``requantize_config``'s, which
qnn.add / qnn.subtract follow too, as TVM's) computes in float32, as ONNX Runtime's integer
kernels requantize: exact while ``|data - zero point|`` stays under 2**24, and otherwise (or
where the product lands within float32 rounding of a rounding boundary) one step apart at
most."""

from __future__ import annotations

import numpy as np

from ....ir.op import register_op_attr
from ....topi.reference.qnn import dtype_range, fixed_point_multiplier_shift
from ...expr import Constant, Tuple, TupleGetItem, const
from ...op import tensor as _t
from ...op import transform as _tr
from ...op.nn import nn as _nn


def _per_axis(expr, ty, axis: int, ndim: int):
    """A scalar or 1-D quantization parameter shaped to broadcast along ``axis``."""
    shape = [int(d) for d in ty.shape]
    if not shape or shape == [1] or ndim == 0:
        return _tr.reshape(expr, ()) if shape else expr
    target = [1] * ndim
    target[axis % ndim] = shape[0]
    return _tr.reshape(expr, target)


def _f64(e):
    return _t.cast(e, "float64")


def _round(v, rounding: str, dtype: str = "float64"):
    half = const(0.5, dtype)
    if rounding == "TONEAREST":
        return _t.multiply(_t.sign(v), _t.floor(_t.add(_t.abs(v), half)))
    return _t.floor(_t.add(v, half))


def _requant_f64(data, dtype_in, in_scale, in_zp, out_scale, out_zp, rounding="UPWARD",
                 compute: str = "float64"):
    """(data - in_zp) * in_scale / out_scale, rounded, + out_zp, in float64 (float32 where
    ``compute`` says so; no saturation). The result's dtype is the one computed in."""
    if compute == "float32":
        f32 = lambda e: _t.cast(e, "float32")  # noqa: E731
        shifted = _t.subtract(f32(data), f32(in_zp))
        mult = _t.divide(f32(in_scale), f32(out_scale))
        return _t.add(_round(_t.multiply(shifted, mult), rounding, "float32"), f32(out_zp))
    shifted = _t.subtract(_t.cast(data, "int64"), _t.cast(in_zp, "int64"))
    mult = _t.divide(_f64(in_scale), _f64(out_scale))
    return _t.add(_round(_t.multiply(_f64(shifted), mult), rounding), _f64(out_zp))


def _compute_dtype(attrs=None) -> str:
    """A requantization's compute dtype: the call's, else ``requantize_config``'s."""
    from .qnn import requantize_compute_dtype

    return requantize_compute_dtype(attrs)


def _const_values(e) -> np.ndarray | None:
    """A constant scale's float32 values, or None for a computed one."""
    return e.data.numpy().astype("float32") if isinstance(e, Constant) else None


def _along(values: np.ndarray, axis: int, ndim: int, dtype: str):
    """A per-channel vector as a constant broadcasting along ``axis`` (a scalar if uniform)."""
    values = np.asarray(values)
    if values.size == 1 or (values == values.reshape(-1)[0]).all():
        return const(np.asarray(values.reshape(-1)[0], dtype), dtype)
    shape = [1] * ndim
    shape[axis % ndim] = values.size
    return const(values.astype(dtype).reshape(shape), dtype)


def _requant_fixed(data, in_scale, in_zp, out_scale, out_zp, rounding: str, axis: int,
                   ndim: int):
    """TVM's int64 fixed-point requantization of constant scales, unsaturated int32; None
    where a scale is not a constant (the float64 form computes those)."""
    ins, outs = _const_values(in_scale), _const_values(out_scale)
    if ins is None or outs is None or outs.size != 1:
        return None
    x = _t.cast(data, "int32")
    if not _zero(in_zp):
        x = _t.subtract(x, _t.cast(in_zp, "int32"))
    ins = ins.reshape(-1)
    if not (ins.size == 1 and ins[0] == outs.reshape(-1)[0]):  # equal scales: no multiply
        m, shift = fixed_point_multiplier_shift(ins.astype("float64") /
                                                np.float64(outs.reshape(-1)[0]))
        lshift, total = np.maximum(shift, 0), 31 + np.maximum(-shift, 0)
        x = _t.cast(x, "int64")
        if lshift.any():
            x = _t.left_shift(x, _along(lshift, axis, ndim, "int64"))
        x = _t.multiply(x, _along(m, axis, ndim, "int64"))
        half = np.left_shift(np.int64(1), total - 1)
        if rounding == "TONEAREST":
            zero = const(np.int64(0), "int64")
            offset = _t.where(_t.greater_equal(x, zero), _along(half, axis, ndim, "int64"),
                              _along(half - 1, axis, ndim, "int64"))
        else:
            offset = _along(half, axis, ndim, "int64")
        x = _t.right_shift(_t.add(x, offset), _along(total, axis, ndim, "int64"))
        x = _t.cast(x, "int32")
    if not _zero(out_zp):
        x = _t.add(x, _t.cast(out_zp, "int32"))
    return x


def _requant(data, dtype_in, in_scale, in_zp, out_scale, out_zp, rounding, compute, axis,
             ndim, per_axis_types):
    """One requantization, unsaturated, and whether it is int32: TVM's fixed point for the
    ``int64`` compute dtype (constant scales), else ``_requant_f64``'s float form."""
    if compute == "int64":
        fixed = _requant_fixed(data, in_scale, in_zp, out_scale, out_zp, rounding, axis, ndim)
        if fixed is not None:
            return fixed, True
    ts, tz = per_axis_types
    return _requant_f64(data, dtype_in, _per_axis(in_scale, ts, axis, ndim),
                        _per_axis(in_zp, tz, axis, ndim), out_scale, out_zp, rounding,
                        compute), False


def _saturate(v, dtype: str):
    lo, hi = dtype_range(dtype)
    return _t.cast(_t.clip(v, lo, hi), dtype)


@register_op_attr("qnn.quantize", "FTVMQnnCanonicalize")
def _quantize(attrs, args, types):
    data, scale, zp = args
    nd = len(types[0].shape)
    q = _t.round(_t.divide(data, _per_axis(scale, types[1], attrs.axis, nd)))
    q = _t.add(q, _t.cast(_per_axis(zp, types[2], attrs.axis, nd), "float32"))
    return _saturate(q, attrs.out_dtype)


@register_op_attr("qnn.dequantize", "FTVMQnnCanonicalize")
def _dequantize(attrs, args, types):
    data, scale, zp = args
    nd = len(types[0].shape)
    shifted = _t.subtract(_t.cast(data, "int32"), _per_axis(zp, types[2], attrs.axis, nd))
    out = _t.multiply(_t.cast(shifted, "float32"), _per_axis(scale, types[1], attrs.axis, nd))
    return out if attrs.out_dtype == "float32" else _t.cast(out, attrs.out_dtype)


@register_op_attr("qnn.requantize", "FTVMQnnCanonicalize")
def _requantize(attrs, args, types):
    data, in_scale, in_zp, out_scale, out_zp = args
    nd = len(types[0].shape)
    from .qnn import requantize_rounding

    rounding = requantize_rounding(attrs)
    v, _ = _requant(data, types[0].dtype, in_scale, in_zp, out_scale, out_zp, rounding,
                    _compute_dtype(attrs), attrs.axis, nd, (types[1], types[2]))
    return _saturate(v, attrs.out_dtype)


@register_op_attr("qnn.simulated_quantize", "FTVMQnnCanonicalize")
def _simulated_quantize(attrs, args, types):
    data, scale, zp = args
    nd = len(types[0].shape)
    q = _t.add(_t.round(_t.divide(data, _per_axis(scale, types[1], attrs.axis, nd))),
               _per_axis(zp, types[2], attrs.axis, nd))
    lo, hi = dtype_range(attrs.out_dtype)
    return _t.clip(q, lo, hi)


@register_op_attr("qnn.simulated_dequantize", "FTVMQnnCanonicalize")
def _simulated_dequantize(attrs, args, types):
    data, scale, zp = args
    nd = len(types[0].shape)
    return _t.multiply(_t.subtract(data, _per_axis(zp, types[2], attrs.axis, nd)),
                       _per_axis(scale, types[1], attrs.axis, nd))


def _zero(e) -> bool:
    """Is ``e`` a constant of zeros (a zero point)?"""
    return isinstance(e, Constant) and not e.data.numpy().any()


def _native_int16(types, izp, kzp) -> bool:
    """int16 data and an int8 / int16 weight without zero points: the product of the values
    as they are (``schedule/conv_vnni``'s and ``gemm_vnni``'s int16 words), not of int32
    casts."""
    return str(types[0].dtype) == "int16" and str(types[1].dtype) in ("int8", "int16") and \
        _zero(izp) and _zero(kzp)


@register_op_attr("qnn.conv2d", "FTVMQnnCanonicalize")
def _conv2d(attrs, args, types):
    from .canonicalize_fast_conv import fast_conv2d

    fast = fast_conv2d(attrs, args, types)
    if fast is not None:
        return fast
    data, kernel, izp, kzp = args[:4]
    o_axis = attrs.kernel_layout.index("O")
    if _native_int16(types, izp, kzp) and attrs.groups == 1 and \
            (attrs.out_dtype or "int32") == "int32" and attrs.data_layout == "NCHW" and \
            attrs.kernel_layout == "OIHW":
        x, w = data, kernel
    else:
        x = _t.subtract(_t.cast(data, "int32"), izp)
        w = _t.subtract(_t.cast(kernel, "int32"), _per_axis(kzp, types[3], o_axis, 4))
    return _nn.conv2d(x, w, strides=attrs.strides, padding=attrs.padding,
                      dilation=attrs.dilation, groups=attrs.groups, channels=attrs.channels,
                      kernel_size=attrs.kernel_size, data_layout=attrs.data_layout,
                      kernel_layout=attrs.kernel_layout, out_layout=attrs.out_layout,
                      out_dtype=attrs.out_dtype or "int32")


@register_op_attr("qnn.dense", "FTVMQnnCanonicalize")
def _dense(attrs, args, types):
    data, weight, izp, kzp = args[:4]
    if _native_int16(types, izp, kzp) and (attrs.out_dtype or "int32") == "int32":
        return _nn.dense(data, weight, units=attrs.units, out_dtype="int32")
    x = _t.subtract(_t.cast(data, "int32"), izp)
    w = _t.subtract(_t.cast(weight, "int32"), _per_axis(kzp, types[3], 0, 2))
    return _nn.dense(x, w, units=attrs.units, out_dtype=attrs.out_dtype or "int32")


def _same_scale(a, b) -> bool:
    """Are ``a`` and ``b`` one scalar float32 constant's value (the requantization between
    them multiplies by exactly 1)?"""
    return all(isinstance(e, Constant) and e.data.numpy().size == 1 for e in (a, b)) and \
        a.data.numpy().astype("float32").item() == b.data.numpy().astype("float32").item()


def _int_side(data, dtype_in: str, scale, zp, out_scale):
    """An 8/16-bit input already in the output's scale as the int32 ``data - zp`` (exact: no
    rounding); None otherwise."""
    if str(dtype_in) not in ("uint8", "int8", "uint16", "int16") or \
            not _same_scale(scale, out_scale) or not isinstance(zp, Constant) or \
            zp.data.numpy().size != 1:
        return None
    return _t.subtract(_t.cast(data, "int32"), const(int(zp.data.numpy().item()), "int32"))


def _addsub(sign: int):
    def canon(attrs, args, types):
        lhs, rhs, ls, lzp, rs, rzp, os_, ozp = args
        nl, nr = len(types[0].shape), len(types[1].shape)
        combine = _t.add if sign > 0 else _t.subtract
        inverse = _t.subtract if sign > 0 else _t.add
        a_int = _int_side(lhs, types[0].dtype, ls, lzp, os_)
        b_int = _int_side(rhs, types[1].dtype, rs, rzp, os_)
        if a_int is not None and b_int is not None:
            # both inputs in the output's scale (a residual add of one quantization): the
            # integer sum, exact, in int32
            return _saturate(_t.add(combine(a_int, b_int), _t.cast(ozp, "int32")),
                             types[0].dtype)
        compute = _compute_dtype()
        a, a_int = _requant(lhs, types[0].dtype, ls, lzp, os_, ozp, "UPWARD", compute,
                            attrs.lhs_axis, nl, (types[2], types[3]))
        b, b_int = _requant(rhs, types[1].dtype, rs, rzp, os_, ozp, "UPWARD", compute,
                            attrs.rhs_axis, nr, (types[4], types[5]))
        if a_int and b_int:  # both in TVM's fixed point: int32 sums, as TVM's lowering
            return _saturate(inverse(combine(a, b), _t.cast(ozp, "int32")), types[0].dtype)
        if a_int or b_int:  # one side of computed scales: the other side's int32 as float64
            a, b = _f64(a) if a_int else a, _f64(b) if b_int else b
        zp = _t.cast(ozp, "float32") if compute == "float32" else _f64(ozp)
        return _saturate(inverse(combine(a, b), zp), types[0].dtype)

    return canon


register_op_attr("qnn.add", "FTVMQnnCanonicalize", _addsub(1))
register_op_attr("qnn.subtract", "FTVMQnnCanonicalize", _addsub(-1))


@register_op_attr("qnn.mul", "FTVMQnnCanonicalize")
def _mul(attrs, args, types):
    lhs, rhs, ls, lzp, rs, rzp, os_, ozp = args
    a = _t.subtract(_t.cast(lhs, "int32"), lzp)
    b = _t.subtract(_t.cast(rhs, "int32"), rzp)
    lv, rv = _const_values(ls), _const_values(rs)
    if _compute_dtype() == "int64" and lv is not None and rv is not None and \
            lv.size == 1 and rv.size == 1:
        # TVM: the int32 product requantized from the float32 product of the scales
        scale = const(np.float32(lv.reshape(()) * rv.reshape(())), "float32")
        v = _requant_fixed(_t.multiply(a, b), scale, const(0, "int32"), os_, ozp, "UPWARD",
                           -1, len(types[0].shape))
        if v is not None:
            return _saturate(v, types[0].dtype)
    scale = _t.multiply(_f64(ls), _f64(rs))
    v = _t.multiply(_f64(_t.multiply(a, b)), _t.divide(scale, _f64(os_)))
    return _saturate(_t.add(_round(v, "UPWARD"), _f64(ozp)), types[0].dtype)


@register_op_attr("qnn.concatenate", "FTVMQnnCanonicalize")
def _concatenate(attrs, args, types):
    data, scales, zps, os_, ozp = args
    out_dtype = types[-1].dtype
    n = len(types[0].fields)

    def item(t, i):
        return t.fields[i] if isinstance(t, Tuple) else TupleGetItem(t, i)

    compute = _compute_dtype()

    def requant(i):
        if compute == "int64":
            v = _requant_fixed(item(data, i), item(scales, i), item(zps, i), os_, ozp,
                               "UPWARD", -1, len(types[0].fields[i].shape))
            if v is not None:
                return v
        return _requant_f64(item(data, i), None, item(scales, i), item(zps, i), os_, ozp,
                            compute=compute)

    parts = [_saturate(requant(i), out_dtype) for i in range(n)]
    return _tr.concatenate(parts, attrs.axis)
