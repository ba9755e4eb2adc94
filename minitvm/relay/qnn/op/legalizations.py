"""Target-dependent QnnLegalize rules of ``qnn.conv2d`` and ``qnn.dense`` (TVM's
``relay.qnn.op.legalizations``): reshape the int8 operands into the form each target's fast
integer kernels want.

- x86 with AVX-512 (fast int8): data uint8, kernel int8 (int8 data shifted by +128, uint8
  kernels by -128, zero points moved with them);
- ARM with dot-product instructions: data shifted to the kernel's dtype;
- CUDA: both operands int8;
- x86/ARM without fast int8: no qnn op left — operands cast to int16 minus their (scalar
  constant) zero points, then ``nn.conv2d`` / ``nn.dense``; except a conv that
  QnnCanonicalize's fast form takes on this host (``canonicalize_fast_conv``: VNNI, or an
  exact float32 conv of the integers), left to it;
- no current target, or other targets: unchanged; nor are 16-bit operands (a dense of a QAT
  global pool's int16 sums), which QnnCanonicalize takes as they are.
"""

from __future__ import annotations

from ....ir.op import Op, register_op_attr
from ...expr import Call, Constant, const
from ...op import tensor as _t
from ...op.nn import nn as _nn

_AVX512_CPUS = frozenset({"skylake-avx512", "cascadelake", "cooperlake", "icelake-client",
                          "icelake-server", "tigerlake", "sapphirerapids", "znver4"})


def _target():
    from ....target import Target

    return Target.current(allow_none=True)


def _mattr(t) -> list:
    return [str(a) for a in (getattr(t, "mattr", None) or [])]


def is_fast_int8_on_intel(t) -> bool:
    """An x86 target with AVX-512 integer instructions."""
    return t.attrs.get("mcpu", "") in _AVX512_CPUS or "+avx512bw" in _mattr(t)


def is_fast_int8_on_arm(t) -> bool:
    """An ARM target with the dot-product extension."""
    return "+dotprod" in _mattr(t)


def _is_arm(t) -> bool:
    return t.attrs.get("device") == "arm_cpu" or "aarch64" in str(t.attrs.get("mtriple", "")) \
        or "arm" in str(t.attrs.get("mtriple", ""))


def _scalar(e):
    if isinstance(e, Constant) and e.data.numpy().size == 1:
        return e.data.numpy().reshape(()).item()
    return None


def _shift(data, zero_point, out_dtype: str):
    """``data`` (and its zero point) moved by 128 into ``out_dtype`` (uint8 or int8)."""
    shift = 128 if out_dtype == "uint8" else -128
    moved = _t.cast(_t.add(_t.cast(data, "int32"), const(shift, "int32")), out_dtype)
    zp = _scalar(zero_point)
    new_zp = const(int(zp) + shift, "int32") if zp is not None else _t.add(
        zero_point, const(shift, "int32"))
    return moved, new_zp


def _rebuild(call_op, attrs, inputs, data, kernel, izp, kzp):
    return Call(call_op, [data, kernel, izp, kzp, *inputs[4:]], attrs)


def _to_dtypes(call_op, attrs, inputs, types, data_dtype, kernel_dtype):
    data, kernel, izp, kzp = inputs[:4]
    if (types[0].dtype, types[1].dtype) == (data_dtype, kernel_dtype):
        return None
    if types[0].dtype != data_dtype:
        data, izp = _shift(data, izp, data_dtype)
    if types[1].dtype != kernel_dtype:
        kernel, kzp = _shift(kernel, kzp, kernel_dtype)
    return _rebuild(call_op, attrs, inputs, data, kernel, izp, kzp)


def _no_fast_int8(make):
    def rewrite(attrs, inputs, types):
        data, kernel, izp, kzp = inputs[:4]
        zps = _scalar(izp), _scalar(kzp)
        if None in zps:
            return None  # per-channel or run-time zero points: left to QnnCanonicalize
        x = _t.subtract(_t.cast(data, "int16"), const(int(zps[0]), "int16"))
        w = _t.subtract(_t.cast(kernel, "int16"), const(int(zps[1]), "int16"))
        return make(x, w, attrs)

    return rewrite


def _host_fast_conv(attrs, inputs, types) -> bool:
    """Will QnnCanonicalize give this ``qnn.conv2d`` its fast form
    (``canonicalize_fast_conv``: the host's VNNI conv, or an exact float32 conv of the
    integers -- a depthwise conv's)? Then the int16 form, slower, is not wanted: a plain
    ``llvm`` target names no CPU, but the conv runs on this host."""
    from .canonicalize_fast_conv import fast_conv2d

    return fast_conv2d(attrs, inputs, types) is not None


def _legalize(op_name: str, make_float):
    call_op = Op.get(op_name)
    no_fast = _no_fast_int8(make_float)

    def rule(attrs, inputs, types):
        t = _target()
        if t is None or any(str(ty.dtype) not in ("int8", "uint8") for ty in types[:2]):
            return None  # (16-bit data, a QAT pool's sums: QnnCanonicalize's int32 form)
        kind = t.kind.name
        if kind == "cuda":
            return _to_dtypes(call_op, attrs, inputs, types, "int8", "int8")
        if kind != "llvm":
            return None
        if _is_arm(t):
            if is_fast_int8_on_arm(t):
                kdt = types[1].dtype
                return _to_dtypes(call_op, attrs, inputs, types, kdt, kdt)
            return no_fast(attrs, inputs, types)
        if is_fast_int8_on_intel(t):
            return _to_dtypes(call_op, attrs, inputs, types, "uint8", "int8")
        if op_name == "qnn.conv2d" and _host_fast_conv(attrs, inputs, types):
            return None  # (QnnCanonicalize's VNNI / exact float32 form on this host)
        return no_fast(attrs, inputs, types)

    register_op_attr(op_name, "FTVMQnnLegalize", rule)
    return rule


def _conv2d(x, w, a):
    return _nn.conv2d(x, w, strides=a.strides, padding=a.padding, dilation=a.dilation,
                      groups=a.groups, channels=a.channels, kernel_size=a.kernel_size,
                      data_layout=a.data_layout, kernel_layout=a.kernel_layout,
                      out_layout=a.out_layout, out_dtype=a.out_dtype or "int32")


def _dense(x, w, a):
    return _nn.dense(x, w, units=a.units, out_dtype=a.out_dtype or "int32")


legalize_qnn_conv2d = _legalize("qnn.conv2d", _conv2d)
legalize_qnn_dense = _legalize("qnn.dense", _dense)

__all__ = ["legalize_qnn_conv2d", "legalize_qnn_dense", "is_fast_int8_on_intel",
           "is_fast_int8_on_arm"]
