"""int16 elementwise ops LiteRT computes through its 16-bit lookup tables (LOG, EXP, GELU):
513 anchors over the input range, each biased by half its interval's midpoint error, and a
linear interpolation between two anchors per value. The importer evaluates that for all 65536
int16 values (numpy, float32 where LiteRT takes float) and the op becomes one ``take`` from
those results. Through float these were off on 15-65% of values (LOG up to 32768 steps: its
table maps log(0) to the output's lowest value). The transforms are LiteRT's, in float32:
``logf``, ``expf``, GELU as ``0.5f * x * erfcf(x * -sqrt(0.5f))`` or its tanh form (``tanhf``),
each C function the C library's own (LiteRT's calls, loaded through ctypes: ``_c_float``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import numpy as np

OPS = ("LOG", "EXP", "GELU")
_F = np.float32


def _round(x):
    """TfLiteRound in float32: half away from zero."""
    x = _F(x)
    return _F(np.sign(x) * np.floor(np.abs(x) + _F(0.5)))


def _transform(name: str, output_min: np.float32, approximate: bool):
    if name == "LOG":
        log = _c_float("logf", math.log)
        return lambda v: output_min if v <= 0 else log(v)
    if name == "EXP":
        return _c_float("expf", math.exp)
    if approximate:
        c, tanh = _F(math.sqrt(2 / math.pi)), _c_float("tanhf", math.tanh)
        return lambda v: _F(_F(0.5) * v * (_F(1) + tanh(c * (v + _F(0.044715) * v * v * v))))
    erfc, k = _c_float("erfcf", math.erfc), _F(-math.sqrt(0.5))
    return lambda v: _F(_F(0.5) * _F(v)) * erfc(_F(_F(v) * k))


@functools.cache
def _c_float(name: str, fallback):
    """The C library's float32 function ``name`` (``logf``, ``expf``, ``erfcf``, ``tanhf``),
    which LiteRT's tables call: numpy's float32 ones and double rounded to float32 differ from
    glibc's in the last bit now and then, enough to put one anchor in several thousand a step
    off. Where no C math library loads, ``fallback`` in double rounded to float32."""
    for lib in (ctypes.util.find_library("m"), "libm.so.6", "ucrtbase"):
        try:
            fn = getattr(ctypes.CDLL(lib), name) if lib else None
        except (OSError, AttributeError):
            continue
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            return lambda x: _F(fn(float(x)))
    return lambda x: _F(fallback(float(x)))


def anchors(name: str, qi, qo, approximate: bool = False) -> np.ndarray:
    """LiteRT's LUTPopulate<int16_t>: the 513 anchors of ``name`` for input (scale, zero point)
    ``qi`` and output ``qo``."""
    out_min = _F(qo[0]) * _F(-32768 - qo[1])
    return populate(_transform(name, out_min, approximate), qi, qo)


def populate(fn, qi, qo) -> np.ndarray:
    """LUTPopulate<int16_t> of the float32 function ``fn``: 513 anchors over the int16 inputs
    quantized as ``qi`` = (scale, zero point), in the output's ``qo``."""
    si, so = _F(qi[0]), _F(qo[0])
    in_min, in_max = si * _F(-32768 - qi[1]), si * _F(32767 - qi[1])
    out_min, out_max = so * _F(-32768 - qo[1]), so * _F(32767 - qo[1])
    step = (in_max - in_min) / _F(512)
    half = step / _F(2)
    inv = _F(65536) / (out_max - out_min)
    lut = np.empty(513, "int64")
    for i in range(512):
        v = in_min + _F(i) * step
        val, mid, nxt = fn(v), fn(v + half), fn(in_min + _F(i + 1) * step)
        sample = _round(val * inv)
        interp = _round((nxt * inv + _round(val * inv)) / _F(2))
        bias = _round((interp - _round(mid * inv)) / _F(2))
        lut[i] = int(min(max(sample - bias, _F(-32768)), _F(32767)))
    lut[512] = int(min(max(_round(fn(in_max) * inv), _F(-32768)), _F(32767)))
    return lut


def table(name: str, qi, qo, approximate: bool = False) -> np.ndarray:
    """The op's int16 result for every int16 value, lowest first."""
    return interpolate(anchors(name, qi, qo, approximate))


def interpolate(lut: np.ndarray) -> np.ndarray:
    """LiteRT's LUTLookup of every int16 value (lowest first) in the 513 anchors ``lut``: the
    anchor at 256 + (v >> 7) plus its slope times the low 7 bits, rounded half up."""
    v = np.arange(-32768, 32768, dtype="int64")
    index, offset = 256 + (v >> 7), v & 0x7F
    base = lut[index]
    out = base + (((lut[index + 1] - base) * offset + 64) >> 7)
    return out.astype("int16")
