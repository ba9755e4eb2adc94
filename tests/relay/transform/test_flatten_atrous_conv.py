"""FlattenAtrousConv: TensorFlow's space-to-batch dilated conv becomes one dilated conv2d."""

import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay


def _atrous(x, w, block, pads, crops):
    s2b = relay.nn.space_to_batch_nd(x, block, pads)
    conv = relay.nn.conv2d(s2b, w, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWIO")
    return relay.nn.batch_to_space_nd(conv, block, crops)


@pytest.mark.parametrize("pads,crops", [([[2, 2], [2, 2]], [[0, 0], [0, 0]]),
                                        ([[2, 4], [2, 4]], [[0, 2], [0, 2]])])
def test_flatten_to_dilated_conv(pads, crops):
    x = relay.var("x", shape=(1, 8, 8, 3))
    w = relay.const(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype("float32"))
    f = relay.Function([x], _atrous(x, w, [2, 2], pads, crops))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = run_pass(relay.transform.FlattenAtrousConv(), mod)
    xx = relay.var("x", shape=(1, 8, 8, 3))
    top, left = pads[0][0] - crops[0][0], pads[1][0] - crops[1][0]
    bottom, right = pads[0][1] - crops[0][1], pads[1][1] - crops[1][1]
    expected = relay.Function([xx], relay.nn.conv2d(
        xx, w, dilation=(2, 2), padding=(top, left, bottom, right), kernel_size=(3, 3),
        data_layout="NHWC", kernel_layout="HWIO"))
    tvm.ir.assert_structural_equal(out["main"], infer(expected))
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_other_patterns_untouched():
    x = relay.var("x", shape=(1, 8, 8, 3))
    f = relay.Function([x], relay.nn.batch_to_space_nd(
        relay.nn.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]), [2, 2], [[0, 0], [0, 0]]))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.FlattenAtrousConv()(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
    check_numerics(mod, out)


def test_conv_without_kernel_size_is_left_alone_as_in_tvm():
    x = relay.var("x", shape=(1, 8, 8, 3))
    w = relay.const(np.ones((3, 3, 3, 4), "float32"))
    s2b = relay.nn.space_to_batch_nd(x, [2, 2], [[2, 2], [2, 2]])
    y = relay.nn.batch_to_space_nd(relay.nn.conv2d(s2b, w, data_layout="NHWC",
                                                   kernel_layout="HWIO"), [2, 2], [[0, 0], [0, 0]])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    out = relay.transform.FlattenAtrousConv()(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
