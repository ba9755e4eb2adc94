"""``tir.dot_u8s8x4(acc, a, b)``: int32 ``acc`` plus the dot product of the 4 unsigned bytes of
``a`` with the 4 signed bytes of ``b``, lane by lane: one ``vpdpbusd`` per 16 lanes on an AVX-512
VNNI host, widened integer code elsewhere and at other widths (``codegen/llvm/dot.py``)."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm import dot
from minitvm.tir import expr as E


def _kernel(n: int, kind):
    """``D[i] = dot_u8s8x4(C[i], A[i], B[i])`` over ``n`` int32, the loop of ``kind``."""
    A, B, C, D = (tir.decl_buffer((n,), "int32", name) for name in "ABCD")
    i = tir.Var("i", "int32")
    body = tir.For(i, 0, n, kind, tir.BufferStore(
        D, E.Call("int32", "tir.dot_u8s8x4", [C[i], A[i], B[i]]), [i]))
    return codegen.build(tir.PrimFunc([A, B, C, D], body))


def _want(a, b, c):
    ua = a.view("uint8").reshape(-1, 4).astype("int64")
    sb = b.view("int8").reshape(-1, 4).astype("int64")
    return (c.astype("int64") + (ua * sb).sum(axis=1)).astype("int32")


@pytest.mark.parametrize("n, kind", [(16, tir.ForKind.VECTORIZED), (32, tir.ForKind.VECTORIZED),
                                     (8, tir.ForKind.VECTORIZED), (5, tir.ForKind.SERIAL)])
def test_dot_u8s8x4_equals_the_byte_dot_product(n, kind, rng):
    mod = _kernel(n, kind)
    a, b = (rng.integers(-2**31, 2**31, n, dtype="int64").astype("int32") for _ in range(2))
    c = rng.integers(-2**20, 2**20, n).astype("int32")
    a[0], b[0] = np.array([255] * 4, "uint8").view("int32")[0], \
        np.array([-128] * 4, "int8").view("int32")[0]  # the extremes: 4 * 255 * -128
    d = np.empty_like(c)
    mod["main"](a, b, c, d)
    np.testing.assert_array_equal(d, _want(a, b, c))
    if n % dot.VNNI_WIDTH == 0 and dot.host_vnni():
        assert "llvm.x86.avx512.vpdpbusd.512" in mod.get_source()
    else:
        assert "vpdpbusd" not in mod.get_source()
