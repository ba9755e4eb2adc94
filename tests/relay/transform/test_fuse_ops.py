"""FuseOps: expected groupings (Before/Expected), numerics, config and deep programs."""

import numpy as np
import pytest
from pass_test_util import check_numerics, count_nodes, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.expr import Function


def fuse(f, level=2, ctx_level=None, config=None):
    mod = tvm.IRModule.from_expr(f)
    mod = relay.transform.InferType()(mod)
    with tvm.transform.PassContext(opt_level=ctx_level or 2, config=config):
        out = run_pass(relay.transform.FuseOps(fuse_opt_level=level), mod)
    return mod, out


def primitive(params, body):
    return Function(params, body).with_attr("Primitive", 1)


def test_elemwise_chain_fuses_into_one_function():
    x = relay.var("x", shape=(10, 20))
    y = relay.exp(relay.add(x, relay.const(1.0)))
    f = relay.Function([x], relay.squeeze(y))
    mod, out = fuse(f)

    p0 = relay.var("p0", shape=(10, 20))
    body = relay.squeeze(relay.exp(relay.add(p0, relay.const(1.0))))
    fused = primitive([p0], body)
    xx = relay.var("x", shape=(10, 20))
    expected = infer(relay.Function([xx], relay.Call(fused, [xx])))
    tvm.ir.assert_structural_equal(out["main"], expected, map_free_vars=True)
    check_numerics(mod, out)


def test_conv_absorbs_bias_and_relu_but_not_next_conv():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w1 = relay.var("w1", shape=(4, 4, 3, 3))
    w2 = relay.var("w2", shape=(4, 4, 3, 3))
    b = relay.var("b", shape=(4,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b))
    z = relay.nn.conv2d(y, w2, padding=(1, 1))
    f = relay.Function([x, w1, w2, b], relay.add(z, y))
    mod, out = fuse(f)
    main = out["main"]
    fused = [e for e in _calls(main) if isinstance(e.op, Function)]
    assert len(fused) == 2
    first = fused[0].op
    ops = [c.op.name for c in _calls(first.body)]
    assert ops == ["nn.conv2d", "nn.bias_add", "nn.relu"]
    second = [c.op.name for c in _calls(fused[1].op.body)]
    assert second == ["nn.conv2d", "add"]
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def _calls(e):
    out = []
    relay.analysis.post_order_visit(
        e, lambda n: out.append(n) if isinstance(n, relay.Call) else None)
    return out


def test_elemwise_fuses_into_reduction_but_injective_does_not():
    x = relay.var("x", shape=(4, 6))
    mod, out = fuse(relay.Function([x], relay.sum(relay.exp(x), axis=[1])))
    assert count_nodes(out["main"], relay.Function) == 2  # main + one fused group
    check_numerics(mod, out)
    # TVM's rule: an injective op only joins sinks that are themselves at most injective
    mod, out = fuse(relay.Function([x], relay.sum(relay.transpose(relay.exp(x)), axis=[1])))
    assert count_nodes(out["main"], relay.Function) == 3
    check_numerics(mod, out)


def test_concatenate_with_tuple_fuses():
    x = relay.var("x", shape=(2, 3))
    t = relay.Tuple([relay.exp(x), relay.negative(x)])
    f = relay.Function([x], relay.add(relay.concatenate(t, axis=0), relay.const(1.0)))
    mod, out = fuse(f)
    groups = [c for c in _calls(out["main"]) if isinstance(c.op, Function)]
    assert len(groups) == 1
    check_numerics(mod, out)


def test_level0_one_op_per_function():
    x = relay.var("x", shape=(3,))
    f = relay.Function([x], relay.exp(relay.add(x, relay.const(2.0))))
    mod, out = fuse(f, level=0)
    groups = [c for c in _calls(out["main"]) if isinstance(c.op, Function)]
    assert len(groups) == 2
    assert all(len(_calls(g.op.body)) == 1 for g in groups)
    # at level 0 even the scalar constant is a parameter
    assert len(groups[0].op.params) == 2
    check_numerics(mod, out)


def test_fuse_opt_level_minus_one_follows_context():
    x = relay.var("x", shape=(3,))
    f = relay.Function([x], relay.exp(relay.exp(x)))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    with tvm.transform.PassContext(opt_level=0):
        out0 = relay.transform.FuseOps()(mod)
    out2 = relay.transform.FuseOps()(mod)
    assert count_nodes(out0["main"], relay.Function) == 3
    assert count_nodes(out2["main"], relay.Function) == 2


def test_param_order_follows_depth_first_walk():
    a, b = relay.var("a", shape=(3,)), relay.var("b", shape=(3,))
    f = relay.Function([a, b], relay.multiply(b, relay.exp(a)))
    _, out = fuse(f)
    call = out["main"].body
    assert [arg.name_hint for arg in call.args] == ["b", "a"]
    assert [p.name_hint for p in call.op.params] == ["p0", "p1"]


def test_stop_fusion_splits_groups_and_is_removed():
    x = relay.var("x", shape=(3,))
    y = relay.annotation.stop_fusion(relay.exp(x))
    f = relay.Function([x], relay.exp(y))
    mod, out = fuse(f)
    assert "stop_fusion" not in str(out)
    assert count_nodes(out["main"], relay.Function) == 3
    check_numerics(mod, out)


def test_max_depth_config_caps_group_size():
    x = relay.var("x", shape=(3,))
    e = x
    for _ in range(10):
        e = relay.exp(e)
    mod, out = fuse(relay.Function([x], e), config={"relay.FuseOps.max_depth": 3})
    groups = [c for c in _calls(out["main"]) if isinstance(c.op, Function)]
    assert all(len(_calls(g.op.body)) <= 3 for g in groups) and len(groups) >= 4
    check_numerics(mod, out)


def test_diamond_fuses_at_post_dominator():
    x = relay.var("x", shape=(4,))
    a = relay.exp(x)
    f = relay.Function([x], relay.add(relay.sqrt(a), relay.negative(a)))
    mod, out = fuse(f)
    assert count_nodes(out["main"], relay.Function) == 2
    check_numerics(mod, out)


def test_primitive_functions_are_not_refused():
    x = relay.var("x", shape=(3,))
    mod, out = fuse(relay.Function([x], relay.exp(relay.exp(x))))
    again = relay.transform.FuseOps()(out)
    tvm.ir.assert_structural_equal(again["main"], out["main"])


def test_defuse_inverts_fusion():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    f = relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))))
    mod, fused = fuse(f)
    defused = relay.transform.DefuseOps()(fused)
    tvm.ir.assert_structural_equal(defused["main"], mod["main"])


def test_deep_chain_at_default_recursion_limit():
    x = relay.var("x", shape=(2,))
    e = x
    for i in range(100_000):
        e = relay.add(e, relay.const(1.0)) if i % 2 else relay.exp(e) if i % 7 == 0 else \
            relay.negative(e)
    mod, out = fuse(relay.Function([x], e))
    groups = [c for c in _calls(out["main"]) if isinstance(c.op, Function)]
    # 100,000 calls + 50,000 scalar constants fused in, at most 256 nodes per group
    assert len(groups) == pytest.approx(150_000 / 256, abs=10)
    arr = np.array([0.1, 0.2], "float32")
    ex = relay.create_executor("debug", mod=out)
    assert ex.evaluate()(arr).numpy().shape == (2,)
