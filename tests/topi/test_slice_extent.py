"""A slice's length and first index over a symbolic size (``topi.shape.slice_extent`` /
``slice_start``) against Python's slicing at every size 0..8, and ``taken_equal``: which size
pairs a rule may take as one, and what it states."""

import itertools

import pytest

from minitvm.ir.prim_expr import Any
from minitvm.relay.backend.vm.symbolic import _eval_dim
from minitvm.tir import expr as E
from minitvm.topi import shape_conditions
from minitvm.topi.shape import slice_extent, slice_start

BOUNDS = [None, 0, 1, 3, 7, 2**31 - 1, -1, -3, -9, -(2**31),
          2**63 - 1, -(2**63)]  # (ONNX's INT64_MAX / INT64_MIN "past either end")


@pytest.mark.parametrize("step", [1, 2, 3, -1, -2])
def test_slice_extent_and_start_match_python(step):
    n = E.Var("n", "int64")
    for b, e in itertools.product(BOUNDS, BOUNDS):
        length, start = slice_extent(n, b, e, step), slice_start(n, b, step)
        for size in range(9):
            want = range(size)[b:e:step]
            env = {id(n): size}
            assert _eval_dim(length, env) == len(want), (b, e, step, size)
            if len(want):
                assert _eval_dim(start, env) == want[0], (b, e, step, size)


def test_taken_equal_states_only_while_collecting():
    n, m = E.Var("n", "int64"), E.Var("m", "int64")
    assert not shape_conditions.taken_equal(n, m)  # (nobody checks it: not the same)
    assert not shape_conditions.taken_equal(3, 4)
    with shape_conditions.collect() as found:
        assert shape_conditions.taken_equal(n, m)
        assert shape_conditions.taken_equal(n, 3)
        assert shape_conditions.taken_equal(n, n)  # (provably equal: nothing stated)
        assert not shape_conditions.taken_equal(3, 4)
        assert not shape_conditions.taken_equal(n, Any())
    assert [k for k, _, _ in found] == ["equal", "equal"]
    assert found[0][1] is n and found[0][2] is m  # (identity: an expr's == builds a node)
    assert found[1][1] is n and found[1][2] == 3
