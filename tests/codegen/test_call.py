"""The static-shape fast call path: same checks and errors as the general path, less overhead."""

import time

import numpy as np
import pytest
from conftest import build_te

from minitvm import codegen, te
from minitvm.codegen import module as kmod
from minitvm.runtime import ndarray


@pytest.fixture(scope="module")
def kernel():
    A = te.placeholder((5, 3), name="A")
    B = te.compute((5, 3), lambda i, j: A[i, j] * 2.0, name="B")
    return build_te([A, B])


def test_fast_path_is_set_up_and_correct(kernel):
    assert kmod.FAST_CALL and kernel._fast is not None
    a = np.arange(15, dtype="float32").reshape(5, 3)
    b = np.empty_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_fast_path_falls_back_with_the_same_errors(kernel):
    a = np.ones((5, 3), "float32")
    b = np.empty_like(a)
    with pytest.raises(ValueError, match=r"dtype float32, got float64"):
        kernel(a.astype("float64"), b)
    with pytest.raises(ValueError, match=r"dimension 0 must be 5, got 4"):
        kernel(a[:4], b)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernel(np.ones((3, 5), "float32").T, b)
    with pytest.raises(ValueError, match="expects 2 arguments"):
        kernel(a)
    b.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        kernel(a, b)


def test_ndarray_and_subclass_inputs_take_the_checked_path(kernel):
    a = np.full((5, 3), 3, "float32")
    out = ndarray.array(np.zeros((5, 3), "float32"))
    kernel(ndarray.array(a), out)
    np.testing.assert_array_equal(out.numpy(), 6)
    b = np.zeros((5, 3), "float32").view(np.matrix)
    kernel(a, b)
    np.testing.assert_array_equal(np.asarray(b), 6)


def test_symbolic_kernels_use_the_general_path():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    k = build_te([A, B])
    assert k._fast is None
    a = np.zeros(7, "float32")
    b = np.empty_like(a)
    k(a, b)
    np.testing.assert_array_equal(b, 1)


def test_call_overhead_is_small(kernel):
    """Report microseconds per call (printed with -s); no wall-clock assertion."""
    a = np.ones((5, 3), "float32")
    b = np.empty_like(a)
    for _ in range(100):
        kernel(a, b)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        kernel(a, b)
    fast = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        kernel._call_checked((a, b))
    slow = (time.perf_counter() - t0) / n
    print(f"call overhead: fast {fast * 1e6:.2f} us, checked {slow * 1e6:.2f} us")
    assert fast > 0 and slow > 0


def test_large_kernel_releases_the_gil():
    A = te.placeholder((1 << 17,), name="A")
    B = te.compute(A.shape, lambda i: A[i] + 1.0, name="B")
    k = codegen.build(te.create_prim_func([A, B]))["main"]
    assert k._fast_call.__class__.__mro__[0]._flags_ & 0x4 == 0  # no FUNCFLAG_PYTHONAPI
    a = np.zeros(1 << 17, "float32")
    b = np.empty_like(a)
    k(a, b)
    assert b[-1] == 1
