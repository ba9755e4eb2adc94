"""ConvertLayout builds TVM's programs: cases of TVM v0.19's own test of the pass, restated with
small shapes.

The converted op gets ``layout_transform`` on its inputs; elementwise ops follow the new layout;
a broadcast bias is expanded and transformed; a pool without an explicit ``out_layout`` and a
``concatenate`` of same-layout inputs follow their inputs (the pool's ``layout`` and the
concatenation axis are rewritten); rank-changing ops get the original layout back.
"""

from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import analysis, transform

N, H, W, C = 1, 6, 6, 4


def _opt(expr, passes):
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes if isinstance(passes, list) else [passes])(mod)
    return mod["main"]


def _check(before, expected, desired, numerics=True):
    got = _opt(before, transform.ConvertLayout(desired))
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    if numerics:
        check_numerics(before, got, rtol=1e-4, atol=1e-4)
    return got


def _conv(x, w, **kw):
    return relay.nn.conv2d(x, w, channels=C, kernel_size=(3, 3), padding=(1, 1), **kw)


def _nhwc_vars(*extra):
    x = relay.var("x", shape=(N, H, W, C))
    w = relay.var("weight", shape=(3, 3, C, C))
    return [x, w] + [relay.var(n, shape=s) for n, s in extra]


def test_no_convert_layout():
    x = relay.var("x", shape=(N, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    before = relay.Function([x, w], relay.nn.relu(_conv(x, w)))
    _check(before, before, {"nn.conv2d": ["NCHW", "default"]})


def test_qnn_binary_without_desired_layouts_is_unchanged():
    x = relay.var("x", shape=(2, 2), dtype="uint8")
    y = relay.var("y", shape=(1, 2), dtype="uint8")
    before = relay.Function([x, y], relay.qnn.op.add(
        x, y, lhs_scale=relay.const(0.0156863, "float32"),
        lhs_zero_point=relay.const(127, "int32"), rhs_scale=relay.const(0.0117647, "float32"),
        rhs_zero_point=relay.const(85, "int32"), output_scale=relay.const(0.0235294, "float32"),
        output_zero_point=relay.const(128, "int32")))
    _check(before, before, {})


def test_conv_nhwc_to_nchw():
    x, w = _nhwc_vars()
    before = relay.Function([x, w], relay.nn.relu(
        _conv(x, w, data_layout="NHWC", kernel_layout="HWIO")))
    x, w = _nhwc_vars()
    y = _conv(relay.layout_transform(x, "NHWC", "NCHW"),
              relay.layout_transform(w, "HWIO", "OIHW"))
    y = relay.layout_transform(relay.nn.relu(y), "NCHW", "NHWC")
    _check(before, relay.Function(analysis.free_vars(y), y), {"nn.conv2d": ["NCHW", "default"]})


def test_conv_nchw_to_nhwc():
    x = relay.var("x", shape=(N, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    before = relay.Function([x, w], relay.nn.relu(_conv(x, w)))
    x = relay.var("x", shape=(N, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = _conv(relay.layout_transform(x, "NCHW", "NHWC"), relay.layout_transform(w, "OIHW", "HWIO"),
              data_layout="NHWC", kernel_layout="HWIO")
    y = relay.layout_transform(relay.nn.relu(y), "NHWC", "NCHW")
    _check(before, relay.Function(analysis.free_vars(y), y), {"nn.conv2d": ["NHWC", "default"]})


def test_conv_transpose_nhwc_to_nchw():
    x, w = _nhwc_vars()

    def convt(x, w, **kw):
        return relay.nn.conv2d_transpose(x, w, channels=C, kernel_size=(3, 3), padding=(1, 1),
                                         **kw)

    before = relay.Function([x, w], relay.nn.relu(
        convt(x, w, data_layout="NHWC", kernel_layout="HWIO")))
    x, w = _nhwc_vars()
    y = convt(relay.layout_transform(x, "NHWC", "NCHW"), relay.layout_transform(w, "HWIO", "IOHW"))
    y = relay.layout_transform(relay.nn.relu(y), "NCHW", "NHWC")
    _check(before, relay.Function(analysis.free_vars(y), y),
           {"nn.conv2d_transpose": ["NCHW", "IOHW"]})


def _bias_pool_before():
    x, w, bias = _nhwc_vars(("bias", (C,)))
    y = relay.nn.bias_add(_conv(x, w, data_layout="NHWC", kernel_layout="HWIO"), bias, axis=3)
    y = relay.nn.relu(relay.Tuple([y])[0])  # a useless tuple, eliminated on the way
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), layout="NHWC")
    y = relay.nn.batch_flatten(relay.cast(y, "int32"))
    return relay.Function(analysis.free_vars(y), y)


def _bias_pool_converted_prefix():
    x, w, bias = _nhwc_vars(("bias", (C,)))
    y = _conv(relay.layout_transform(x, "NHWC", "NCHW"),
              relay.layout_transform(w, "HWIO", "OIHW"))
    bias = relay.layout_transform(relay.expand_dims(bias, axis=0, num_newaxis=3), "NHWC", "NCHW")
    return relay.nn.relu(relay.Tuple([relay.add(y, bias)])[0])


def test_conv_bias_pool_follows_the_new_layout():
    y = relay.nn.max_pool2d(_bias_pool_converted_prefix(), pool_size=(2, 2))
    y = relay.layout_transform(relay.cast(y, "int32"), "NCHW", "NHWC")
    y = relay.nn.batch_flatten(y)
    _check(_bias_pool_before(), relay.Function(analysis.free_vars(y), y),
           {"nn.conv2d": ["NCHW", "default"]}, numerics=False)


def test_conv_bias_pool_uses_the_specified_pool_layout():
    y = relay.layout_transform(_bias_pool_converted_prefix(), "NCHW", "NHWC")
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), layout="NHWC", out_layout="NHWC")
    y = relay.nn.batch_flatten(relay.cast(y, "int32"))
    _check(_bias_pool_before(), relay.Function(analysis.free_vars(y), y),
           {"nn.conv2d": ["NCHW", "OIHW"], "nn.max_pool2d": ["NHWC"]}, numerics=False)


def test_bias_pool_numerics():
    before = _bias_pool_before()
    for desired in ({"nn.conv2d": ["NCHW", "default"]},
                    {"nn.conv2d": ["NCHW", "OIHW"], "nn.max_pool2d": ["NHWC"]}):
        got = _opt(before, transform.ConvertLayout(desired))
        # the cast to int32 truncates: a last-bit float difference may move a value by one
        check_numerics(before, got, rtol=0, atol=1)


def test_conv_concat_follows_the_new_layout():
    x = relay.var("x", shape=(N, H, W, C))
    w1 = relay.var("weight1", shape=(3, 3, C, C))
    w2 = relay.var("weight2", shape=(3, 3, C, C))
    y = _conv(x, w1, data_layout="NHWC", kernel_layout="HWIO")
    y1 = _conv(y, w2, data_layout="NHWC", kernel_layout="HWIO")
    ret = relay.concatenate([y, y1], axis=3)
    before = relay.Function(analysis.free_vars(ret), ret)

    x = relay.var("x", shape=(N, H, W, C))
    w1 = relay.var("weight1", shape=(3, 3, C, C))
    w2 = relay.var("weight2", shape=(3, 3, C, C))
    w1t = relay.layout_transform(w1, "HWIO", "OIHW")
    w2t = relay.layout_transform(w2, "HWIO", "OIHW")
    y = _conv(relay.layout_transform(x, "NHWC", "NCHW"), w1t)
    y1 = _conv(y, w2t)
    ret = relay.layout_transform(relay.concatenate([y, y1], axis=1), "NCHW", "NHWC")
    _check(before, relay.Function(analysis.free_vars(ret), ret),
           {"nn.conv2d": ["NCHW", "default"]})


def test_concat_with_an_unconverted_input_goes_back():
    # one field comes from a converted conv, the other is a parameter: TVM keeps the old layout
    x, w = _nhwc_vars()
    z = relay.var("z", shape=(N, H, W, C))
    ret = relay.concatenate([_conv(x, w, data_layout="NHWC", kernel_layout="HWIO"), z], axis=3)
    before = relay.Function([x, w, z], ret)
    got = _opt(before, transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]}))
    assert got.body.attrs.axis == 3
    check_numerics(before, got, rtol=1e-4, atol=1e-4)


def test_conv_reduce_follows_the_new_layout():
    # reductions rename their axes through the old layout and stay in the new one (TVM's
    # ReduceInferCorrectLayout); a kept-dims result goes back to the old layout at the output
    x, w = _nhwc_vars()
    y = _conv(x, w, data_layout="NHWC", kernel_layout="HWIO")
    out = relay.Tuple([relay.mean(y, axis=[1, 2], keepdims=True),
                       relay.sum(relay.nn.relu(y), axis=[1, 2]),
                       relay.argmax(y, axis=3),
                       relay.max(y, axis=[3], exclude=True)])
    before = relay.Function([x, w], out)

    x, w = _nhwc_vars()
    y = _conv(relay.layout_transform(x, "NHWC", "NCHW"), relay.layout_transform(w, "HWIO", "OIHW"))
    out = relay.Tuple([relay.layout_transform(relay.mean(y, axis=[2, 3], keepdims=True),
                                              "NCHW", "NHWC"),
                       relay.sum(relay.nn.relu(y), axis=[2, 3]),
                       relay.argmax(y, axis=[1]),
                       relay.max(y, axis=[1], exclude=True)])
    _check(before, relay.Function([x, w], out), {"nn.conv2d": ["NCHW", "default"]})
