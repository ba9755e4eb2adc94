"""The static-shape fast call path: same checks and errors as the general path, less overhead.

Call overhead is measured by benchmarks/bench_kernels.py ("call overhead"), not here.
"""

import numpy as np
import pytest
from codegen_helpers import build_te

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


def _count_paths(kernel, monkeypatch):
    """Wrap both call paths of ``kernel`` (for this test only) and count which one runs."""
    calls = {"fast": 0, "checked": 0}
    fast_entry, checked = kernel._fast_call, kernel._call_checked

    def fast(args, nthreads):
        calls["fast"] += 1
        return fast_entry(args, nthreads)

    def slow(args):
        calls["checked"] += 1
        return checked(args)

    monkeypatch.setattr(kernel, "_fast_call", fast)
    monkeypatch.setattr(kernel, "_call_checked", slow)
    return calls


def test_fast_and_checked_paths_compute_the_same(kernel, rng):
    a = rng.standard_normal((5, 3)).astype("float32")
    b_fast = np.full_like(a, np.nan)
    b_checked = np.full_like(a, np.nan)
    kernel(a, b_fast)
    kernel._call_checked((a, b_checked))
    np.testing.assert_array_equal(b_fast, a * 2)
    np.testing.assert_array_equal(b_checked, b_fast)


def test_plain_arrays_take_the_fast_path(kernel, monkeypatch):
    a = np.arange(15, dtype="float32").reshape(5, 3)
    b = np.empty_like(a)
    assert kernel._fast(a, b)  # the generated guard accepts exactly-matching arrays
    calls = _count_paths(kernel, monkeypatch)
    for _ in range(3):
        kernel(a, b)
    assert calls == {"fast": 3, "checked": 0}
    np.testing.assert_array_equal(b, a * 2)


@pytest.mark.parametrize("why", ["dtype", "shape", "layout", "read-only", "ndarray", "arity"])
def test_mismatching_arguments_take_the_checked_path(kernel, monkeypatch, why):
    a = np.ones((5, 3), "float32")
    b = np.empty_like(a)
    if why == "dtype":
        args = (a.astype("float64"), b)
    elif why == "shape":
        args = (np.ones((5, 4), "float32"), b)
    elif why == "layout":
        args = (np.ones((3, 5), "float32").T, b)
    elif why == "read-only":
        b.setflags(write=False)
        args = (a, b)
    elif why == "ndarray":
        args = (ndarray.array(a), ndarray.array(b))
    else:
        args = (a,)
    if len(args) == 2:
        assert not kernel._fast(*args)
    calls = _count_paths(kernel, monkeypatch)
    if why == "ndarray":
        kernel(*args)
        np.testing.assert_array_equal(args[1].numpy(), 2)
    else:
        with pytest.raises(ValueError, match=f"kernel {kernel.name!r}"):
            kernel(*args)
    assert calls == {"fast": 0, "checked": 1}


def test_wrong_arity_error_names_the_parameters(kernel):
    a = np.ones((5, 3), "float32")
    with pytest.raises(ValueError, match=r"expects 2 arguments \(A, B\), got 3"):
        kernel(a, a, a)
    with pytest.raises(ValueError, match=r"argument 1 \('B'\).*must be an array.*got str"):
        kernel(a, "B")


def test_large_kernel_releases_the_gil():
    A = te.placeholder((1 << 17,), name="A")
    B = te.compute(A.shape, lambda i: A[i] + 1.0, name="B")
    k = codegen.build(te.create_prim_func([A, B]))["main"]
    assert k._fast_call.__class__.__mro__[0]._flags_ & 0x4 == 0  # no FUNCFLAG_PYTHONAPI
    a = np.zeros(1 << 17, "float32")
    b = np.empty_like(a)
    k(a, b)
    assert b[-1] == 1
