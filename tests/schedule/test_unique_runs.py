"""``schedule.unique_runs``: Relay's ``unique(consecutive=True)`` natively (a strict build) gives
the runs of ``==`` neighbours of any element type as torch.unique_consecutive does (each NaN its
own run, -0.0 joining 0.0), padded as TVM's ``unique``, equal to the numpy reference; the
attribute prints and parses back; the Relax PrimFunc is one pass with no sort buffers; the
flat ``unique_plan.unique_consecutive`` is that one call on the elements themselves."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.frontend_common import unique_plan
from minitvm.relay.frontend.unique_native import RelayUnique
from minitvm.schedule.unique_sort import unique_prim_func
from minitvm.tir import stmt as S
from minitvm.topi.reference.transform_extra import unique_padded

try:  # torch is an optional extra: without it the runs are checked against the numpy reference
    import torch
except ImportError:
    torch = None

FLOATS = [0.0, -0.0, 1.5, np.nan, -np.inf]


def _build(n, dtype):
    x = relay.var("x", shape=(n,), dtype=dtype)
    out = relay.unique(x, True, True, False, consecutive=True).astuple()
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm")
    return graph_executor.GraphModule(lib["default"](tvm.cpu()))


def _runs(dtype, n, seed):
    """Runs of 1 to 3 equal values (a NaN repeated stays separate runs)."""
    rng = np.random.default_rng(seed)
    pool = FLOATS if dtype.startswith("float") else [0, 1, 3, 1, 0]
    vals = np.repeat(rng.choice(np.asarray(pool), n), rng.integers(1, 4, n))[:n]
    return vals.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int64", "bool"])
def test_runs_match_torch_and_the_reference(dtype):
    for n in (1, 7, 400):
        g = _build(n, dtype)
        x = _runs(dtype, n, n)
        g.set_input("x", x)
        g.run()
        got = [g.get_output(k).numpy() for k in range(5)]
        want = unique_padded(x, True, True, False, consecutive=True)
        for a, w in zip(got, want, strict=True):
            assert a.dtype == w.dtype
            np.testing.assert_array_equal(a, w)
        k = int(got[3][0])
        if torch is None:
            continue
        values, inverse, counts = torch.unique_consecutive(
            torch.from_numpy(x), return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(got[0][:k], values.numpy())
        np.testing.assert_array_equal(got[2], inverse.numpy())
        np.testing.assert_array_equal(got[4][:k], counts.numpy())
        assert not got[4][k:].any() and not got[1][k:].any()


def test_each_nan_is_its_own_run_and_signed_zeros_join():
    g = _build(8, "float32")
    g.set_input("x", np.array([np.nan, np.nan, 0.0, -0.0, 2, 2, np.nan, 2], "float32"))
    g.run()
    assert int(g.get_output(3).numpy()[0]) == 6
    np.testing.assert_array_equal(g.get_output(4).numpy()[:6], [1, 1, 2, 2, 1, 1])


def test_consecutive_prints_and_parses_back():
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.unique(
        x, True, True, False, consecutive=True).astuple()))
    assert "consecutive=True" in mod.astext()
    parsed = tvm.relay.fromtext(mod.astext())
    assert parsed["main"].body.attrs.consecutive is True
    assert tvm.ir.structural_equal(parsed, relay.transform.InferType()(mod))


def _allocations(stmt) -> list[str]:
    names, stack = [], [stmt]
    while stack:
        s = stack.pop()
        if isinstance(s, S.Allocate):
            names.append(s.buffer_var.name)
        for field in ("body", "then_case", "else_case", "seq"):
            v = getattr(s, field, None)
            if isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, S.Stmt):
                stack.append(v)
    return names


def test_prim_func_is_one_pass_without_sort_buffers():
    sorting = _allocations(unique_prim_func(64, "float32", True, False).body)
    assert any("uq_hist" in a for a in sorting)
    assert [a for a in _allocations(unique_prim_func(64, "float32", True, False, True).body)] \
        == ["uq_runs"]


def test_flat_plan_is_one_consecutive_call_on_the_elements():
    x = relay.var("x", shape=(10,), dtype="float64")
    values, _, _, _ = unique_plan.unique_consecutive(RelayUnique, x, (10,), 0)
    call = values.args[1].args[0].tuple_value  # take(x, slice(first)) <- unique
    assert call.op.name == "unique" and call.attrs.consecutive is True
    assert call.args[0] is x
