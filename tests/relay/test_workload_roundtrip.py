"""Issue acceptance: parse(astext(m)) is structurally equal to m for every relay.testing
workload, and a 100,000-node program survives every core traversal at the default limit."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing import bert, mlp, mobilenet, resnet

WORKLOADS = {
    "resnet18": lambda: resnet.get_workload(num_layers=18),
    "resnet50": lambda: resnet.get_workload(num_layers=50),
    "mobilenet": lambda: mobilenet.get_workload(),
    "bert": lambda: bert.get_workload(),
    "mlp": lambda: mlp.get_workload(),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_text_round_trip(name):
    mod, _ = WORKLOADS[name]()
    mod = relay.transform.InferType()(mod)
    back = relay.parse(mod.astext())
    assert tvm.ir.structural_equal(back, mod, map_free_vars=True)


def test_round_trip_with_constants():
    mod, params = resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    opt, _ = relay.optimize(mod, params=params)
    back = relay.parse(opt.astext(show_meta_data=True))
    tvm.ir.assert_structural_equal(back, opt, map_free_vars=True)


def test_hundred_thousand_node_chain_everywhere():
    assert sys.getrecursionlimit() <= 10_000
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.add(e, relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Function([x], e))
    mod = relay.transform.InferType()(mod)
    text = mod.astext()
    back = relay.parse(text)
    assert tvm.ir.structural_equal(back, mod, map_free_vars=True)
    assert tvm.ir.structural_hash(back) == tvm.ir.structural_hash(mod)
    out = relay.create_executor("debug", mod=mod).evaluate()(np.zeros(2, "float32"))
    np.testing.assert_allclose(out.numpy(), [100_000.0, 100_000.0])
    relay.ExprVisitor().visit(mod["main"])
    assert relay.ExprMutator().visit(mod["main"]) is mod["main"]
