"""SplitConvPool: a large conv output read only by a pool (through per-channel ops) becomes
convs of channel slices, each with its pool, concatenated; anything else is left alone."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import SplitConvPool
from minitvm.relay.transform import split_conv_pool as scp
from minitvm.relay.transform.split_conv_pool import split_conv_pool


@pytest.fixture
def small(monkeypatch):
    """Split maps from 64 KB in parts of 16 KB (keeps the tests small)."""
    monkeypatch.setattr(scp, "MIN_BYTES", 64 << 10)
    monkeypatch.setattr(scp, "PART_BYTES", 16 << 10)


def _rng():
    return np.random.default_rng(0)


def _stem(o=64, hw=32, k=3, stride=1, epilogue="bias_relu", pool="max", c=3, groups=1):
    """conv -> [epilogue] -> pool on a (1, c, hw, hw) input; (function, conv output)."""
    rng = _rng()
    x = relay.var("x", shape=(1, c, hw, hw))
    w = relay.const(rng.standard_normal((o, c // groups, k, k)).astype("float32"))
    conv = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(k // 2, k // 2),
                           channels=o, kernel_size=(k, k), groups=groups)
    y = conv
    if epilogue == "bias_relu":
        y = relay.nn.relu(relay.add(y, relay.const(
            rng.standard_normal((o, 1, 1)).astype("float32"))))
    elif epilogue == "bias_add_scale":
        y = relay.nn.bias_add(y, relay.const(rng.standard_normal(o).astype("float32")))
        y = relay.multiply(relay.const(rng.standard_normal((1, o, 1, 1)).astype("float32")), y)
        y = relay.clip(relay.add(y, relay.const(0.5, "float32")), 0.0, 6.0)
    if pool == "max":
        y = relay.nn.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1))
    else:
        y = relay.nn.avg_pool2d(y, (2, 2), (2, 2))
    return relay.Function([x], y), conv


def _calls(f, name):
    found = []

    def visit(e):
        if isinstance(e, relay.Call) and getattr(e.op, "name", None) == name:
            found.append(e)

    relay.analysis.post_order_visit(f.body, visit)
    return found


def test_splits_into_slices_with_their_pools(small):
    f = infer(_stem()[0])  # 64 x 32 x 32 floats: 256 KB in 16 KB parts -> 16-channel slices
    out, n = split_conv_pool(f)
    assert n == 1
    body = out.body
    assert body.op.name == "concatenate" and int(body.attrs.axis) == 1
    pools = list(body.args[0].fields)
    assert len(pools) == 4
    w = _calls(f, "nn.conv2d")[0].args[1].data.numpy()
    b = _calls(f, "add")[0].args[1].data.numpy()
    for i, p in enumerate(pools):
        assert p.op.name == "nn.max_pool2d"
        relu = p.args[0]
        assert relu.op.name == "nn.relu"
        add = relu.args[0]
        assert add.op.name == "add"
        np.testing.assert_array_equal(add.args[1].data.numpy(), b[16 * i:16 * i + 16])
        conv = add.args[0]
        assert conv.op.name == "nn.conv2d" and int(conv.attrs.channels) == 16
        np.testing.assert_array_equal(conv.args[1].data.numpy(), w[16 * i:16 * i + 16])
    assert tvm.ir.structural_equal(infer(out).ret_type, f.ret_type)


def test_parts_are_whole_channel_multiples():
    assert scp.parts(64, 3 << 20) == [(0, 16), (16, 32), (32, 48), (48, 64)]
    assert scp.parts(64, 1 << 20) == [(0, 64)]  # under MIN_BYTES
    assert scp.parts(24, 8 << 20) == [(0, 16), (16, 24)]
    assert scp.parts(16, 8 << 20) == [(0, 16)]  # one multiple of 16: nothing to split


@pytest.mark.parametrize("case", [
    dict(), dict(epilogue="bias_add_scale"), dict(epilogue="none", pool="avg"),
    dict(o=48, hw=65, k=7, stride=2, c=3),
])
def test_numerics_match_the_unsplit_build(small, case):
    f, _ = _stem(**case)
    mod = tvm.IRModule.from_expr(f)
    out = run_pass(SplitConvPool(), relay.transform.InferType()(mod))
    assert out["main"].body.op.name == "concatenate"
    x = _rng().standard_normal((1, case.get("c", 3), case.get("hw", 32), case.get("hw", 32))
                               ).astype("float32")
    results = []
    for disabled in (["SplitConvPool"], []):
        with tvm.transform.PassContext(opt_level=3, disabled_pass=disabled):
            lib = relay.build(mod, target="llvm")
        g = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
        g.set_input("x", x)
        g.run()
        results.append(g.get_output(0).numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-5)


def _unchanged(f):
    f = infer(f)
    out, n = split_conv_pool(f)
    assert n == 0 and out is f


def test_small_maps_are_left_alone():
    _unchanged(_stem()[0])  # 256 KB, under the default MIN_BYTES


def test_other_uses_grouped_convs_and_batches_are_left_alone(small):
    f, conv = _stem()
    _unchanged(relay.Function(f.params, relay.Tuple([f.body, conv])))  # the conv read twice
    _unchanged(_stem(c=16, groups=2)[0])
    x = relay.var("x", shape=(2, 3, 32, 32))
    w = relay.const(_rng().standard_normal((64, 3, 3, 3)).astype("float32"))
    y = relay.nn.max_pool2d(relay.nn.conv2d(x, w, padding=(1, 1), channels=64,
                                            kernel_size=(3, 3)), (2, 2), (2, 2))
    _unchanged(relay.Function([x], y))


def test_non_per_channel_operands_are_left_alone(small):
    x = relay.var("x", shape=(1, 3, 32, 32))
    m = relay.var("m", shape=(1, 64, 32, 32))
    w = relay.const(_rng().standard_normal((64, 3, 3, 3)).astype("float32"))
    conv = relay.nn.conv2d(x, w, padding=(1, 1), channels=64, kernel_size=(3, 3))
    _unchanged(relay.Function([x, m], relay.nn.max_pool2d(relay.add(conv, m), (2, 2), (2, 2))))
    plane = relay.const(np.ones((32, 32), "float32"))  # per pixel, not per channel
    _unchanged(relay.Function([x], relay.nn.max_pool2d(relay.add(conv, plane), (2, 2), (2, 2))))


def test_long_chain_does_not_recurse():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    f = relay.Function([x], e)
    out, n = split_conv_pool(f)
    assert n == 0 and out is f
