"""FlattenAtrousConv builds TVM's programs: the cases of TVM's own test of the pass.

space_to_batch_nd -> (depthwise, HWOI) conv2d -> batch_to_space_nd becomes one dilated conv2d
with the SAME padding; anything else in between, or a partial pattern, is left alone.
"""

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(11)
X_SHAPE, W_SHAPE = (1, 5, 5, 4), (3, 3, 4, 1)


def _weight():
    return relay.const(RNG.integers(-128, 127, size=W_SHAPE).astype("float32"))


def _dw_conv(data, weight, padding=(0, 0, 0, 0), dilation=None):
    extra = {} if dilation is None else {"dilation": dilation}
    return relay.nn.conv2d(data, weight, padding=padding, groups=4, channels=4,
                           kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWOI", **extra)


def _atrous(data, weight, block):
    pad, crop = (2, 3) if block == 2 else (4, 7), (0, 1) if block == 2 else (0, 3)
    s2b = relay.nn.space_to_batch_nd(data, block_shape=[block, block], paddings=[pad, pad])
    return relay.nn.batch_to_space_nd(_dw_conv(s2b, weight), block_shape=[block, block],
                                      crops=[crop, crop])


def _flat(data, weight, block):
    return _dw_conv(data, weight, padding=(block,) * 4, dilation=(block, block))


def _mod(body):
    return relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(body), body)))


def _compare(body, expected_body, changes=True):
    mod = _mod(body)
    out = relay.transform.FlattenAtrousConv()(mod)
    tvm.ir.assert_structural_equal(out["main"], _mod(expected_body)["main"])
    assert changes != tvm.ir.structural_equal(out["main"], mod["main"])
    check_numerics(mod, out, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("block", [2, 4])
def test_block_shape(block):
    data, w = relay.var("data", shape=X_SHAPE), _weight()
    _compare(_atrous(data, w, block), _flat(data, w, block))


def test_surrounding_ops_stay():
    data, w = relay.var("data", shape=X_SHAPE), _weight()
    before = relay.add(_atrous(relay.add(data, relay.const(1.0)), w, 2), relay.const(-1.0))
    after = relay.add(_flat(relay.add(data, relay.const(1.0)), w, 2), relay.const(-1.0))
    _compare(before, after)


def test_several_patterns_in_a_row():
    data, w = relay.var("data", shape=X_SHAPE), _weight()
    _compare(_atrous(_atrous(data, w, 2), w, 4), _flat(_flat(data, w, 2), w, 4))


def test_quantized_conv():
    qnn = pytest.importorskip("minitvm.relay.qnn.op", reason="relay.qnn is not available")
    data = relay.var("data", shape=X_SHAPE, dtype="int8")
    w = relay.const(RNG.integers(-128, 127, size=W_SHAPE).astype("int8"))

    def qconv(d, padding, dilation):
        return qnn.conv2d(d, w, relay.const(0), relay.const(0), relay.const(2.0),
                          relay.const(1.0), padding=padding, dilation=dilation, groups=4,
                          channels=4, kernel_size=(3, 3), data_layout="NHWC",
                          kernel_layout="HWOI")

    s2b = relay.nn.space_to_batch_nd(data, block_shape=[2, 2], paddings=[[2, 3], [2, 3]])
    before = relay.nn.batch_to_space_nd(qconv(s2b, (0, 0, 0, 0), (1, 1)), block_shape=[2, 2],
                                        crops=[[0, 1], [0, 1]])
    mod = _mod(before)
    out = relay.transform.FlattenAtrousConv()(mod)
    tvm.ir.assert_structural_equal(out["main"], _mod(qconv(data, (2, 2, 2, 2), (2, 2)))["main"])


def _s2b(data):
    return relay.nn.space_to_batch_nd(data, block_shape=[2, 2], paddings=[[2, 3], [2, 3]])


def _b2s(data):
    return relay.nn.batch_to_space_nd(data, block_shape=[2, 2], crops=[[0, 1], [0, 1]])


@pytest.mark.parametrize("case", ["s2b_conv", "s2b", "conv_b2s", "b2s", "op_between_s2b_conv",
                                  "op_between_conv_b2s"])
def test_partial_or_interrupted_patterns_are_left_alone(case):
    data, w = relay.var("data", shape=X_SHAPE), _weight()
    data4 = relay.var("data", shape=(4, 5, 5, 4))  # batch_to_space_nd needs a batch of 4
    one = relay.const(1.0)
    body = {
        "s2b_conv": lambda: _dw_conv(_s2b(data), w),
        "s2b": lambda: _s2b(data),
        "conv_b2s": lambda: _b2s(_dw_conv(data4, w)),
        "b2s": lambda: _b2s(data4),
        "op_between_s2b_conv": lambda: _b2s(_dw_conv(relay.add(_s2b(data), one), w)),
        "op_between_conv_b2s": lambda: _b2s(relay.add(_dw_conv(_s2b(data), w), one)),
    }[case]()
    mod = _mod(body)
    out = relay.transform.FlattenAtrousConv()(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_padding_that_is_not_same_is_left_alone():
    """TVM would flatten this too, with SAME padding: a different program. Left alone here."""
    data, w = relay.var("data", shape=(1, 6, 6, 4)), _weight()
    s2b = relay.nn.space_to_batch_nd(data, block_shape=[2, 2], paddings=[[0, 0], [0, 0]])
    body = relay.nn.batch_to_space_nd(_dw_conv(s2b, w), block_shape=[2, 2],
                                      crops=[[0, 0], [0, 0]])
    mod = _mod(body)
    tvm.ir.assert_structural_equal(relay.transform.FlattenAtrousConv()(mod)["main"], mod["main"])


def test_relay_build_pipeline_flattens():
    data, w = relay.var("data", shape=X_SHAPE), _weight()
    mod = _mod(_atrous(data, w, 2))
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(mod, target="llvm")
    names = []
    relay.analysis.post_order_visit(opt["main"], lambda e: names.append(e.op.name) if isinstance(
        e, relay.Call) and isinstance(e.op, tvm.ir.Op) else None)
    assert "nn.space_to_batch_nd" not in names and "nn.batch_to_space_nd" not in names


def test_long_chain_is_iterative():
    x = relay.var("x", shape=(1, 2))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    mod = _mod(e)
    out = relay.transform.FlattenAtrousConv()(mod)
    assert out["main"].body is not None
