"""int16 LOGISTIC and TANH as LiteRT computes them, by input scale:

- at most scales, its table kernels (``reference_integer_ops`` Logistic / Tanh): the input
  rescaled to 1 / (3 * 4096) per step by an integer multiplier and a rounding right shift,
  then a 256-entry table of sigmoid(i / 24) in 0.16 fixed point interpolated on the absolute
  value (tanh as 2 * sigmoid(2x) - 1; the anchors biased by half the interpolation's midpoint
  error), mirrored for negative inputs;
- at the powers of two 2**-12 (both) and 2**-11 (TANH), gemmlowp's int16 fixed-point tanh /
  logistic (exp on negative values by a Taylor expansion and a barrel shifter of exp(-2**k)
  multipliers, then Newton-Raphson division), every step in int16.

The importer evaluates the kernel for all 65536 int16 values (``results``); the op is one
``take``. Through float these were off on 24% (LOGISTIC) and 51% (TANH, up to 11 steps) of
the values."""

from __future__ import annotations

import numpy as np

from . import fixed_point as fp

OPS = ("LOGISTIC", "TANH")
_INPUT_INTEGER_BITS = 3  # (LiteRT's int16 activations: Q3.12 inputs at a power-of-two scale)


def sigmoid_table() -> np.ndarray:
    """LiteRT's 256 anchors of sigmoid(i / 24) in 0.16 fixed point: each sample moved by half
    the linear interpolation's error at its interval's midpoint, rounded half away from zero;
    the last one 65535."""
    def s(v):
        return 65536.0 / (1.0 + np.exp(-v / 24.0))

    i = np.arange(256, dtype="float64")
    v = np.floor(s(i) + (s(i + 0.5) - (s(i) + s(i + 1)) / 2) / 2 + 0.5).astype("int64")
    v[-1] = 65535  # (65534 by the formula: 20-56 of 65536 TANH values a step off LiteRT)
    return v


def uses_table(name: str, in_scale: float) -> bool:
    """Does LiteRT run the table kernel for this input scale? Its fixed-point kernels take
    the powers of two 2**-12 (both ops) and 2**-11 (TANH)."""
    pot, log2 = fp.checked_log2(in_scale)
    shift = 15 - _INPUT_INTEGER_BITS + log2
    return not (pot and (shift == 0 or name == "TANH" and shift == 1))


def input_rescale(in_scale: float) -> tuple[int, int]:
    """(multiplier, right shift) taking int16 values in ``in_scale`` to steps of
    1 / (3 * 4096): the multiplier doubled until above 32767 / 2 (at most 31 times), then
    truncated."""
    m, shift = np.float64(np.float32(in_scale)) * 4096.0 * 3.0, 0
    while m <= 32767.0 / 2.0 and shift <= 30:
        m, shift = m * 2.0, shift + 1
    return int(m), shift


def results(name: str, in_scale: float) -> np.ndarray:
    """LOGISTIC's or TANH's int16 result for every int16 value (lowest first), output scale
    1 / 32768, by the kernel LiteRT runs at ``in_scale``."""
    if uses_table(name, in_scale):
        return table(name, in_scale)
    return fixed_point_table(name, in_scale)


def table(name: str, in_scale: float) -> np.ndarray:
    """The table kernel's results for every int16 value (lowest first)."""
    mult, shift = input_rescale(in_scale)
    x = np.arange(-32768, 32768, dtype="int64")
    v = (x * mult + ((1 << shift) >> 1)) >> shift
    a = np.abs(v)
    t = sigmoid_table()
    frac_bits = 9 if name == "LOGISTIC" else 8  # (LOGISTIC halves the argument: 2 ** 9)
    high = a >> frac_bits
    inside = high < 255
    hi = np.minimum(high, 254)
    low = a & ((1 << frac_bits) - 1)
    r = (t[hi] << frac_bits) + low * (t[hi + 1] - t[hi])
    if name == "LOGISTIC":
        r = np.where(inside, r, 0x7FFF << 10)
        r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1) >> 10
    else:
        r = np.where(inside, r, 0xFFFF << 8)
        r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1) >> 8
    return r.astype("int16")


