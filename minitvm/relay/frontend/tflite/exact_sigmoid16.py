"""int16 LOGISTIC and TANH as LiteRT's table kernels (``reference_integer_ops`` Logistic /
Tanh, which LiteRT runs for every input scale but the powers of two its fixed-point kernels
take): the input rescaled to 1 / (3 * 4096) per step by an integer multiplier and a rounding
right shift, then a 256-entry table of sigmoid(i / 24) in 0.16 fixed point interpolated on the
absolute value (tanh as 2 * sigmoid(2x) - 1; the anchors biased by half the interpolation's
midpoint error), mirrored for negative inputs. The importer
evaluates that for all 65536 int16 values; the op is one ``take``. Through float these were
off on 22% (LOGISTIC) and 48% (TANH, up to 9 steps) of the values."""

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


def table(name: str, in_scale: float) -> np.ndarray:
    """LOGISTIC's or TANH's int16 result for every int16 value (lowest first), output scale
    1 / 32768."""
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
