"""``NONTEMPORAL_STORE``: inside an AttrStmt so keyed on a buffer's data var, that buffer's
contiguous vector stores of 16, 32 or 64 bytes are ``!nontemporal`` where their address is a
multiple of the vector's size at run time (an ordinary store otherwise), and the scope ends in an
``sfence``, as does each chunk of a parallel loop inside it. Stores to other buffers, scalar
stores and code outside the scope are as before."""

import platform

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm.stmt import NONTEMPORAL_STORE
from minitvm.runtime import threadpool

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="sfence and non-temporal vector stores: x86 only")


def _rows(cols: int, lanes: int, scoped: bool, kind=tir.ForKind.SERIAL, other: bool = False):
    """``B[r, c] = 2 * A[r, c] + 1`` (rows outer, ``lanes``-wide vectors then a scalar tail);
    with ``other``, also ``C[r, c] = A[r, c]`` (another buffer, outside the attribute's key)."""
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((n, cols), "float32", "A")
    B = tir.decl_buffer((n, cols), "float32", "B")
    C = tir.decl_buffer((n, cols), "float32", "C")
    r, v, k, t = (tir.Var(s, "int32") for s in "rvkt")
    whole = cols // lanes * lanes

    def put(c):
        out = [tir.BufferStore(B, A[r, c] * tir.const(2.0, "float32") + tir.const(1.0, "float32"),
                               [r, c])]
        if other:
            out.append(tir.BufferStore(C, A[r, c], [r, c]))
        return out[0] if len(out) == 1 else tir.SeqStmt(out)

    inner = tir.For(k, 0, lanes, tir.ForKind.VECTORIZED, put(v * lanes + k))
    parts = [tir.For(v, 0, cols // lanes, tir.ForKind.SERIAL, inner)]
    if whole < cols:
        parts.append(tir.For(t, whole, cols - whole, tir.ForKind.SERIAL, put(t)))
    body = tir.For(r, 0, n, kind, tir.SeqStmt(parts) if len(parts) > 1 else parts[0])
    if scoped:
        body = tir.AttrStmt(B.data, NONTEMPORAL_STORE, tir.const(1, "int32"), body)
    return tir.PrimFunc([A, B, C, n], body)


def _aligned(shape, shift_bytes: int) -> np.ndarray:
    """A float32 array of ``shape`` whose data starts ``shift_bytes`` past a 64-byte boundary."""
    size = int(np.prod(shape)) * 4
    raw = np.empty(size + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + shift_bytes
    return raw[start:start + size].view(np.float32).reshape(shape)


def test_scope_marks_the_buffers_vector_stores_and_fences():
    src = codegen.build(_rows(64, 16, True, other=True)).get_source("ll")
    nt = [line for line in src.splitlines() if "!nontemporal" in line]
    assert len(nt) == 1 and "store <16 x float>" in nt[0] and "align 64" in nt[0]
    assert "llvm.x86.sse.sfence" in src
    plain = codegen.build(_rows(64, 16, False, other=True)).get_source("ll")
    assert "!nontemporal" not in plain and "sfence" not in plain


@pytest.mark.parametrize("lanes,vbytes", [(4, 16), (8, 32), (16, 64)])
def test_vector_widths(lanes, vbytes):
    src = codegen.build(_rows(4 * lanes, lanes, True)).get_source("ll")
    nt = [line for line in src.splitlines() if "!nontemporal" in line]
    assert nt and all(f"align {vbytes}" in line for line in nt)


def test_scalar_and_odd_width_stores_stay_ordinary():
    # 2 lanes (8 bytes) and the scalar tail: no non-temporal store, the fence still closes
    src = codegen.build(_rows(7, 2, True)).get_source("ll")
    assert "!nontemporal" not in src and "sfence" in src


@pytest.mark.parametrize("cols,lanes", [(64, 16), (37, 16), (20, 8), (5, 4)])
@pytest.mark.parametrize("shift", [0, 4, 16, 32])
def test_values_at_aligned_and_misaligned_addresses(rng, cols, lanes, shift):
    """Every address is right: aligned vectors go non-temporal, the others ordinary."""
    kernel = codegen.build(_rows(cols, lanes, True, other=True))["main"]
    n = 9  # odd rows
    a = rng.standard_normal((n, cols)).astype("float32")
    b = _aligned((n, cols), shift)
    b[:] = np.nan
    c = np.full((n, cols), np.nan, "float32")
    kernel(a, b, c, n)
    np.testing.assert_array_equal(b, 2 * a + 1)
    np.testing.assert_array_equal(c, a)


def test_parallel_loop_inside_the_scope_fences_each_chunk(rng):
    f = _rows(48, 16, True, kind=tir.ForKind.PARALLEL)
    src = codegen.build(f).get_source("ll")
    body = [part for part in src.split("\ndefine ") if part.split("(")[0].rstrip('"')
            .endswith("_body")]
    assert body and all("sfence" in part for part in body)
    kernel = codegen.build(f)["main"]
    a = rng.standard_normal((301, 48)).astype("float32")
    before = threadpool.get_num_threads()
    for threads in (1, 2):
        b = _aligned((301, 48), 0)
        threadpool.set_num_threads(threads)
        try:
            kernel(a, b, np.empty_like(a), 301)
        finally:
            threadpool.set_num_threads(before)
        np.testing.assert_array_equal(b, 2 * a + 1)

