"""``topi.shape_conditions``: the shape rules state what they assume of symbolic sizes (an exact
division, equal element counts) where someone collects them, and nothing otherwise."""

import pytest

from minitvm import relay
from minitvm.ir.prim_expr import Any
from minitvm.tir import expr as E
from minitvm.topi import shape_conditions
from minitvm.topi.shape import div_dim, infer_reshape


def test_symbolic_divisions_and_counts_are_stated():
    n = E.Var("n", "int64")
    with shape_conditions.collect() as found:
        assert isinstance(infer_reshape((n, 3), (-1, 2)), tuple)  # n*3 / 2: assumed exact
        infer_reshape((n, 3), (6, 2))  # n*3 elements into 12: assumed equal
        div_dim(n * 12, 12)  # cancels: nothing to assume
    kinds = [kind for kind, _, _ in found]
    assert kinds == ["divisible", "equal"]
    assert str(found[0][2]) == "2" and str(found[1][2]) == "12"


def test_static_and_unknown_sizes_state_nothing():
    with shape_conditions.collect() as found:
        assert infer_reshape((4, 3), (-1, 2)) == (6, 2)
        infer_reshape((Any(), 3), (-1, 2))  # (an Any: left unknown, not a condition)
    assert found == []
    with pytest.raises(ValueError, match="not divisible by 2"):
        infer_reshape((3, 3), (-1, 2))  # (the static rule checks it itself)


def test_nothing_is_kept_outside_a_collection_and_blocks_nest():
    n = E.Var("n", "int64")
    infer_reshape((n, 3), (-1, 2))  # nobody collecting: no error, nothing kept
    with shape_conditions.collect() as outer:
        with shape_conditions.collect() as inner:
            div_dim(n * 3, 2)
        div_dim(n * 5, 2)
    assert len(inner) == 1 and len(outer) == 1


def test_split_into_sections_states_its_division():
    n = E.Var("n", "int64")
    x = relay.var("x", shape=(n, 3))
    with shape_conditions.collect() as found:
        relay.transform.InferType()(relay.IRModule.from_expr(
            relay.Function([x], relay.split(x, 2, axis=0).astuple())))
    assert [kind for kind, _, _ in found] == ["divisible"]


def test_at_most_states_a_symbolic_bound():
    from minitvm.topi.shape_conditions import at_most, collect

    n = E.Var("n", "int64")
    with collect() as found:
        assert at_most(2, 3) and not at_most(4, 3)
        assert at_most(n, n) and at_most(Any(), 3)
        assert at_most(n, 5)
    assert [(k, str(a), str(b)) for k, a, b in found] == [("greater", "6", "n")]
