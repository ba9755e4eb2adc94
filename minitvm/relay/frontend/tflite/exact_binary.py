"""Quantized ADD, SUB, MUL (and int8 SQUARED_DIFFERENCE) of two 8-bit tensors with exactly
TFLite's integer results, in the cheapest form that gives them.

TFLite computes these in fixed point: ADD / SUB shift each input (less its zero point) left by
20 bits, rescale both to twice the larger input scale (``MultiplyByQuantizedMultiplier``: a
doubling high multiply rounding half up, then a rounding right shift, half away from zero),
add or subtract, rescale the sum to the output scale the same way; MUL rescales the product of
the two inputs once; SQUARED_DIFFERENCE shifts by 7, rescales both, squares the difference
and rescales that. The result is a function of the two 8-bit inputs only, so for a given
operator (its scales and zero points, known at import) all 256 x 256 pairs can be computed at
import (``reference``, numpy int64, step for step as TFLite's kernels).

A float32 form ``round(x1 * k1 + (x2 * k2 + c))`` (ADD, SUB; where ties to even do not
match, ``floor(v + 0.5 +- e)`` with the sign of v) is a few cheap vector ops that fuse into
the producing conv's epilogue; it is kept when it gives TFLite's integer for every
pair: each candidate (TFLite's effective multipliers, then the constants a few float32 units
apart) is evaluated at import in numpy float32 in the same order of operations as the kernel
(no fast-math: LLVM neither contracts nor reassociates these), and compared with
``reference``. MUL's form is ``floor(p * k + 0.5 +- e)``, ``p`` the exact product of the two
inputs less their zero points (below 2**24 in magnitude, exact in float32), ``e`` TFLite's
double-rounding offset (derivation in ``_mul_forms``). Where no candidate matches, the operator
takes TFLite's own fixed-point arithmetic in int64 (``integer_form``): exact, slower, and it
stops the fusion into the conv."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from ... import op as _op

LEFT_SHIFT = 20  # TFLite's ADD / SUB headroom for 8-bit inputs
LEFT_SHIFT16 = 15  # ... and for int16 ones (its general-scale kernel)
SQUARED_SHIFT = 7  # ... and SQUARED_DIFFERENCE's (int8 only)
OPS = ("ADD", "SUB", "MUL", "SQUARED_DIFFERENCE")


def quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier of one real multiplier: ``m = m0 * 2**(shift - 31)``, ``m0``
    in [2**30, 2**31) rounded half away from zero (0, 0 for a multiplier below 2**-31)."""
    q, shift = np.frexp(np.float64(m))
    m0 = int(np.floor(q * 2.0**31 + 0.5))
    if m0 == 2**31:
        m0, shift = m0 // 2, shift + 1
    if shift < -31:
        return 0, 0
    return m0, int(shift)


def multiply(x: np.ndarray, m: float) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier of int64 ``x`` by ``m``: left shift, the doubling
    high multiply ``(x * m0 + 2**30) >> 31`` (its nudge and truncation round half up), then the
    rounding right shift (half away from zero)."""
    m0, shift = quantize_multiplier(m)
    left, right = max(shift, 0), max(-shift, 0)
    high = ((np.asarray(x, "int64") << left) * m0 + 2**30) >> 31
    if right:
        high = (high + (1 << (right - 1)) - (high < 0)) >> right
    return high


def _multipliers(op: str, s1: float, s2: float, so: float,
                 left_shift: int = LEFT_SHIFT) -> tuple[float, ...]:
    """The real multipliers TFLite derives (in double, from the float32 scales)."""
    s1, s2, so = (np.float64(np.float32(v)) for v in (s1, s2, so))
    if op == "MUL":
        return (s1 * s2 / so,)
    twice = 2 * max(s1, s2)
    if op == "SQUARED_DIFFERENCE":
        return s1 / twice, s2 / twice, twice * twice / (2 ** (2 * SQUARED_SHIFT) * so)
    return s1 / twice, s2 / twice, twice / (2**left_shift * so)


def reference(op: str, dtype: str, q1, q2, qo, qlo: int, qhi: int) -> np.ndarray:
    """TFLite's integer results for every input pair: ``[x1 - lo, x2 - lo]`` of the dtype's
    values; ``q*`` are (scale, zero point); ``qlo..qhi`` the output's (activation) range."""
    lo, hi = QRANGE[dtype]
    v = np.arange(lo, hi + 1, dtype="int64")
    a1, a2 = (v - q1[1])[:, None], (v - q2[1])[None, :]
    mults = _multipliers(op, q1[0], q2[0], qo[0])
    if op == "MUL":
        raw = multiply(a1 * a2, mults[0])
    elif op == "SQUARED_DIFFERENCE":
        d = multiply(a1 << SQUARED_SHIFT, mults[0]) - multiply(a2 << SQUARED_SHIFT, mults[1])
        raw = multiply(d * d, mults[2])
    else:
        r1 = multiply(a1 << LEFT_SHIFT, mults[0])
        r2 = multiply(a2 << LEFT_SHIFT, mults[1])
        raw = multiply(r1 + r2 if op == "ADD" else r1 - r2, mults[2])
    return np.clip(raw + qo[1], qlo, qhi)


