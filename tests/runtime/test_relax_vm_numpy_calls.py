"""``Executable.numpy_calls``: the packed functions a built Relax program calls that compute in
numpy (``numpy_packed.mark_numpy_packed``). nonzero of a known shape and the VM's own builtins
are native or not computations (empty); numpy's unique and nonzero of an unknown shape are
named, with the reason; the programs still run and match numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.runtime.relax_vm.numpy_packed import mark_numpy_packed, numpy_reason

_RNG = np.random.default_rng(0)


def _build(op, sinfo):
    bb = relax.BlockBuilder()
    x = relax.Var("x", sinfo)
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op(x))
        bb.emit_func_output(out)
    return relax.build(bb.get(), "llvm")


def _run(ex, x):
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x))
    while not hasattr(out, "numpy"):
        out = out[0]
    return out.numpy()


def test_native_program_calls_nothing_in_numpy():
    ex = _build(R.nonzero, relax.TensorStructInfo([3, 4], "float32"))
    assert ex.numpy_calls() == {}
    x = (_RNG.random((3, 4)) > 0.5).astype("float32")
    np.testing.assert_array_equal(_run(ex, x), np.stack(np.nonzero(x)))


def test_nonzero_of_an_unknown_shape_is_named():
    ex = _build(R.nonzero, relax.TensorStructInfo(dtype="float32", ndim=2))
    calls = ex.numpy_calls()
    assert list(calls) == ["relax.run.nonzero"]
    assert "not known at compile time" in calls["relax.run.nonzero"]
    x = (_RNG.random((5, 2)) > 0.5).astype("float32")
    np.testing.assert_array_equal(_run(ex, x), np.stack(np.nonzero(x)))


def test_numpy_unique_is_named():
    ex = _build(lambda x: R.unique(x, sorted=True), relax.TensorStructInfo([16], "float32"))
    assert list(ex.numpy_calls()) == ["relax.run.unique"]
    x = _RNG.integers(0, 4, 16).astype("float32")
    np.testing.assert_array_equal(_run(ex, x), np.unique(x))


def test_marking_needs_a_reason():
    with pytest.raises(ValueError, match="reason"):
        mark_numpy_packed("test.no_reason", "")
    assert numpy_reason("vm.builtin.alloc_storage") is None
