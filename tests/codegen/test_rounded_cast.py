"""float32 -> integer casts of ``round(x)``, clipped or not by integer constants (a requantize's
``cast(clip(round(x), 0, 255))``), emitted as ``cvtps2dq`` of the clipped ``x``
(``ExprEmitter._rounded_cast``) on a host without AVX-512: every input (NaN, infinities, values
past int32, halves rounding to even, values at and past the bounds) casts to what
``float_to_int`` of numpy's clip of its round gives; bounds that are not integers, scalars and
AVX-512's 16 lanes keep ``nearbyint`` and the truncation."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import jit
from minitvm.tir import expr as E
from minitvm.topi.reference.tensor import float_to_int

SPECIAL = [np.nan, np.inf, -np.inf, 2.0 ** 31, -2.0 ** 31, 2.0 ** 31 - 128, -2.0 ** 31 - 256,
           3e9, -3e9, 0.5, 1.5, 2.5, -0.5, -1.5, 254.5, 255.5, 255.49, -128.5, 127.5, -0.0,
           -0.4, 126.5, 65535.5, -32768.5]


def _kernel(n: int, lanes: int, dtype: str, bounds, func: str = "tir.round"):
    """``B[i] = cast(dtype, min(max(round(A[i]), lo), hi))`` (``bounds`` None: no clip), in
    vectors of ``lanes`` (1: a serial loop)."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), dtype, "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")

    def value(idx):
        v = E.Call("float32", func, [A[idx]])
        if bounds is not None:
            lo, hi = bounds
            v = E.Min(E.Max(v, E.FloatImm("float32", lo)), E.FloatImm("float32", hi))
        return E.Cast(dtype, v)
    if lanes == 1:
        body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(B, value(i), [i]))
    else:
        body = tir.For(i, 0, n // lanes, tir.ForKind.SERIAL, tir.For(
            j, 0, lanes, tir.ForKind.VECTORIZED, tir.BufferStore(
                B, value(i * lanes + j), [i * lanes + j])))
    return codegen.build(tir.PrimFunc([A, B], body))


def _expected(x, dtype, bounds):
    r = np.round(x)  # (numpy rounds halves to even, as nearbyint)
    if bounds is not None:  # (NaN stays NaN through the clip)
        r = np.where(np.isnan(r), r, np.minimum(np.maximum(r, bounds[0]), bounds[1]))
    return float_to_int(r.astype("float32"), dtype)


def _takes_it(lanes: int, bounds) -> bool:
    whole = bounds is None or all(float(b).is_integer() for b in bounds)
    return whole and lanes in (4, 8, 16, 32) and jit.host_has("avx") and \
        not jit.host_has("avx512f")


@pytest.mark.parametrize("lanes", [16, 8, 4, 32, 1])
@pytest.mark.parametrize("dtype, bounds", [
    ("uint8", (0.0, 255.0)), ("int8", (-128.0, 127.0)), ("int16", (-32768.0, 32767.0)),
    ("int32", None), ("uint8", None), ("int8", (-100.5, 100.5)), ("int32", (-3e9, 3e9))])
def test_rounded_cast_equals_the_reference(lanes, dtype, bounds, rng):
    n = 96
    x = rng.uniform(-400, 400, n).astype("float32")
    x[:len(SPECIAL)] = np.array(SPECIAL, "float32")
    x[len(SPECIAL):len(SPECIAL) + 16] = (rng.integers(-300, 300, 16) + 0.5).astype("float32")
    mod = _kernel(n, lanes, dtype, bounds)
    out = np.empty(n, dtype)
    mod["main"](x, out)
    np.testing.assert_array_equal(out, _expected(x, dtype, bounds))
    src = mod.get_source()
    assert ("cvt.ps2dq" in src or "sse2.cvtps2dq" in src) == _takes_it(lanes, bounds)


def test_nearbyint_takes_it_too(rng):
    x = rng.uniform(-300, 300, 64).astype("float32")
    x[:len(SPECIAL)] = np.array(SPECIAL, "float32")
    mod = _kernel(64, 8, "uint8", (0.0, 255.0), func="tir.nearbyint")
    out = np.empty(64, "uint8")
    mod["main"](x, out)
    np.testing.assert_array_equal(out, _expected(x, "uint8", (0.0, 255.0)))
    assert ("cvt.ps2dq" in mod.get_source()) == _takes_it(8, (0.0, 255.0))


@pytest.mark.parametrize("lanes", [4, 8, 16, 32])
def test_clips_are_min_and_max_instructions(lanes, rng):
    """The clips of a rounded cast are x86's ``minps`` / ``maxps`` of the bound (the clip at 0,
    a ReLU's, was a compare and an and: LLVM folds the select of a zero); the machine code has
    no compare left, and NaN, infinities and the bounds still give the reference's values."""
    from minitvm.codegen.llvm import cvtt

    if not _takes_it(lanes, (0.0, 255.0)):
        pytest.skip("the host takes no rounded cast (AVX-512, or no AVX)")
    x = rng.uniform(-400, 400, 64).astype("float32")
    x[:len(SPECIAL)] = np.array(SPECIAL, "float32")
    mod = _kernel(64, lanes, "uint8", (0.0, 255.0))
    out = np.empty(64, "uint8")
    mod["main"](x, out)
    np.testing.assert_array_equal(out, _expected(x, "uint8", (0.0, 255.0)))
    src = mod.get_source()
    width = cvtt.piece_width(lanes, rounding=True)
    names = {8: "avx.{}.ps.256", 4: "sse.{}.ps"}[width]
    assert names.format("max") in src and names.format("min") in src
    asm = jit.assembly(src)
    assert "maxps" in asm and "cmp" not in asm.replace("cmpl", "").replace("cmpq", "")