# ------------------------------------------------------------------ float32 forms
class _Numpy:
    """The form's operations on float32 arrays (each rounded to float32, as the kernel)."""

    @staticmethod
    def cast(x):
        return x.astype("float32")

    @staticmethod
    def const(v):
        return np.float32(v)

    add, sub, mul = staticmethod(np.add), staticmethod(np.subtract), staticmethod(np.multiply)
    round, floor = staticmethod(np.round), staticmethod(np.floor)  # (round: half to even)

    @staticmethod
    def negative_select(v, neg, pos):
        return np.where(v < np.float32(0), neg, pos)


class _Relay:
    """The same operations as Relay expressions."""

    @staticmethod
    def cast(x):
        return _op.cast(x, "float32")

    @staticmethod
    def const(v):
        return _expr.const(np.array(v, "float32"), "float32")

    add, sub, mul = staticmethod(_op.add), staticmethod(_op.subtract), staticmethod(_op.multiply)
    round, floor = staticmethod(_op.round), staticmethod(_op.floor)

    @staticmethod
    def negative_select(v, neg, pos):
        return _op.where(_op.less(v, _Relay.const(0.0)), neg, pos)


def _add_form(ops, x1, x2, k1, k2, c):
    """round(x1 * k1 + (x2 * k2 + c)): ADD / SUB with both zero points and the output's in c
    (ties to even)."""
    return ops.round(ops.add(ops.mul(ops.cast(x1), ops.const(k1)),
                             ops.add(ops.mul(ops.cast(x2), ops.const(k2)), ops.const(c))))


def _add_signed_form(ops, x1, x2, k1, k2, c, pos, neg, zo):
    """floor(v + (0.5 +- e)) + zo, v = x1 * k1 + (x2 * k2 + c): ADD / SUB rounding ties away
    from zero as TFLite (exact halves: equal input scales and an output scale twice theirs)."""
    v = ops.add(ops.mul(ops.cast(x1), ops.const(k1)),
                ops.add(ops.mul(ops.cast(x2), ops.const(k2)), ops.const(c)))
    r = ops.floor(ops.add(v, ops.negative_select(v, ops.const(neg), ops.const(pos))))
    return ops.add(r, ops.const(zo))


def _mul_form(ops, x1, x2, z1, z2, k, pos, neg, zo):
    """floor(p * k + (0.5 +- e)) + zo, p = (x1 - z1) * (x2 - z2) (exact in float32)."""
    p = ops.mul(ops.sub(ops.cast(x1), ops.const(z1)), ops.sub(ops.cast(x2), ops.const(z2)))
    v = ops.mul(p, ops.const(k))
    r = ops.floor(ops.add(v, ops.negative_select(v, ops.const(neg), ops.const(pos))))
    return ops.add(r, ops.const(zo))


FORMS = {"add": _add_form, "add_signed": _add_signed_form, "mul": _mul_form}


