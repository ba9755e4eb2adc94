"""Vector loads at a constant stride of 2-4 (``CodeGenLLVM._strided_load``): whole vector loads
of the span they cover plus shuffles, reading nothing past the last lane's element."""

import ctypes
import mmap

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm.vector_pieces import needs_pieces, vector_pieces


def _kernel(n_in: int, lanes: int, stride: int, offset: int, dtype: str):
    """``B[j] = A[offset + j*stride]`` for ``j`` in one vectorized loop of ``lanes``."""
    a = tir.decl_buffer((n_in,), dtype, "A")
    b = tir.decl_buffer((lanes,), dtype, "B")
    j = tir.Var("j", "int32")
    body = tir.For(j, 0, lanes, tir.ForKind.VECTORIZED,
                   tir.BufferStore(b, a[j * stride + offset], [j]))
    return codegen.build(tir.PrimFunc([a, b], body, attrs={"tir.noalias": True}))


class _GuardedArray:
    """A numpy array whose last element ends a page followed by an unreadable page: a load past
    its end faults instead of reading garbage."""

    def __init__(self, n: int, dtype: str):
        self.page = mmap.PAGESIZE
        self.mm = mmap.mmap(-1, 2 * self.page)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        assert self.libc.mprotect(self.addr + self.page, self.page, 0) == 0  # PROT_NONE
        size = n * np.dtype(dtype).itemsize
        self.array = np.frombuffer(self.mm, dtype, count=n, offset=self.page - size)

    def close(self):
        del self.array
        self.libc.mprotect(self.addr + self.page, self.page, 3)  # PROT_READ | PROT_WRITE


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
@pytest.mark.parametrize("lanes", [4, 7, 8, 16])
@pytest.mark.parametrize("stride", [2, 3, 4])
@pytest.mark.parametrize("offset", [0, 1])
def test_strided_vector_load_reads_exactly_its_span(rng, dtype, lanes, stride, offset):
    n = offset + (lanes - 1) * stride + 1  # the last lane reads the array's last element
    mod = _kernel(n, lanes, stride, offset, dtype)
    guard = _GuardedArray(n, dtype)
    try:
        guard.array[:] = (rng.standard_normal(n) * 100).astype(dtype)
        out = np.empty(lanes, dtype)
        mod["main"](guard.array, out)
        np.testing.assert_array_equal(out, guard.array[offset::stride][:lanes])
    finally:
        guard.close()
    ir = mod.get_source()
    et = {"float32": "float", "int32": "i32", "float64": "double"}[dtype]
    assert "shufflevector" in ir
    # no per-lane scalar loads (but for the one-lane piece of an odd width: 7 = 4 + 2 + 1,
    # llvm/vector_pieces)
    one_lane = vector_pieces(lanes).count(1) if needs_pieces(lanes) else 0
    assert ir.count(f"load {et},") == one_lane


def test_wider_stride_keeps_per_lane_loads(rng):
    # stride 5 and up: the span would be 5x the lanes; one scalar load per lane stays
    mod = _kernel(1 + 5 * 7 + 1, 8, 5, 1, "float32")
    a = rng.standard_normal(37).astype("float32")
    out = np.empty(8, "float32")
    mod["main"](a, out)
    np.testing.assert_array_equal(out, a[1::5][:8])
    assert "load float," in mod.get_source()


def test_strided_load_inside_an_expression(rng):
    # the even and odd columns of a row, summed: two stride-2 loads in one vector expression
    a = tir.decl_buffer((3, 33), "float32", "A")
    b = tir.decl_buffer((3, 16), "float32", "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    body = tir.For(i, 0, 3, tir.ForKind.SERIAL, tir.For(j, 0, 16, tir.ForKind.VECTORIZED,
                   tir.BufferStore(b, a[i, j * 2] + a[i, j * 2 + 1] * 2.0, [i, j])))
    mod = codegen.build(tir.PrimFunc([a, b], body, attrs={"tir.noalias": True}))
    x = rng.standard_normal((3, 33)).astype("float32")
    out = np.empty((3, 16), "float32")
    mod["main"](x, out)
    np.testing.assert_allclose(out, x[:, 0:32:2] + x[:, 1:33:2] * 2.0, rtol=1e-6)