# ------------------------------------------------------------------ the fixed-point kernels
# At the power-of-two input scales LiteRT runs gemmlowp's int16 fixed-point tanh / logistic:
# Q3.12 inputs (TANH at 2**-11 first doubled, saturating), Q0.15 outputs, every step below in
# int16 arithmetic (sums wrap, products are rounding doubling high multiplies).

def _w16(x) -> np.ndarray:
    """int16 wrap-around of int64 ``x``."""
    return ((np.asarray(x, "int64") + 32768) & 0xFFFF) - 32768


def _mul(a, b) -> np.ndarray:
    return fp.rounding_doubling_high_mul16(a, b)


def _shl_sat(x, n: int) -> np.ndarray:
    """Saturating multiply by 2**n of int16 values."""
    return np.clip(np.asarray(x, "int64") << n, *fp.I16)


def _shr_round(x, n: int) -> np.ndarray:
    """Division by 2**n rounding half away from zero."""
    return fp.rounding_divide_by_pot(x, n)


def _const(q31: int) -> int:
    """A Q31 constant in 16 bits: rounding-shifted right by 16."""
    return int(_shr_round(np.int64(q31), 16))


def _exp_quarter(a) -> np.ndarray:
    """exp(a) for Q0.15 ``a`` in [-1/4, 0): a Taylor expansion around -1/8."""
    x = _w16(a + (1 << 12))
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    poly = _shr_round(_w16(_mul(_w16(_shr_round(x4, 2) + x3), _const(715827883)) + x2), 1)
    c = _const(1895147668)
    return np.clip(c + _mul(c, _w16(x + poly)), *fp.I16)


def _exp_negative(a, integer_bits: int) -> np.ndarray:
    """exp(a) in Q0.15 of Q``integer_bits`` ``a`` <= 0 (0 -> 32767): the input's last
    quarter through ``_exp_quarter``, each higher bit a multiply by exp(-2**k)."""
    frac = 15 - integer_bits
    quarter = 1 << (frac - 2)
    rem_q = _w16((a & (quarter - 1)) - quarter)
    result = _exp_quarter(_shl_sat(rem_q, integer_bits))
    remainder = _w16(rem_q - a)
    for k, m in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                 (2, 39332535), (3, 720401), (4, 242)):
        if integer_bits > k:
            result = np.where(remainder & (1 << (frac + k)), _mul(result, _const(m)), result)
    return np.where(a == 0, fp.I16[1], result)


def _newton_reciprocal(a):
    """Q2.13 x ~ 1 / half_denominator after three Newton-Raphson steps, and that half
    denominator (1 + a) / 2 of Q0.15 ``a`` in [0, 1)."""
    s = np.asarray(a, "int64") + fp.I16[1]
    t = s + np.where(s >= 0, 1, -1)
    half = np.sign(t) * (np.abs(t) // 2)  # (C's division: toward zero)
    one = 1 << 13
    x = _w16(_const(1515870810) + _mul(half, _const(-1010580540)))
    for _ in range(3):
        x = _w16(x + _shl_sat(_mul(x, _w16(one - _mul(half, x))), 2))
    return x


def fixed_point_table(name: str, in_scale: float) -> np.ndarray:
    """gemmlowp's int16 LOGISTIC / TANH for every int16 value (lowest first) at the input
    scales of ``uses_table``'s exceptions."""
    x = np.arange(-32768, 32768, dtype="int64")
    if name == "TANH":
        if fp.checked_log2(in_scale)[1] == -11:
            x = _shl_sat(x, 1)
        n = np.where(x < 0, x, _w16(-x))  # -|x| (Q3.12; as Q4.11: 2x)
        e = _exp_negative(n, 4)  # exp(-2|x|)
        t = _shl_sat(_w16(_newton_reciprocal(e) - (1 << 13)), 2)  # (1 - e) / (1 + e)
        return np.where(x == 0, 0, np.where(x < 0, _w16(-t), t)).astype("int16")
    pos = x > 0
    absx = np.where(pos, x, _w16(-x))
    r = _shl_sat(_newton_reciprocal(_exp_negative(_w16(-absx), 3)), 1)  # 1 / (1 + e)
    out = np.where(pos, r, _w16(fp.I16[1] - r))
    return np.where(x == 0, 1 << 14, out).astype("int16")