def _nudged(v: float, steps) -> list[np.float32]:
    """float32 ``v`` and its neighbours ``steps`` units in the last place away."""
    f = np.float32(v)
    out = []
    for s in steps:
        g = f
        for _ in range(abs(s)):
            g = np.nextafter(g, np.float32(np.inf if s > 0 else -np.inf), dtype="float32")
        out.append(g)
    return out


def _offsets(m: float) -> list[float]:
    """Candidate e: TFLite's own offset of its two roundings of a product by ``m`` (see
    ``_mul_forms``), then larger ones (float32 loses a small e beside a value of 100; a larger
    one is as exact wherever no value lies between: the check over all pairs says)."""
    shift = quantize_multiplier(m)[1]
    own = 2.0 ** (shift - 1) if shift < 0 else 0.0
    return [own] + [2.0**-k for k in (14, 12, 10, 8) if 2.0**-k > own]


def _add_forms(op, q1, q2, qo):
    """Candidate forms of ADD / SUB: TFLite's effective multipliers (its fixed-point constants
    as reals) with c and k2 nudged a few float32 units; round (ties to even) first, then the
    signed floor (ties away from zero)."""
    m1, m2, mo = _multipliers(op, q1[0], q2[0], qo[0])

    def eff(m):
        m0, shift = quantize_multiplier(m)
        return m0 * 2.0 ** (shift - 31)

    k1 = eff(m1) * 2**LEFT_SHIFT * eff(mo)
    k2 = eff(m2) * 2**LEFT_SHIFT * eff(mo) * (1 if op == "ADD" else -1)
    c = -q1[1] * k1 - q2[1] * k2
    for dk2 in (0, -1, 1):
        for dk1 in (0, -1, 1):
            kk1, kk2 = _nudged(k1, (dk1,))[0], _nudged(k2, (dk2,))[0]
            for cc in _nudged(c + qo[1], (0, -1, 1, -2, 2, -3, 3, -4, 4)):
                yield "add", (kk1, kk2, cc)
    for e in _offsets(mo):
        for cc in _nudged(c, (0, -1, 1)):
            yield "add_signed", (np.float32(k1), np.float32(k2), cc, np.float32(0.5 + e),
                                 np.float32(0.5 - e), qo[1])


def _mul_forms(q1, q2, qo):
    """Candidate MUL constants. TFLite rounds twice: h = floor(p * m0 / 2**31 + 1/2), then
    h / 2**r half away from zero; for h >= 0 that is floor((h + 2**(r-1)) / 2**r) =
    floor(p * M + 1/2 + e) with M = m0 / 2**(31 + r) and e = 2**-(r+1) (nested floors of
    integers), for h < 0 floor(p * M + 1/2 - e). (The sign test on p * M differs from h's only
    where both give the same floor.)"""
    (m,) = _multipliers("MUL", q1[0], q2[0], qo[0])
    m0, shift = quantize_multiplier(m)
    for e in _offsets(m):
        for k in _nudged(m0 * 2.0 ** (shift - 31), (0, -1, 1)):
            yield "mul", (q1[1], q2[1], k, np.float32(0.5 + e), np.float32(0.5 - e), qo[1])


def _grid(dtype: str):
    lo, hi = QRANGE[dtype]
    v = np.arange(lo, hi + 1).astype(dtype)
    return v[:, None], v[None, :]


def float_constants(op: str, dtype: str, q1, q2, qo, qlo: int, qhi: int):
    """The first candidate (form name, constants) whose float32 form gives ``reference`` on
    every input pair (after the clamp to ``[qlo, qhi]``), or None (SQUARED_DIFFERENCE has
    no float form: it squares two rounded rescales)."""
    if op == "SQUARED_DIFFERENCE":
        return None
    ref = reference(op, dtype, q1, q2, qo, qlo, qhi)
    x1, x2 = _grid(dtype)
    with np.errstate(all="ignore"):
        for form, consts in (_mul_forms(q1, q2, qo) if op == "MUL" else
                             _add_forms(op, q1, q2, qo)):
            got = np.clip(FORMS[form](_Numpy, x1, x2, *consts), qlo, qhi)
            if np.array_equal(got, ref):
                return form, consts
    return None


