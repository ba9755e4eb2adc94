"""ir.snapshot: a value's held fields by identity, found changed exactly where they were changed."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.snapshot import snapshot


def _module():
    x = relay.var("x", shape=(2, 3))
    w = relay.const(np.ones((3, 3), "float32"))
    y = relay.nn.relu(relay.nn.dense(x, w))
    f = relay.Function([x], relay.Tuple([y, relay.sum(y, axis=[1])]))
    return relay.transform.InferType()(tvm.IRModule.from_expr(f))


def test_an_untouched_module_is_unchanged_after_passes_ran_on_it():
    mod = _module()
    snap = snapshot(mod)
    relay.transform.FoldConstant()(mod)
    relay.transform.InferType()(mod)  # fills the inferred types of a copy, not a field
    assert snap.changed() is None


def test_a_field_set_deep_inside_is_found():
    mod = _module()
    snap = snapshot(mod)
    call = mod["main"].body.fields[0]  # relu(dense(x, w))
    dense = call.args[0]
    dense.args = (dense.args[0], relay.const(np.zeros((3, 3), "float32")))
    assert snap.changed() is dense


def test_a_list_and_a_dict_changed_in_place_are_found():
    held = [relay.var("a"), {"k": relay.var("b")}]
    snap = snapshot(held)
    held[1]["k"] = relay.var("c")
    assert snap.changed() is held[1]
    held2 = [relay.var("a")]
    snap2 = snapshot(held2)
    held2.append(relay.var("b"))
    assert snap2.changed() is held2


def test_a_function_added_to_the_module_is_found():
    mod = _module()
    snap = snapshot(mod)
    x = relay.var("z", shape=(1,))
    mod["other"] = relay.Function([x], x)
    assert snap.changed() is mod


def test_a_node_replaced_by_an_equal_copy_counts_as_a_change():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.add(x, relay.const(1.0)))
    snap = snapshot(f)
    f.body = relay.add(x, relay.const(1.0))
    assert tvm.ir.structural_equal(f.body, relay.add(x, relay.const(1.0)))
    assert snap.changed() is f


def test_equal_leaves_rebuilt_are_not_a_change():
    """A Relay expression without a placement reads a fresh unconstrained VirtualDevice each
    time: leaves compare by the code structural_hash gives them, not by identity."""
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.negative(x))
    assert f.virtual_device_ is not f.virtual_device_
    assert snapshot(f).changed() is None


def test_a_100000_deep_chain_at_the_default_recursion_limit():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    f = relay.Function([x], e)
    snap = snapshot(f)
    assert snap.changed() is None
    inner = f.body
    for _ in range(50_000):
        inner = inner.args[0]
    inner.args = (x,)
    assert snap.changed() is inner
