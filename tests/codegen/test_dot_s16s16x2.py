"""``tir.dot_s16s16x2(acc, a, b)``: int32 ``acc`` plus the dot product of the two signed int16
halves of ``a`` with those of ``b``, lane by lane: ``vpdpwssd`` on an AVX-512 VNNI host,
``vpmaddwd`` + add on AVX-512BW or AVX2 hosts (forced here by hiding the host's VNNI, then
its AVX-512), widened integer code at other widths (``codegen/llvm/dot.py``)."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import jit
from minitvm.tir import expr as E


def _kernel(n: int, kind):
    """``D[i] = dot_s16s16x2(C[i], A[i], B[i])`` over ``n`` int32, the loop of ``kind``."""
    A, B, C, D = (tir.decl_buffer((n,), "int32", name) for name in "ABCD")
    i = tir.Var("i", "int32")
    body = tir.For(i, 0, n, kind, tir.BufferStore(
        D, E.Call("int32", "tir.dot_s16s16x2", [C[i], A[i], B[i]]), [i]))
    return codegen.build(tir.PrimFunc([A, B, C, D], body))


def _want(a, b, c):
    sa, sb = (v.view("int16").reshape(-1, 2).astype("int64") for v in (a, b))
    return (c.astype("int64") + (sa * sb).sum(axis=1)).astype("int32")


def _hide(monkeypatch, *features):
    """The code generator sees a host without ``features`` (the kernel cache, keyed on the
    function's text, forgotten before and after)."""
    real = jit.host_has
    monkeypatch.setattr(jit, "host_has", lambda *f: real(*f) and not set(f) & set(features))
    codegen.clear_cache()


@pytest.mark.parametrize("n, kind", [(16, tir.ForKind.VECTORIZED), (32, tir.ForKind.VECTORIZED),
                                     (8, tir.ForKind.VECTORIZED), (5, tir.ForKind.SERIAL)])
@pytest.mark.parametrize("hidden", [(), ("avx512vnni",), ("avx512vnni", "avx512bw")])
def test_dot_s16s16x2_equals_the_int16_dot_product(n, kind, hidden, rng, monkeypatch):
    _hide(monkeypatch, *hidden)
    mod = _kernel(n, kind)
    codegen.clear_cache()
    a, b = (rng.integers(-2**31, 2**31, n, dtype="int64").astype("int32") for _ in range(2))
    c = rng.integers(-2**20, 2**20, n).astype("int32")
    a[0], b[0] = np.array([-32768, 32767], "int16").view("int32")[0], \
        np.array([-128, -128], "int16").view("int32")[0]  # (a 16x8 conv's extremes)
    d = np.empty_like(c)
    mod["main"](a, b, c, d)
    np.testing.assert_array_equal(d, _want(a, b, c))
    src = mod.get_source()
    vnni = n % 16 == 0 and jit.host_has("avx512f", "avx512vnni")
    assert ("vpdpwssd" in src) == vnni
    if not vnni and n % 8 == 0 and jit.host_has("avx2"):
        assert "pmadd" in src
