"""BatchingOps (TVM v0.19: Sequential of CombineParallelConv2D/Dense/BatchMatmul): the combined
program equals the three passes applied in order, numerics are unchanged, the children keep
their opt level 4 (nothing happens at the default level), and a deep chain works."""

import numpy as np

import minitvm as tvm
from minitvm import relay


def _program(x):
    ws = [relay.var(f"w{i}", shape=(4, 6)) for i in range(3)]
    ks = [relay.var(f"k{i}", shape=(2, 3, 1, 1)) for i in range(3)]
    img = relay.var("img", shape=(1, 3, 4, 4))
    outs = [relay.nn.relu(relay.nn.dense(x, w)) for w in ws]
    outs += [relay.nn.conv2d(img, k) for k in ks]
    return relay.Function([x, *ws, img, *ks], relay.Tuple(outs))


def _mod(func):
    return relay.transform.InferType()(tvm.IRModule.from_expr(func))


def test_equals_the_three_passes_in_order_and_runs_the_same():
    before = _mod(_program(relay.var("x", shape=(2, 6))))
    with tvm.transform.PassContext(opt_level=4):
        after = relay.transform.BatchingOps()(before)
        expected = relay.transform.CombineParallelBatchMatmul()(
            relay.transform.CombineParallelDense()(
                relay.transform.CombineParallelConv2D()(before)))
    tvm.ir.assert_structural_equal(after, expected)
    assert not tvm.ir.structural_equal(after, before)
    fields = after["main"].body.fields
    assert fields[0].op.name == "squeeze"  # the dense branches come out of one batch_matmul
    assert fields[3].op.name == "strided_slice"  # the convs out of one wider conv2d
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type_annotation.concrete_shape).astype("float32")
            for p in before["main"].params]
    run = [relay.create_executor("debug", mod=m).evaluate()(*args) for m in (before, after)]
    for a, b in zip(run[0], run[1], strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_children_keep_opt_level_4():
    before = _mod(_program(relay.var("x", shape=(2, 6))))
    p = relay.transform.BatchingOps()
    assert [c.info.name for c in p.passes] == [
        "CombineParallelConv2d", "CombineParallelDense", "CombineParallelBatchMatmul"]
    tvm.ir.assert_structural_equal(p(before), before)  # default opt_level 2


def test_deep_chain():
    x = relay.var("x", shape=(2, 6))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    func = _program(x)
    func = relay.Function(func.params, relay.bind(func.body, {x: e}))
    with tvm.transform.PassContext(opt_level=4):
        after = relay.transform.BatchingOps()(_mod(func))
    assert after["main"].body.fields[0].op.name == "squeeze"
