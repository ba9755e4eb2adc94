"""FuseOps' flat path: a function of op calls, tuples, field reads, variables and constants is
graphed and fused in loops over its visiting order (``_flat_order``) instead of through the
scoped visitors' driver. Each case is fused both ways: the same graph (order, patterns, edges),
the same printed program and group count; the fused program computes what the input does."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.type import TensorType
from minitvm.relay.transform import fuse_ops as fo

RNG = np.random.default_rng(3)


def _const(*shape):
    return relay.const(RNG.standard_normal(shape).astype("float32"))


def _programs():
    x = relay.var("x", shape=(1, 16))
    y = relay.var("y", shape=(1, 16))
    d = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, _const(16, 16)), _const(16)))
    t = relay.Tuple([d, relay.exp(d)])
    mixed = relay.add(relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1))
    r = relay.reshape(mixed, (1, 16, 1, 1))
    conv = relay.nn.conv2d(r, _const(16, 16, 1, 1), channels=16, kernel_size=(1, 1))
    mixed = relay.tanh(relay.reshape(conv, (1, 16)))
    e = relay.exp(x)
    stop = relay.annotation.stop_fusion(relay.add(x, y))
    return {
        "mixed": relay.Function([x], relay.multiply(mixed, relay.const(0.5))),
        "diamond": relay.Function([x], relay.add(relay.sin(e), relay.cos(e))),
        "tuple_out": relay.Function([x, y], relay.Tuple([relay.add(x, y), relay.exp(y)])),
        "concat": relay.Function([x, y], relay.concatenate(
            [relay.nn.relu(x), relay.sigmoid(y)], axis=1)),
        "stop_fusion": relay.Function([x, y], relay.nn.relu(relay.exp(stop))),
        "body_is_param": relay.Function([x, y], y),
        "unused_param_and_shared_const": relay.Function(
            [x, y], relay.add(relay.add(x, relay.const(1.0)), relay.const(1.0))),
    }


def _graph(fn, flat: bool):
    saved = fo._flat_order
    if not flat:
        fo._flat_order = lambda e: None
    try:
        b = fo._GraphBuilder()
        b.build(fn)
    finally:
        fo._flat_order = saved
    return [(n.ref, n.index, int(n.pattern), n.extern_ref,
             [(o.index, int(p)) for o, p in n.outputs]) for n in b.order]


def _fuse(fn, level, flat: bool):
    saved = fo._flat_order
    if not flat:
        fo._flat_order = lambda e: None
    try:
        return fo.fuse_ops(fn, level)
    finally:
        fo._flat_order = saved


def _typed(fn):
    return relay.transform.InferType()(tvm.IRModule.from_expr(fn))["main"]


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(_programs()))
def test_flat_path_equals_the_visitor_path(name, level):
    fn = _typed(_programs()[name])
    assert fo._flat_order(fn) is not None  # the flat path is taken
    assert _graph(fn, True) == _graph(fn, False)
    (fast, n_fast), (full, n_full) = _fuse(fn, level, True), _fuse(fn, level, False)
    assert n_fast == n_full
    assert fast.astext() == full.astext()
    tvm.ir.assert_structural_equal(fast, full, map_free_vars=True)


def test_fused_flat_program_computes_the_same():
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_programs()["mixed"]))
    fused = relay.transform.FuseOps(2)(mod)
    assert "Primitive=1" in fused.astext()
    x = RNG.standard_normal((1, 16)).astype("float32")
    want = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
    got = relay.create_executor("debug", mod=fused).evaluate()(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_other_functions_take_the_visitor_path():
    x = relay.var("x", shape=(2,))
    v = relay.var("v", shape=(2,))
    let = _typed(relay.Function([x], relay.Let(v, relay.exp(x), relay.add(v, v))))
    cond = relay.var("c", shape=(), dtype="bool")
    branch = _typed(relay.Function([cond, x], relay.If(cond, relay.exp(x), relay.log(x))))
    g = relay.GlobalVar("g")
    mod = tvm.IRModule({g: relay.Function([x], relay.exp(x))})
    y = relay.var("y", shape=(2,))
    mod["main"] = relay.Function([y], relay.nn.relu(g(y)))
    calls_global = relay.transform.InferType()(mod)["main"]
    prim = _typed(relay.Function([x], relay.exp(x))).with_attr("Primitive", 1)
    for fn in (let, branch, calls_global, prim):
        assert fo._flat_order(fn) is None
    # and they fuse as before
    out, groups = fo.fuse_ops(let, 2)
    assert groups == 2 and "Primitive=1" in out.astext()


def test_a_100k_chain_at_the_default_recursion_limit():
    assert sys.getrecursionlimit() <= 10_000
    ty = TensorType((4,), "float32")
    x = relay.var("x", shape=(4,))
    x._checked_type = ty
    ops = [tvm.ir.Op.get("exp"), tvm.ir.Op.get("nn.relu")]
    e = x
    for i in range(100_000):
        e = relay.Call(ops[i % 2], [e])
        e._checked_type = ty
    fn = relay.Function([x], e)
    fn._checked_type = tvm.ir.FuncType([ty], ty)
    order = fo._flat_order(fn)
    assert len(order) == 100_001 and order[0] is x and order[-1] is e
    b = fo._GraphBuilder()
    assert b.build(fn)[:-1] == order and len(b.order) == 100_002
    assert b.order[-2].outputs == [] and b.order[-2].extern_ref  # the body
    # (fusion of the 100k chain itself: tests/transform/test_fuse_partition_pinned.py)
    fuser = fo._Fuser({})
    fuser.visit_in_order(order + [fn])
    assert fuser.memo_map[e] is e  # nothing grouped: the chain comes back as it is
