"""Relay's ``unique`` is native for float32 / int32 / int64 (a strict build): a radix sort and
one scan giving TVM's padded outputs, equal to the numpy reference, sorted and in order of first
occurrence: NaN (one value, last; or with ``equal_nan=False`` each NaN its own value, in the
order of its position, as torch's), +-0 (one value), infinities, huge int64 keys; and the IR's
one table stage."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.topi.reference.transform_extra import unique_padded

FLOATS = np.array([0, -0.0, 1.5, -2, np.nan, np.inf, -np.inf, 3e30, -1e-40], "float32")


def _build(n, dtype, is_sorted, equal_nan=True):
    x = relay.var("x", shape=(n,), dtype=dtype)
    out = relay.unique(x, is_sorted, True, equal_nan).astuple()
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm")
    return graph_executor.GraphModule(lib["default"](tvm.cpu()))


def _inputs(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.choice(FLOATS, n)
    scale = 10**12 if dtype == "int64" else 1
    return (rng.integers(-5, 5, n) * scale).astype(dtype)


@pytest.mark.parametrize("is_sorted", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_unique_matches_the_reference(dtype, is_sorted):
    for n in (1, 50, 1000):
        g = _build(n, dtype, is_sorted)
        for seed in range(2):
            x = _inputs(dtype, n, seed)
            g.set_input("x", x)
            g.run()
            want = unique_padded(x, is_sorted, True)
            for k, w in enumerate(want):
                got = g.get_output(k).numpy()
                assert got.dtype == w.dtype
                np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("is_sorted", [True, False])
def test_each_nan_its_own_value_when_not_equal_nan(is_sorted):
    for n in (1, 9, 300):
        g = _build(n, "float32", is_sorted, equal_nan=False)
        x = _inputs("float32", n, 3)
        g.set_input("x", x)
        g.run()
        want = unique_padded(x, is_sorted, True, equal_nan=False)
        assert int(want[3][0]) == np.unique(x, equal_nan=False).size
        for k, w in enumerate(want):
            np.testing.assert_array_equal(g.get_output(k).numpy(), w)


def test_equal_nan_prints_only_when_false_and_parses_back():
    x = relay.var("x", shape=(4,), dtype="float32")
    plain = tvm.IRModule.from_expr(relay.Function([x], relay.unique(x).astuple()))
    assert "equal_nan" not in plain.astext()
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.unique(x, True, True,
                                                                  False).astuple()))
    assert "equal_nan=False" in mod.astext()
    parsed = tvm.relay.fromtext(mod.astext())
    assert parsed["main"].body.attrs.equal_nan is False
    assert tvm.ir.structural_equal(parsed, relay.transform.InferType()(mod))


def test_unique_of_other_types_is_not_native():
    x = relay.var("x", shape=(8,), dtype="float64")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.unique(x).astuple()))
    with pytest.raises(Exception, match="unique of float64"):
        with tvm.transform.PassContext(opt_level=3):
            relay.build(mod, target="llvm")
