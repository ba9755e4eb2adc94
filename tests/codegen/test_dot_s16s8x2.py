"""``tir.dot_s16s8x2(acc, a, b)``: int32 ``acc`` plus the dot product of the two signed int16
halves of ``a`` with the two signed bytes of int16 ``b`` (an int8 weight kept as bytes,
``schedule/conv_vnni.BYTE_PAIRS``): the bytes sign-extended, then ``vpmaddwd`` on AVX2; widened
integer code at other widths; ``b`` broadcast from one lane too (``codegen/llvm/dot.py``)."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import jit
from minitvm.tir import expr as E


def _kernel(n: int, kind, broadcast: bool = False):
    """``D[i] = dot_s16s8x2(C[i], A[i], B[i])`` over ``n`` lanes (``B[0]`` for every lane when
    ``broadcast``), the loop of ``kind``."""
    A, C, D = (tir.decl_buffer((n,), "int32", name) for name in "ACD")
    B = tir.decl_buffer((n,), "int16", "B")
    i = tir.Var("i", "int32")
    b = B[0] if broadcast else B[i]
    body = tir.For(i, 0, n, kind, tir.BufferStore(
        D, E.Call("int32", "tir.dot_s16s8x2", [C[i], A[i], b]), [i]))
    return codegen.build(tir.PrimFunc([A, B, C, D], body))


def _want(a, b, c):
    sa = a.view("int16").reshape(-1, 2).astype("int64")
    sb = b.view("int8").reshape(-1, 2).astype("int64")
    return (c.astype("int64") + (sa * sb).sum(axis=1)).astype("int32")


@pytest.mark.parametrize("n, kind", [(16, tir.ForKind.VECTORIZED), (32, tir.ForKind.VECTORIZED),
                                     (8, tir.ForKind.VECTORIZED), (4, tir.ForKind.VECTORIZED),
                                     (5, tir.ForKind.SERIAL)])
@pytest.mark.parametrize("broadcast", [False, True])
def test_dot_s16s8x2_equals_the_widened_dot_product(n, kind, broadcast, rng):
    mod = _kernel(n, kind, broadcast)
    a = rng.integers(-2**31, 2**31, n, dtype="int64").astype("int32")
    b = rng.integers(-2**15, 2**15, n).astype("int16")
    c = rng.integers(-2**20, 2**20, n).astype("int32")
    # (the extremes: uint8 data as int16 times -128, and -32768 * -128 twice)
    a[0] = np.array([255, -32768], "int16").view("int32")[0]
    b[0] = np.array([-128, -128], "int8").view("int16")[0]
    a[-1] = np.array([-32768, -32768], "int16").view("int32")[0]
    d = np.empty_like(c)
    mod["main"](a, b, c, d)
    np.testing.assert_array_equal(d, _want(a, np.full_like(b, b[0]) if broadcast else b, c))
    if n % 8 == 0 and kind == tir.ForKind.VECTORIZED and jit.host_has("avx2") and \
            not jit.host_has("avx512f"):
        src = mod.get_source()  # (the LLVM IR: the bytes sign-extended, then pmaddwd)
        assert "avx2.pmadd.wd" in src and "x i8>" in src and "sext" in src
