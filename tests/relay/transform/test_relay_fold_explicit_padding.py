"""FoldExplicitPadding: nn.pad folded into convolutions and pools."""

from __future__ import annotations

import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import FoldExplicitPadding

X = (1, 2, 6, 6)


def _run(body_fn, *params):
    x = relay.var("x", shape=X)
    before = relay.Function([x, *params], body_fn(x))
    mod = tvm.IRModule.from_expr(before)
    out = run_pass(FoldExplicitPadding(), relay.transform.InferType()(mod))
    check_numerics(mod, out)
    return out["main"], x


def test_conv2d():
    w = relay.var("w", shape=(3, 2, 3, 3))
    pad = ((0, 0), (0, 0), (1, 2), (0, 1))
    got, x = _run(lambda x: relay.nn.conv2d(relay.nn.pad(x, pad), w, padding=(1, 1)), w)
    expected = relay.Function([x, w], relay.nn.conv2d(x, w, padding=(2, 1, 3, 2)))
    assert tvm.ir.structural_equal(got, infer(expected))


def test_max_pool_needs_lowest_value():
    pad = ((0, 0), (0, 0), (1, 1), (1, 1))
    got, x = _run(lambda x: relay.nn.max_pool2d(relay.nn.pad(x, pad, float("-inf")),
                                                pool_size=(3, 3)))
    expected = relay.Function([x], relay.nn.max_pool2d(x, pool_size=(3, 3),
                                                       padding=(1, 1, 1, 1)))
    assert tvm.ir.structural_equal(got, infer(expected))
    # a zero pad is not a max-pool pad: kept
    got, x = _run(lambda x: relay.nn.max_pool2d(relay.nn.pad(x, pad), pool_size=(3, 3)))
    assert got.body.args[0].op.name == "nn.pad"


def test_avg_pool_counts_the_padding():
    pad = ((0, 0), (0, 0), (1, 1), (1, 1))
    got, x = _run(lambda x: relay.nn.avg_pool2d(relay.nn.pad(x, pad), pool_size=(3, 3)))
    expected = relay.Function([x], relay.nn.avg_pool2d(x, pool_size=(3, 3),
                                                       padding=(1, 1, 1, 1),
                                                       count_include_pad=True))
    assert tvm.ir.structural_equal(got, infer(expected))
    # an existing non-counting padding cannot absorb a counted pad: kept
    got, _ = _run(lambda x: relay.nn.avg_pool2d(relay.nn.pad(x, pad), pool_size=(3, 3),
                                                padding=(1, 1)))
    assert got.body.args[0].op.name == "nn.pad"


@pytest.mark.parametrize("pad,value", [(((1, 0), (0, 0), (0, 0), (0, 0)), 0.0),
                                       (((0, 0), (0, 0), (1, 1), (1, 1)), 1.0)])
def test_not_folded(pad, value):
    w = relay.var("w", shape=(3, 2, 3, 3))
    got, _ = _run(lambda x: relay.nn.conv2d(relay.nn.pad(x, pad, value), w), w)
    assert got.body.args[0].op.name == "nn.pad"


def test_conv1d_and_pad_mode():
    x = relay.var("x", shape=(1, 2, 8))
    w = relay.var("w", shape=(3, 2, 3))
    f = relay.Function([x, w], relay.nn.conv1d(relay.nn.pad(x, ((0, 0), (0, 0), (2, 1))), w))
    mod = tvm.IRModule.from_expr(f)
    out = FoldExplicitPadding()(relay.transform.InferType()(mod))
    assert out["main"].body.args[0] is out["main"].params[0]
    assert tuple(out["main"].body.attrs.padding) == (2, 1)
    check_numerics(mod, out)
    edge = relay.Function([x, w], relay.nn.conv1d(relay.nn.pad(x, ((0, 0), (0, 0), (2, 1)),
                                                              pad_mode="edge"), w))
    out = FoldExplicitPadding()(relay.transform.InferType()(tvm.IRModule.from_expr(edge)))
    assert out["main"].body.args[0].op.name == "nn.pad"


def test_deep_chain():
    x = relay.var("x", shape=(1, 1, 4, 4))
    e = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    e = relay.nn.max_pool2d(relay.nn.pad(e, ((0, 0), (0, 0), (1, 1), (1, 1)),
                                         float("-inf")), pool_size=(3, 3))
    out = FoldExplicitPadding()(tvm.IRModule.from_expr(relay.Function([x], e)))
    assert out["main"].body.args[0].op.name == "nn.relu"


