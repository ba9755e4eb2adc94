"""Kernel calls whose argument checks run in native code (``runtime.checked_call``): the Relax
VM's kernels with symbolic dimensions take one ctypes call; every argument the Python checks
refused still goes to them (same messages), results bitwise equal to the checked path's, big
kernels run without the GIL."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.runtime import py_layout
from minitvm.runtime.checked_call import FREE, checked_call_table
from minitvm.runtime.relax_vm.kernel import GIL_RELEASE_ELEMS, NativeKernel

_RNG = np.random.default_rng(0)


def _add_kernel() -> NativeKernel:
    """The kernel of ``x + y`` over ``(n, 4)`` float32 tensors, ``n`` symbolic."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit(R.add(x, y)))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    kernels = [t[1] for t in vm._table if isinstance(t[1], NativeKernel) and t[2] == "add"]
    assert len(kernels) == 1
    return kernels[0]


@pytest.fixture(scope="module")
def kernel():
    return _add_kernel()


def _spied(k: NativeKernel):
    """``k``'s native-checked call with a spy as its slow path: (call, the slow calls)."""
    seen = []

    def slow(*args):
        seen.append(args)
        return k._sym(*args)

    return k._native_checked(slow), seen


def test_fields_the_routine_reads_are_where_it_reads_them():
    assert py_layout.FIELDS_OK


def test_symbolic_kernel_calls_through_the_native_checks(kernel):
    assert kernel._table is not None and kernel._sym is not None
    assert "native checks" in kernel.direct.__code__.co_filename
    call, seen = _spied(kernel)
    for n in (0, 1, 7, 33):
        a, b = (_RNG.standard_normal((n, 4)).astype("float32") for _ in "ab")
        out, ref = np.empty((n, 4), "float32"), np.empty((n, 4), "float32")
        call(a, b, out)
        kernel._call_checked((a, b, ref))  # (the Python checks and the plain entry)
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(out, a + b)
    assert seen == []  # every call ran natively


@pytest.mark.parametrize("case, match", [
    ("dtype", "argument 0 must be a 2-d float32 tensor"),
    ("rank", "argument 1 must be a 2-d float32 tensor"),
    ("const", "argument 0 dimension 1 must be 4"),
    ("relation", "argument 2 dimension 0 must be n = 3"),
    ("strided", "argument 0 must be C-contiguous"),
    ("count", "expects 3 arguments, got 2"),
])
def test_arguments_that_do_not_fit_go_to_the_checked_path(kernel, case, match):
    a, b, out = (np.zeros((3, 4), "float32") for _ in range(3))
    args = {"dtype": (a.astype("float64"), b, out), "rank": (a, b.reshape(12), out),
            "const": (np.zeros((3, 5), "float32"), b, out),
            "relation": (a, b, np.zeros((2, 4), "float32")),
            "strided": (np.zeros((3, 8), "float32")[:, ::2], b, out), "count": (a, b)}[case]
    call, seen = _spied(kernel)
    with pytest.raises(ValueError, match=match):
        call(*args)
    assert len(seen) == 1
    with pytest.raises(ValueError, match=match):
        kernel.direct(*args)


def test_a_subclass_or_another_byte_order_takes_the_python_path(kernel):
    class Sub(np.ndarray):
        pass

    a = _RNG.standard_normal((5, 4)).astype("float32")
    call, seen = _spied(kernel)
    out = np.empty((5, 4), "float32")
    call(a.view(Sub), a, out)  # (not exactly an ndarray: the checked call takes it)
    np.testing.assert_array_equal(out, a + a)
    assert len(seen) == 1
    with pytest.raises(ValueError, match="argument 1 must be a 2-d float32"):
        call(a, a.astype(">f4"), out)  # (a float32 of another descriptor)


def test_a_big_kernel_runs_without_the_gil_in_several_threads(kernel):
    n = GIL_RELEASE_ELEMS // 4 + 1  # (three arrays: past the limit)
    a, b = (_RNG.standard_normal((n, 4)).astype("float32") for _ in "ab")
    call, seen = _spied(kernel)
    outs = [np.empty((n, 4), "float32") for _ in range(4)]

    def work(out):
        for _ in range(20):
            call(a, b, out)

    threads = [threading.Thread(target=work, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_array_equal(o, a + b)
    assert seen == []


def test_the_table_says_where_each_value_comes_from():
    table = checked_call_table(1234, [("float32", [-1, 4]), ("int64", []),
                                      ("float32", [-1, -1])], [(0, 0), (2, 1)],
                               [(2, 0, 0, 0)], 99)
    words = list(table)
    assert words[0] == 1234 and words[2:6] == [3, 4, 2, 99]
    assert words[8] == 0  # (no fixed values)
    assert words[9:12] == [id(np.dtype("float32")), id(np.dtype("int64")),
                           id(np.dtype("float32"))]
    assert words[12:15] == [2, 0, 2]
    assert words[15:19] == [FREE, 4, -2 - 0, FREE]  # (slot 2 equals slot 0)
    assert words[19:] == [0, 3]


@pytest.mark.parametrize("params, vars_, checks", [
    ([], [], []),
    ([("float32", [-1])], [(1, 0)], []),
    ([("float32", [-1])], [(0, 1)], []),
    ([("float32", [-1, 3])], [], [(0, 1, 0, 0)]),  # (a constant dimension is not related)
    ([("float32", [-1])], [], [(0, 0, 2, 0)]),
])
def test_tables_of_places_out_of_range_are_refused(params, vars_, checks):
    assert checked_call_table(1, params, vars_, checks, 10) is None
