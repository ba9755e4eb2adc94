"""ConvertLayout: layout-sensitive ops converted, agnostic ops follow, transforms only at edges."""

import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay


def convert(f, desired):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    with tvm.transform.PassContext(opt_level=3):
        out = run_pass(relay.transform.ConvertLayout(desired), mod)
    return mod, out


def test_nchw_to_nhwc_conv_relu():
    x = relay.var("x", shape=(1, 8, 10, 10))
    w = relay.var("w", shape=(16, 8, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, channels=16, kernel_size=(3, 3), padding=(1, 1)))
    mod, out = convert(relay.Function([x, w], y), {"nn.conv2d": ["NHWC", "default"]})

    xx = relay.var("x", shape=(1, 8, 10, 10))
    ww = relay.var("w", shape=(16, 8, 3, 3))
    a = relay.layout_transform(xx, "NCHW", "NHWC")
    b = relay.layout_transform(ww, "OIHW", "HWIO")
    c = relay.nn.conv2d(a, b, channels=16, kernel_size=(3, 3), padding=(1, 1),
                        data_layout="NHWC", kernel_layout="HWIO")
    expected = infer(relay.Function([xx, ww], relay.layout_transform(relay.nn.relu(c), "NHWC",
                                                                      "NCHW")))
    tvm.ir.assert_structural_equal(out["main"], expected)
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_broadcast_operand_of_lower_rank_is_transformed():
    x = relay.var("x", shape=(1, 8, 6, 6))
    w = relay.var("w", shape=(8, 8, 1, 1))
    bias = relay.const(np.arange(8, dtype="float32").reshape(8, 1, 1))
    y = relay.add(relay.nn.conv2d(x, w, kernel_size=(1, 1)), bias)
    mod, out = convert(relay.Function([x, w], y), {"nn.conv2d": ["NHWC", "default"]})
    text = str(out)
    assert text.count("layout_transform") == 4  # x, w, the bias, and the result back
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_nhwc_to_nchw_trailing_operands_are_expanded_before_the_transform():
    # a (C,) / (W, C) operand broadcast against NHWC sits on non-trailing axes in NCHW: it is
    # expanded to rank 4 and transformed (was a `layout_transform` from C to W: a type error)
    x = relay.var("x", shape=(1, 6, 6, 4))
    w = relay.var("w", shape=(3, 3, 4, 8))
    b = relay.var("b", shape=(8,))
    b2 = relay.var("b2", shape=(6, 8))
    y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.relu(relay.add(y, b)) * b2
    mod, out = convert(relay.Function([x, w, b, b2], y), {"nn.conv2d": ["NCHW", "default"]})
    text = str(out)
    assert "expand_dims(%b, axis=0, num_newaxis=3)" in text
    assert "expand_dims(%b2, axis=0, num_newaxis=2)" in text
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_bias_add_follows_with_its_axis_renamed():
    # bias_add broadcasts along its axis attr, not the trailing axes (was transformed C -> W);
    # it follows the conv to NCHW with axis 3 -> 1 (TVM gets there through CanonicalizeOps'
    # expand_dims + add), so the relu after it does too: one transform, at the end
    x = relay.var("x", shape=(1, 6, 6, 4))
    w = relay.var("w", shape=(3, 3, 4, 8))
    b = relay.var("b", shape=(8,))
    y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.relu(relay.nn.bias_add(y, b, axis=3))
    mod, out = convert(relay.Function([x, w, b], y), {"nn.conv2d": ["NCHW", "default"]})
    text = str(out)
    assert "nn.bias_add(%2, %b)" in text and "axis=3" not in text
    assert text.count("layout_transform(") == 3  # data, weight, and the relu's result
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_bias_add_keeps_its_layout_when_the_channels_split():
    # NCHW4c splits C: a 1-D bias along it no longer matches, so bias_add stays NHWC
    x = relay.var("x", shape=(1, 6, 6, 8))
    w = relay.var("w", shape=(3, 3, 8, 8))
    b = relay.var("b", shape=(8,))
    y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.bias_add(y, b, axis=3)
    mod, out = convert(relay.Function([x, w, b], y), {"nn.conv2d": ["NCHW4c", "OIHW4i4o"]})
    assert "axis=3" in str(out)
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_layout_sensitive_consumer_gets_original_layout():
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(x, w, padding=(1, 1))
    z = relay.sum(y, axis=[1])  # a reduction over C must see NCHW again
    mod, out = convert(relay.Function([x, w], z), {"nn.conv2d": ["NHWC", "default"]})
    assert "NHWC" in str(out)
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_unlisted_ops_are_untouched():
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    f = relay.Function([x, w], relay.nn.conv2d(x, w))
    mod, out = convert(f, {"nn.max_pool2d": ["NHWC"]})
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_deep_elementwise_chain_follows_layout():
    x = relay.var("x", shape=(1, 4, 4, 4))
    w = relay.var("w", shape=(4, 4, 1, 1))
    e = relay.nn.conv2d(x, w)
    for _ in range(100_000):
        e = relay.nn.relu(e)
    _, out = convert(relay.Function([x, w], e), {"nn.conv2d": ["NHWC", "default"]})
    assert str(out).count("layout_transform") == 3
