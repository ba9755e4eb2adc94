"""SplitArgs against TVM v0.19's expected programs (test_pass_split_args.py restated): a
left-leaning chain of ``concatenate(stop_fusion(Tuple(...)))`` links sized by the target's
``max_function_args``, with dynamic shapes costing their shape and strides; plus numerics."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _inputs(n, dynamic):
    shape = (tvm.tir.Any(), 1, 1, 3) if dynamic else (1, 1, 1, 3)
    return [relay.var(f"p{i}", shape=shape, dtype="float32") for i in range(n)]


def _opt(expr, p):
    mod = transform.InferType()(tvm.IRModule.from_expr(expr))
    return p(mod)["main"].body


def _chain(inputs, limit, per_input, axis=1):
    """The expected program built by hand: fill each link up to ``limit`` arguments."""
    link, used = [], 0
    for x in inputs:
        if used + per_input > limit:
            link, used = [relay.concatenate(relay.annotation.stop_fusion(relay.Tuple(link)),
                                            axis)], per_input
        used += per_input
        link.append(x)
    return relay.concatenate(relay.annotation.stop_fusion(relay.Tuple(link)), axis)


@pytest.mark.parametrize("target", ["opencl", "metal", "cuda"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_split_concat_for_target(target, dynamic):
    xs = _inputs(300, dynamic)
    before = relay.concatenate(relay.Tuple(xs), 1)
    max_args = tvm.target.Target(target).max_function_args
    got = _opt(before, transform.SplitArgs(max_args))
    if max_args == 0:
        expected = before
    else:
        ndim = 4
        limit = max_args - 1 - (ndim if dynamic else 0)
        per_input = 1 + (1 + ndim if dynamic else 0)
        expected = _chain(xs, limit, per_input)
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))


def test_target_limits_are_tvms():
    assert tvm.target.Target("metal").max_function_args == 31
    assert tvm.target.Target("opencl").max_function_args == 128
    assert tvm.target.Target("llvm").max_function_args == 0


def test_few_inputs_unchanged_and_numerics():
    xs = [relay.var(f"x{i}", shape=(2, i + 1)) for i in range(7)]
    func = relay.Function(xs, relay.concatenate(relay.Tuple(xs), 1))
    mod = tvm.IRModule.from_expr(func)
    same = transform.SplitArgs(9)(transform.InferType()(mod))
    tvm.ir.assert_structural_equal(same, transform.InferType()(mod))
    split = transform.SplitArgs(4)(transform.InferType()(mod))  # 3 inputs a kernel
    calls = relay.analysis.list_op_freqs(split)
    assert calls["concatenate"] == 3 and calls["annotation.stop_fusion"] == 3
    check_numerics(mod, split)
    fused = transform.FuseOps(2)(split)
    args = [np.random.rand(2, i + 1).astype("float32") for i in range(7)]
    got = relay.create_executor("debug", mod=fused).evaluate()(*args).numpy()
    np.testing.assert_allclose(got, np.concatenate(args, 1))


def test_limit_too_small_is_an_error():
    x = relay.var("x", shape=(tvm.tir.Any(), 2))
    mod = transform.InferType()(tvm.IRModule.from_expr(relay.concatenate([x, x], 0)))
    with pytest.raises(ValueError, match="max_function_args=2"):
        transform.SplitArgs(2)(mod)
