"""onnxruntime's integer softmax, which both ONNX importers follow to give its integers: the
kernel of com.microsoft.QLinearSoftmax, and what ORT runs for a DequantizeLinear -> Softmax ->
QuantizeLinear of 8-bit activations (its QDQ fusion makes that a QLinearSoftmax).

ORT does not compute a float softmax and quantize it. It builds a table of 256 float32
exponentials ``exp((j - 255 + shift) * x_scale)`` (``shift`` keeps a row's sum inside float32),
looks each value up at ``q - rowmax(q) + 255``, sums the row in float32 and gives
``round(e * floor(1 / y_scale) / sum) + y_zero_point``. The floor is what a float softmax
misses: for the usual output scale 1/255 it is 254, so about 1% of the probabilities come
out a step lower (and every product of them after). An int8 result past 127 wraps as ORT's
cast does (only a zero point above -128 lets it happen).

Pure numpy over values known at import; each dialect builds the ops (``QSoftmaxPlan``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_FLOAT_MAX = np.float32(np.finfo(np.float32).max)
_RESERVED = 5.0  # the headroom (in e-folds) ORT leaves for a row's float32 sum


@dataclass(frozen=True)
class QSoftmaxPlan:
    """How to compute one integer softmax: ``table[q - rowmax(q) + 255]`` the exponentials,
    ``y_mult`` the integer multiplier ``floor(1 / y_scale)``, ``y_zp`` the output zero point,
    ``out_dtype`` the 8-bit output dtype; ``wraps``: an int8 result may pass 127 (then it
    wraps: ``min(v, 255)`` minus 256 above 127)."""

    table: np.ndarray
    y_mult: np.float32
    y_zp: int
    out_dtype: str
    wraps: bool

    def saturate_bounds(self) -> tuple[float, float]:
        """The clip ORT's cast amounts to where nothing wraps (the lower bound is never hit:
        every result is at least the zero point)."""
        return (0.0, 255.0) if self.out_dtype == "uint8" else (-128.0, 127.0)


def exp_table(x_scale: np.float32, reduce_len: int) -> np.ndarray:
    """ORT's 256 float32 exponentials for input scale ``x_scale`` and rows of ``reduce_len``."""
    shift = np.log(np.float64(_FLOAT_MAX / np.float32(reduce_len)))
    shift = max(0.0, float(shift) - _RESERVED) / np.float64(x_scale)
    j = np.arange(256, dtype=np.float64)
    return np.exp((j - 255.0 + shift) * np.float64(x_scale)).astype(np.float32)


def _scalar_f32(v) -> np.float32 | None:
    if v is None:
        return None
    a = np.asarray(v)
    if a.dtype != np.float32 or a.size != 1:
        return None
    s = np.float32(a.reshape(()))
    return s if np.isfinite(s) and s > 0 else None


def qsoftmax_plan(x_dtype: str, x_scale, y_dtype: str, y_scale, y_zp,
                  reduce_len) -> QSoftmaxPlan | None:
    """The plan of an integer softmax over 8-bit ``x_dtype`` input with scale ``x_scale`` into
    ``y_dtype`` (scale ``y_scale``, zero point ``y_zp``: a value, or None for 0), rows of
    ``reduce_len`` values; None where ORT's kernel does not apply or a parameter is not a
    known scalar (the importer keeps the float softmax then)."""
    if x_dtype not in ("uint8", "int8") or y_dtype not in ("uint8", "int8"):
        return None
    xs, ys = _scalar_f32(x_scale), _scalar_f32(y_scale)
    if xs is None or ys is None or not isinstance(reduce_len, (int, np.integer)) or \
            reduce_len < 1:
        return None
    if y_zp is None:
        zp = 0
    else:
        z = np.asarray(y_zp)
        if z.size != 1 or str(z.dtype) != y_dtype:
            return None
        zp = int(z.reshape(()))
    mult = np.float32(np.floor(np.float32(1.0) / ys))
    top = zp + int(mult)  # (the largest result: a row of one value)
    wraps = y_dtype == "int8" and top > 127
    return QSoftmaxPlan(exp_table(xs, int(reduce_len)), mult, zp, y_dtype, wraps)


def nan_rows(x_scale) -> bool:
    """Is ``x_scale`` +inf (onnxruntime's quantizer calibrates a -inf attention mask to it)?
    Then ORT's exponentials are NaN at a row's maximum (``0 * inf``) and 0 elsewhere, every
    row's sum is NaN and so is every result, which ORT's float-to-int cast makes 0 whatever
    the zero point: the QLinearSoftmax is 0 everywhere, which the importers fold."""
    a = None if x_scale is None else np.asarray(x_scale)
    return a is not None and a.size == 1 and bool(np.isposinf(a.reshape(())))


def reference(q: np.ndarray, plan: QSoftmaxPlan, axis: int = -1) -> np.ndarray:
    """numpy's run of ``plan`` over 8-bit ``q`` along ``axis`` (the row sums sequential, as
    ORT's loop adds them): what the tests compare the importers with."""
    qi = q.astype(np.int64)
    e = plan.table[qi - qi.max(axis=axis, keepdims=True) + 255]
    s = np.cumsum(e, axis=axis, dtype=np.float32)
    s = np.take(s, [-1], axis=axis)
    v = np.rint((e * plan.y_mult) / s).astype(np.int64) + plan.y_zp
    v = np.minimum(v, 255)
    if plan.out_dtype == "int8":
        v = np.where(v > 127, v - 256, v)
    return v.astype(plan.out_dtype)


def softmax_axis(shape, attrs: dict, opset: int) -> int | None:
    """The one axis a Softmax (of ``opset``) normalizes over, as a non-negative index; None
    for an opset < 13 softmax over several axes (flattened from ``axis``)."""
    nd = len(shape)
    if not nd:
        return None
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1)) % nd
    return axis if opset >= 13 or axis == nd - 1 else None


def note_softmax(ctx, attrs: dict) -> None:
    """Note the current Softmax node when it reads a DequantizeLinear'd 8-bit activation
    (``ctx.act_inputs``) and only a QuantizeLinear can read it (one use): its quantization
    is then the importer's ``quantized_softmax``'s."""
    name, out = ctx.node.input[0], ctx.node.output[0]
    act = ctx.act_inputs.get(name)
    if act is None or ctx.uses.get(out, 0) != 1:
        return
    q, scale, _ = act
    axis = softmax_axis(ctx.shape(q), attrs, ctx.opset)
    if axis is not None:
        ctx.softmax_inputs[out] = (q, scale, axis)


def noted_softmax_plan(ctx, scale, zp, out_dtype: str, known):
    """``(q, plan, axis)`` when the current QuantizeLinear quantizes a noted Softmax
    (``note_softmax``) to the 8-bit dtype of that softmax's input with scalar parameters
    ``known`` reads at import (the importer's value lookup); else None."""
    found = ctx.softmax_inputs.get(ctx.node.input[0])
    if found is None:
        return None
    q, x_scale, axis = found
    if ctx.dtype(q) != out_dtype:
        return None
    zv = None if zp is None else known(zp)
    if zp is not None and zv is None:
        return None
    plan = qsoftmax_plan(ctx.dtype(q), x_scale, out_dtype, known(scale), zv,
                         ctx.shape(q)[axis])
    return None if plan is None else (q, plan, axis)
