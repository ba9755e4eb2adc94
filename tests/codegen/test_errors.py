"""Wrong arguments raise ValueError naming the argument, before any native code runs."""

import numpy as np
import pytest
from codegen_helpers import build_te

from minitvm import codegen, te, tir
from minitvm.runtime import ndarray


@pytest.fixture(scope="module")
def kernel():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.placeholder((4,), name="B")
    C = te.compute((n, 4), lambda i, j: A[i, j] + B[j], name="C")
    return build_te([A, B, C])


def _ok(n=3):
    return np.ones((n, 4), "float32"), np.ones(4, "float32"), np.empty((n, 4), "float32")


def test_ok_call_and_ndarray_inputs(kernel):
    a, b, c = _ok()
    kernel(ndarray.array(a), b, c)
    np.testing.assert_array_equal(c, 2.0)
    out = ndarray.array(np.zeros((3, 4), "float32"))
    kernel(a, b, out)
    np.testing.assert_array_equal(out.numpy(), 2.0)


def test_argument_count(kernel):
    a, b, _ = _ok()
    with pytest.raises(ValueError, match=r"expects 3 arguments \(A, B, C\), got 2"):
        kernel(a, b)


def test_wrong_dtype(kernel):
    a, b, c = _ok()
    with pytest.raises(ValueError, match=r"argument 1 \('B'\).*dtype float32, got float64"):
        kernel(a, b.astype("float64"), c)


def test_wrong_rank_and_shape(kernel):
    a, b, c = _ok()
    with pytest.raises(ValueError, match=r"'A'.* must have 2 dimensions"):
        kernel(a.reshape(-1), b, c)
    with pytest.raises(ValueError, match=r"'B'.*dimension 0 must be 4, got 5"):
        kernel(a, np.ones(5, "float32"), c)


def test_inconsistent_symbolic_dimension(kernel):
    a, b, _ = _ok(3)
    with pytest.raises(ValueError, match=r"'C'.*dimension 0 is 5 but 'n' was bound to 3"):
        kernel(a, b, np.empty((5, 4), "float32"))


def test_non_contiguous_and_read_only(kernel):
    a, b, c = _ok()
    with pytest.raises(ValueError, match="C-contiguous"):
        kernel(np.ones((4, 3), "float32").T, b, c)
    c.setflags(write=False)
    with pytest.raises(ValueError, match="written by the kernel but is read-only"):
        kernel(a, b, c)


def test_not_an_array(kernel):
    _, b, c = _ok()
    with pytest.raises(ValueError, match="must be an array"):
        kernel("abc", b, c)


def test_scalar_parameter_and_unknown_target():
    A = tir.decl_buffer((4,), "float32", "A")
    x = tir.Var("x", "float32")
    i = tir.Var("i", "int32")
    f = tir.PrimFunc([A, x], tir.For(i, 0, 4, 0, tir.BufferStore(A, A[i] * x, [i])))
    k = codegen.build(f)["main"]
    a = np.ones(4, "float32")
    k(a, 2.5)
    np.testing.assert_array_equal(a, 2.5)
    with pytest.raises(ValueError, match="must be a scalar"):
        k(a, a)
    with pytest.raises(ValueError, match="only the 'llvm'"):
        codegen.build(f, target="cuda")


def test_ill_formed_function_is_rejected_at_build():
    A = tir.decl_buffer((4, 4), "float32", "A")
    f = tir.PrimFunc([A], tir.BufferStore(A, 1.0, [0]))
    with pytest.raises(ValueError, match="rank 2 but is accessed with 1"):
        codegen.build(f)


@pytest.mark.parametrize("vectorized", [False, True])
def test_store_of_another_dtype_is_refused(vectorized):
    """A store whose value is not of its buffer's dtype (a uint8 value into a float32 buffer)
    is a TypeError naming the buffer: LLVM would write one byte at each float's address."""
    out = tir.decl_buffer((16,), "float32", "F")
    i = tir.Var("i", "int32")
    store = tir.BufferStore(out, tir.Cast("uint8", tir.IntImm("int32", 7)), [i])
    kind = tir.ForKind.VECTORIZED if vectorized else tir.ForKind.SERIAL
    body = tir.For(i, 0, 16, kind, store)
    with pytest.raises(TypeError, match=r"store to 'F' \(float32\): the value is i8"):
        codegen.build(tir.PrimFunc([out], body, attrs={"global_symbol": "bad"}))
