"""Seed 42186 of the dynamic fuzzer: ``argsort`` of a computed float key whose elements are equal
within rounding. The VM's ``tanh`` is monotone across neighbouring inputs where numpy's returns
one value for all three, so the interpreter saw a tie and the VM an order: both right. The
checker calls such a difference "boundary-dependent" (``testing.fuzz.boundaries``); a key with real gaps
is still held to the exact order."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.testing.fuzz.boundaries import near_tie, selection_keys
from minitvm.testing.fuzz.differential import TOLERATED_KINDS
from minitvm.testing.fuzz.dynamic_differential import check_dynamic
from minitvm.testing.fuzz.dynamic_generator import DynamicProgram, Param

# tanh's arguments in the finding: one ulp apart around -3.1006
_NEAR = np.array([-3.1005899906158447, -3.100590944290161, -3.1005890369415283], "float32")


def _argsort_of_tanh():
    x = relay.var("p0", shape=(relay.Any(),), dtype="float32")
    key = relay.tanh(x)
    return tvm.IRModule.from_expr(relay.Function([x], relay.argsort(key, is_ascend=False)))


class _Fixed(DynamicProgram):
    """The finding's program with the finding's values (and a well separated control)."""

    def inputs(self, n, seed=0):
        return [_NEAR[:n] if seed < 2 else np.array([0.5, -1.0, 2.0], "float32")[:n]]


def test_selection_keys_are_computed_floats_only():
    mod = relay.transform.InferType()(_argsort_of_tanh())
    keys = selection_keys(mod["main"])
    assert [(k.op.name, axis) for k, axis in keys] == [("tanh", 0)]
    x = relay.var("x", shape=(3,), dtype="float32")
    direct = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x], relay.argsort(x))))
    assert selection_keys(direct["main"]) == []  # a parameter is exact on both sides


def test_near_tie_seen_and_gaps_not():
    mod = relay.transform.InferType()(_argsort_of_tanh())
    assert "argsort of a computed value near its boundary" in near_tie(mod, [_NEAR], 2e-4)
    assert near_tie(mod, [np.array([0.5, -1.0, 2.0], "float32")], 2e-4) is None


def test_boundary_dependent_order_is_tolerated():
    mod = relay.transform.InferType()(_argsort_of_tanh())
    prog = _Fixed(mod=mod, seed=42186, params=[Param("p0", ("n",), "float32")])
    found = check_dynamic(prog, sizes=[3, 3, 3], opt_level=3)
    assert [f.kind for f in found] in ([], ["boundary-dependent"])
    assert all(f.kind in TOLERATED_KINDS for f in found)


def test_selection_keys_of_a_deep_chain():
    """The key search is iterative: a 100,000-op key at the default recursion limit."""
    x = relay.var("x", shape=(3,), dtype="float32")
    y = x
    for _ in range(100_000):
        y = relay.negative(y)
    func = relay.Function([x], relay.argsort(y))
    y._checked_type = x.type_annotation
    keys = selection_keys(func)
    assert len(keys) == 1 and keys[0][0] is y


def test_floor_of_a_sum_to_one_is_a_boundary():
    """Seed 300406: floor(cumsum(softmax(x))) -- the last running sum is 1 within rounding
    (0.99999994 in the VM, 1.0 in numpy), so floor gave 0 and 1, both right."""
    x = relay.var("x", shape=(relay.Any(),), dtype="float32")
    body = relay.floor(relay.cumsum(relay.nn.softmax(x, axis=0), axis=0))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    xv = np.array([0.3, -1.2, 2.0, 0.7], "float32")
    assert "floor of a computed value near its boundary" in near_tie(mod, [xv], 2e-4)
    far = relay.floor(relay.nn.softmax(x, axis=0) * relay.const(3.0))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], far)))
    assert near_tie(mod, [np.array([0.0, 0.1], "float32")], 2e-4) is None


def test_truncating_mod_of_a_quotient_near_an_integer_is_a_boundary():
    """Build-matrix seed 1000224: ``mod(exp(log(|x| + 1)), |x| + 1)`` -- the quotient is 1
    within rounding, so our exp / log and numpy's gave 2.585 (just under the divisor) and 0;
    both right. Relay's truncating ``mod`` jumps where the quotient crosses an integer, as
    ``floor_mod`` does, and now counts as such a jump; a quotient far from one does not."""
    x = relay.var("x", shape=(2,), dtype="float32")
    y = relay.add(relay.abs(x), relay.const(1.0))
    body = relay.mod(relay.exp(relay.log(y)), y)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    near = near_tie(mod, [np.array([1.5852280, -0.25], "float32")], 2e-4)
    assert near is not None and "mod" in near
    far = relay.mod(relay.multiply(y, relay.const(1.5)), y)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], far)))
    assert near_tie(mod, [np.array([1.5852280, -0.25], "float32")], 2e-4) is None