def float_form(x1, x2, found, dtype: str, qlo: int, qhi: int):
    """The float32 form ``float_constants`` found, clamped and cast to ``dtype``."""
    form, consts = found
    v = FORMS[form](_Relay, x1, x2, *consts)
    return _op.cast(_op.clip(v, float(qlo), float(qhi)), dtype)


def integer_form(op: str, x1, x2, q1, q2, qo, dtype: str, qlo: int, qhi: int,
                 shift_folded: bool = False):
    """TFLite's fixed-point arithmetic itself, in int64 Relay ops (int16 ADD / SUB: 15 bits
    of headroom, not 20). ``shift_folded``: LiteRT's elementwise (non-broadcast) int16 ADD,
    which folds each input multiplier's right shift into the 15-bit left shift (one shift
    by ``15 + shift``, arithmetic where negative) before the doubling high multiply, so the
    inputs are rounded once, not twice (``_rescale_shift_folded``)."""
    shift = LEFT_SHIFT16 if dtype == "int16" else LEFT_SHIFT
    def i64(v):
        return _expr.const(np.array(v, "int64"), "int64")

    def rescale(v, m):
        m0, shift = quantize_multiplier(m)
        left, right = max(shift, 0), max(-shift, 0)
        if left:
            v = _op.left_shift(v, i64(left))
        h = _op.right_shift(_op.add(_op.multiply(v, i64(m0)), i64(2**30)), i64(31))
        if not right:
            return h
        h = _op.add(_op.add(h, i64(1 << (right - 1))), _op.right_shift(h, i64(63)))
        return _op.right_shift(h, i64(right))

    a1 = _op.subtract(_op.cast(x1, "int64"), i64(q1[1]))
    a2 = _op.subtract(_op.cast(x2, "int64"), i64(q2[1]))
    mults = _multipliers(op, q1[0], q2[0], qo[0], shift)
    if op == "MUL":
        raw = rescale(_op.multiply(a1, a2), mults[0])
    elif op == "SQUARED_DIFFERENCE":
        d = _op.subtract(rescale(_op.left_shift(a1, i64(SQUARED_SHIFT)), mults[0]),
                         rescale(_op.left_shift(a2, i64(SQUARED_SHIFT)), mults[1]))
        raw = rescale(_op.multiply(d, d), mults[2])
    else:
        if shift_folded:
            r1, r2 = (_rescale_shift_folded(a, m, shift, i64) for a, m in
                      ((a1, mults[0]), (a2, mults[1])))
        else:
            r1 = rescale(_op.left_shift(a1, i64(shift)), mults[0])
            r2 = rescale(_op.left_shift(a2, i64(shift)), mults[1])
        raw = rescale(_op.add(r1, r2) if op == "ADD" else _op.subtract(r1, r2), mults[2])
    return _op.cast(_op.clip(_op.add(raw, i64(qo[1])), float(qlo), float(qhi)), dtype)


def _rescale_shift_folded(a, m: float, left_shift: int, i64):
    """``a << left_shift`` times the input multiplier ``m`` as LiteRT's elementwise int16 ADD
    computes it: ``a`` shifted by ``left_shift + shift`` (``shift <= 0``, the multiplier's
    exponent; a floor right shift where the sum is negative), then the doubling high multiply
    rounding half up; no rounding right shift after it."""
    m0, shift = quantize_multiplier(m)
    k = left_shift + shift
    if k > 0:
        a = _op.left_shift(a, i64(k))
    elif k < 0:
        a = _op.right_shift(a, i64(-k))
    return _op.right_shift(_op.add(_op.multiply(a, i64(m0)), i64(2**30)), i64(31))


def convert(op: str, x1, x2, q1, q2, qo, dtype: str, qlo: int, qhi: int):
    """``op`` of the 8-bit ``x1``, ``x2`` (quantized as ``q1``, ``q2``: (scale, zero point)) to
    ``qo``'s, clamped to ``[qlo, qhi]``: the float32 form where it is exact on every pair,
    else TFLite's integer arithmetic."""
    found = float_constants(op, dtype, q1, q2, qo, qlo, qhi)
    if found is not None:
        return float_form(x1, x2, found, dtype, qlo, qhi)
    return integer_form(op, x1, x2, q1, q2, qo, dtype, qlo, qhi)
