"""frontend_common.unique_plan on Relay's builder: how many unique kernels each plan calls (a
slice key of m columns: 2 m - 1; consecutive runs: one, on an ascending key), the widened key
types, and the errors for an axis out of range, an empty or a symbolic shape. The numerics are
checked against torch and ORT by the importer tests."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.frontend_common import unique_plan
from minitvm.relay.frontend.unique_native import RelayUnique


def _unique_calls(outputs) -> list:
    """The ``unique`` calls under ``outputs`` (Relay expressions)."""
    calls, seen, stack = [], set(), list(outputs)
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, relay.Call):
            if getattr(e.op, "name", "") == "unique":
                calls.append(e)
            stack.extend(e.args)
        elif isinstance(e, relay.TupleGetItem):
            stack.append(e.tuple_value)
    return calls


@pytest.mark.parametrize("columns", [1, 2, 5])
def test_slices_rank_column_by_column(columns):
    x = relay.var("x", shape=(6, columns), dtype="int64")
    outs = unique_plan.unique_slices(RelayUnique, x, (6, columns), "int64", 0, True, False)
    calls = _unique_calls(outs)
    assert len(calls) == 2 * columns - 1
    # the float-or-raw first column keeps torch's NaN rule; combined int64 keys need none
    assert any(c.attrs.equal_nan is False for c in calls)


def test_consecutive_runs_call_the_kernel_once_on_an_int64_key():
    x = relay.var("x", shape=(4, 3), dtype="float32")
    (call,) = _unique_calls(unique_plan.unique_consecutive(RelayUnique, x, (4, 3), -1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], call.args[0])))
    assert mod["main"].ret_type.dtype == "int64"
    assert getattr(call.args[0].op, "name", "") == "cumsum"


def test_narrow_types_are_widened_for_the_key():
    assert [unique_plan.key_dtype(t) for t in ("bool", "uint8", "int16", "uint32", "float16",
                                               "float32", "int64", "float64")] == \
        ["int32", "int32", "int32", "int64", "float32", "float32", "int64", None]


@pytest.mark.parametrize("shape,axis,match", [
    ((4, 2), 2, "dim 2 is out of range for a rank-2 input"),
    ((4, 2), -3, "dim -3 is out of range"),
    ((0, 2), 0, "empty input"),
    ((relay.Any(), 2), 0, "needs a static shape"),
])
def test_clear_errors(shape, axis, match):
    x = relay.var("x", shape=shape, dtype="int64")
    with pytest.raises(ValueError, match=match):
        unique_plan.unique_slices(RelayUnique, x, shape, "int64", axis, True, False)
