"""CombineParallelConv2D / Dense / BatchMatmul: grouping, thresholds, numerics."""

import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(1)


def _c(*shape):
    return relay.const(RNG.standard_normal(shape).astype("float32"))


def _run(f, p):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    return mod, run_pass(p, mod)


def _ops(mod):
    names = []
    relay.analysis.post_order_visit(mod["main"], lambda e: names.append(e.op.name) if isinstance(
        e, relay.Call) and isinstance(e.op, tvm.ir.Op) else None)
    return names


def test_three_convs_become_one():
    x = relay.var("x", shape=(1, 4, 8, 8))
    ys = [relay.nn.conv2d(x, _c(c, 4, 3, 3), channels=c, kernel_size=(3, 3), padding=(1, 1))
          for c in (2, 3, 5)]
    mod, out = _run(relay.Function([x], relay.Tuple(ys)), relay.transform.CombineParallelConv2D())
    assert _ops(out).count("nn.conv2d") == 1 and _ops(out).count("strided_slice") == 3
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)

    xx = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.concatenate([y.args[1] for y in ys], axis=0)
    y = relay.nn.conv2d(xx, w, channels=10, kernel_size=(3, 3), padding=(1, 1))
    expected = relay.Function([xx], relay.Tuple([
        # TVM's form: size-mode slices with -1 before the channel axis
        relay.strided_slice(y, begin=[0, 0], end=[-1, 2], strides=[1, 1], slice_mode="size"),
        relay.strided_slice(y, begin=[0, 2], end=[-1, 3], strides=[1, 1], slice_mode="size"),
        relay.strided_slice(y, begin=[0, 5], end=[-1, 5], strides=[1, 1], slice_mode="size")]))
    tvm.ir.assert_structural_equal(out["main"], infer(expected))


def test_below_threshold_or_incompatible_untouched():
    x = relay.var("x", shape=(1, 4, 8, 8))
    ys = [relay.nn.conv2d(x, _c(2, 4, 3, 3)), relay.nn.conv2d(x, _c(2, 4, 3, 3)),
          relay.nn.conv2d(x, _c(2, 4, 1, 1))]
    mod, out = _run(relay.Function([x], relay.Tuple(ys)), relay.transform.CombineParallelConv2D())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
    _, out2 = _run(relay.Function([x], relay.Tuple(ys)),
                   relay.transform.CombineParallelConv2D(min_num_branches=2))
    assert _ops(out2).count("nn.conv2d") == 2  # the two 3x3 ones combined, the 1x1 stays apart


@pytest.mark.parametrize("to_batch", [True, False])
def test_parallel_dense(to_batch):
    x = relay.var("x", shape=(3, 6))
    ys = [relay.nn.relu(relay.nn.dense(x, _c(4, 6))) for _ in range(3)]
    mod, out = _run(relay.Function([x], relay.Tuple(ys)),
                    relay.transform.CombineParallelDense(to_batch=to_batch))
    ops = _ops(out)
    assert ops.count("nn.batch_matmul" if to_batch else "nn.dense") == 1
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_parallel_batch_matmul():
    a = relay.var("a", shape=(2, 3, 6))
    ys = [relay.nn.batch_matmul(a, _c(2, n, 6)) for n in (4, 5, 6)]
    mod, out = _run(relay.Function([a], relay.Tuple(ys)),
                    relay.transform.CombineParallelBatchMatmul())
    assert _ops(out).count("nn.batch_matmul") == 1
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_registered_names_and_levels():
    assert relay.transform.CombineParallelConv2D().info.name == "CombineParallelConv2d"
    for p in (relay.transform.CombineParallelConv2D(), relay.transform.CombineParallelDense(),
              relay.transform.CombineParallelBatchMatmul()):
        assert p.info.opt_level == 4 and list(p.info.required) == ["InferType"]
