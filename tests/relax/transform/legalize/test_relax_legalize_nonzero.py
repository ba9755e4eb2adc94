"""LegalizeOps on ``relax.nonzero`` of a known shape: two native kernels
(``schedule.nonzero_scan``), the count bound to a fresh length by a match_cast, then the
``(ndim, count)`` indices; built and run on the VM against numpy's ``nonzero`` (NaN non-zero,
-0.0 zero, bool and integer inputs, all zero, a symbolic dimension). An unknown shape still
lowers to the runtime's packed function."""

from __future__ import annotations

import numpy as np
import pytest
from legalize_util import bindings, one_op_module, sym, tensor

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps

_RNG = np.random.default_rng(0)


def _kinds(mod):
    return [b.value.op.name if isinstance(b.value, relax.Call) else type(b).__name__
            for b in bindings(mod["main"])]


def test_lowers_to_a_count_a_match_cast_and_a_fill():
    mod = LegalizeOps()(one_op_module(R.nonzero, [tensor([3, 4])]))
    kinds = _kinds(mod)
    assert kinds[:4] == ["relax.call_tir", "relax.call_pure_packed", "MatchCast",
                         "relax.call_tir"], kinds
    calls = [b.value for b in bindings(mod["main"]) if isinstance(b.value, relax.Call)
             and b.value.op.name == "relax.call_tir"]
    assert [c.args[0].name_hint for c in calls] == ["nonzero_count", "nonzero"]
    assert "relax.run.nonzero" not in mod.script()
    unknown = LegalizeOps()(one_op_module(R.nonzero,
                                          [relax.TensorStructInfo(dtype="float32", ndim=2)]))
    assert "relax.run.nonzero" in unknown.script()


def _inputs():
    x = _RNG.standard_normal((5, 6)).astype("float32")
    x[x < 0.3] = 0.0
    x[0, :3] = [np.nan, -0.0, np.inf]
    yield "float32", x
    yield "int32", _RNG.integers(-1, 2, (4, 3, 5)).astype("int32")
    yield "bool", _RNG.random(17) < 0.4
    yield "int8", _RNG.integers(0, 2, (2, 2, 2, 3)).astype("int8")
    yield "all_zero", np.zeros((3, 2), "float32")


@pytest.mark.parametrize("name,x", list(_inputs()), ids=[n for n, _ in _inputs()])
def test_matches_numpy(name, x):
    mod = one_op_module(R.nonzero, [tensor(x.shape, str(x.dtype))])
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x)).numpy()
    want = np.stack(np.nonzero(x)).astype("int64")
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_a_symbolic_dimension():
    (n,) = sym("n")
    vm = relax.VirtualMachine(relax.build(one_op_module(R.nonzero, [tensor([n, 3], "int64")]),
                                          "llvm"), tvm.cpu())
    for rows in (1, 7):
        x = _RNG.integers(0, 2, (rows, 3)).astype("int64")
        np.testing.assert_array_equal(vm["main"](tvm.nd.array(x)).numpy(),
                                      np.stack(np.nonzero(x)))
