"""AlterOpLayout builds TVM's programs: cases of TVM v0.19's own test of the pass restated with
small shapes. Each test registers its alter hook for the duration of the test with
``TempOpAttr`` (as TVM's tests do), checks the expected program and runs the program before and
after on random inputs."""

from pass_test_util import check_numerics
from pass_test_util import fn_of as _fn
from pass_test_util import opt_main as _opt

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.testing.temp_op_attr import TempOpAttr

C, H, W = 32, 6, 6


def _check(before, expected, hook, canonicalize=False, op="nn.conv2d", numerics=True):
    passes = [transform.CanonicalizeOps(), transform.AlterOpLayout()] if canonicalize else \
        [transform.AlterOpLayout()]
    with TempOpAttr(op, "FTVMAlterOpLayout", hook):
        got = _opt(before, passes)
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    if numerics:
        check_numerics(before, got, rtol=1e-4, atol=1e-4)
    return got


def _to_nchw16c(attrs, inputs, tinfos, out_type):
    data, weight = inputs
    new_attrs = dict(attrs)
    new_attrs["data_layout"] = "NCHW16c"
    return relay.nn.conv2d(data, weight, **new_attrs)


def _conv(x, w, ch=C, k=3, pad=1, **kw):
    return relay.nn.conv2d(x, w, channels=ch, kernel_size=(k, k), padding=(pad, pad), **kw)


def test_alter_op_replaces_the_call():
    def alter(attrs, inputs, tinfos, out_type):
        data, weight = inputs
        return relay.nn.conv2d(data, relay.multiply(weight, relay.const(2.0, "float32")),
                               **attrs)

    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    before = relay.Function([x, w], relay.nn.relu(_conv(x, w)))
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = relay.nn.relu(_conv(x, relay.multiply(w, relay.const(2.0, "float32"))))
    got = _check(before, relay.Function([x, w], y), alter, numerics=False)
    # the hook doubles the weight on purpose: the result is twice the original
    args = check_numerics(got, relay.Function([x, w], relay.multiply(
        relay.nn.relu(_conv(x, w)), relay.const(2.0, "float32"))), rtol=1e-4, atol=1e-4)
    assert len(args) == 2


def test_alter_returning_none_changes_nothing():
    called = []

    def alter(attrs, inputs, tinfos, out_type):
        called.append(True)

    x = relay.var("x", shape=(1, C, H, W))
    before = relay.Function([x], relay.nn.global_max_pool2d(x))
    _check(before, before, alter, op="nn.global_max_pool2d")
    assert called


def test_alter_layout_bias_pool_chain():
    def alter(attrs, inputs, tinfos, out_type):
        data, weight = inputs
        new_attrs = dict(attrs)
        new_attrs["data_layout"] = "NCHW16c"
        new_attrs["kernel_layout"] = "OIHW16i"
        return relay.nn.conv2d(data, weight, **new_attrs)

    x = relay.var("x", shape=(1, C, H, W))
    bias = relay.var("bias", shape=(C,))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = relay.nn.bias_add(_conv(x, w), bias)
    y = relay.nn.relu(relay.Tuple([y])[0])
    y = relay.cast(relay.nn.max_pool2d(y, pool_size=(2, 2)), "int32")
    before = _fn(relay.nn.batch_flatten(y))

    x = relay.var("x", shape=(1, C, H, W))
    bias = relay.var("bias", shape=(C,))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = _conv(relay.layout_transform(x, "NCHW", "NCHW16c"),
              relay.layout_transform(w, "OIHW", "OIHW16i"), kernel_layout="OIHW16i",
              data_layout="NCHW16c")
    b = relay.expand_dims(relay.expand_dims(bias, axis=1, num_newaxis=2), axis=0, num_newaxis=1)
    y = relay.add(y, relay.layout_transform(b, "NCHW", "NCHW16c"))
    y = relay.nn.relu(relay.Tuple([y])[0])
    y = relay.cast(relay.nn.max_pool2d(y, pool_size=(2, 2), layout="NCHW16c"), "int32")
    y = relay.nn.batch_flatten(relay.layout_transform(y, "NCHW16c", "NCHW"))
    got = _check(before, _fn(y), alter, canonicalize=True, numerics=False)
    check_numerics(before, got, rtol=0, atol=1)  # the int32 cast may move a value by one


def test_dual_path_falls_back_on_one_branch():
    def build(altered):
        x = relay.var("x", shape=(1, C, H, W))
        w1 = relay.var("weight1", shape=(16, C, 3, 3))
        w2 = relay.var("weight2", shape=(16, 16, 3, 3))
        kw = {"data_layout": "NCHW16c"} if altered else {}
        y = relay.layout_transform(x, "NCHW", "NCHW16c") if altered else x
        y = relay.nn.relu(_conv(y, w1, ch=16, **kw))
        y1 = relay.nn.relu(_conv(y, w2, ch=16, **kw))
        if altered:
            y1 = relay.layout_transform(y1, "NCHW16c", "NCHW")
            y = relay.layout_transform(y, "NCHW16c", "NCHW")
        return _fn(relay.Tuple([y1, relay.nn.batch_flatten(y)]))

    _check(build(False), build(True), _to_nchw16c)


def test_resnet_block_shares_the_input_transform():
    def build(altered):
        x = relay.var("x", shape=(1, C, H, W))
        w1 = relay.var("weight1", shape=(16, C, 3, 3))
        w2 = relay.var("weight2", shape=(16, C, 1, 1))
        kw = {"data_layout": "NCHW16c"} if altered else {}
        if altered:
            x = relay.layout_transform(x, "NCHW", "NCHW16c")
        y = relay.nn.relu(_conv(x, w1, ch=16, **kw))
        y2 = relay.nn.relu(_conv(x, w2, ch=16, k=1, pad=0, **kw))
        y = relay.nn.global_max_pool2d(y + y2, **({"layout": "NCHW16c"} if altered else {}))
        if altered:
            y = relay.layout_transform(y, "NCHW16c", "NCHW")
        return _fn(y)

    _check(build(False), build(True), _to_nchw16c)


def test_broadcast_operands_are_expanded_and_transformed():
    x = relay.var("x", shape=(1, C, H, W))
    bias = relay.var("bias", shape=(C,))
    scale = relay.var("scale", shape=(C, 1, 1))
    w = relay.var("weight", shape=(C, C, 3, 3))
    before = _fn(relay.multiply(scale, relay.nn.bias_add(_conv(x, w), bias)))
    x = relay.var("x", shape=(1, C, H, W))
    bias = relay.var("bias", shape=(C,))
    scale = relay.var("scale", shape=(C, 1, 1))
    w = relay.var("weight", shape=(C, C, 3, 3))
    x = relay.layout_transform(x, "NCHW", "NCHW16c")
    bias = relay.layout_transform(relay.expand_dims(relay.expand_dims(bias, 1, 2), 0, 1), "NCHW",
                                  "NCHW16c")
    scale = relay.layout_transform(relay.expand_dims(scale, 0, 1), "NCHW", "NCHW16c")
    y = relay.add(_conv(x, w, data_layout="NCHW16c"), bias)
    y = relay.layout_transform(relay.multiply(scale, y), "NCHW16c", "NCHW")
    _check(before, _fn(y), _to_nchw16c, canonicalize=True)


def test_broadcast_scalar_operands_untouched():
    def build(altered):
        x = relay.var("x", shape=(1, H, W, C))
        kernel = relay.var("kernel", shape=(3, 3, C, C))
        bias = relay.var("bias", shape=(C,))
        m1 = relay.var("multiplier1", shape=(1,))
        m2 = relay.var("multiplier2", shape=(1, 1))
        if altered:
            b = relay.layout_transform(relay.expand_dims(bias, axis=0, num_newaxis=3), "NHWC",
                                       "NCHW16c")
            y = relay.nn.conv2d(relay.layout_transform(x, "NHWC", "NCHW16c"), kernel,
                                data_layout="NCHW16c", kernel_layout="HWIO",
                                kernel_size=(3, 3))
            y = relay.nn.relu(relay.add(b, y))
        else:
            y = relay.nn.conv2d(x, kernel, data_layout="NHWC", kernel_layout="HWIO",
                                kernel_size=(3, 3))
            y = relay.nn.relu(relay.add(bias, y))
        y = relay.multiply(relay.multiply(m1, y), m2)
        if altered:
            y = relay.layout_transform(y, "NCHW16c", "NHWC")
        return _fn(y)

    _check(build(False), build(True), _to_nchw16c, canonicalize=True)


def test_scalar_constant_untouched():
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    before = _fn(relay.add(_conv(x, w), relay.const(1, "float32")))
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = _conv(relay.layout_transform(x, "NCHW", "NCHW16c"), w, data_layout="NCHW16c")
    y = relay.add(y, relay.const(1.0, "float32"))
    _check(before, _fn(relay.layout_transform(y, "NCHW16c", "NCHW")), _to_nchw16c)


def _two_convs(layout, altered):
    """TVM's conv -> conv -> concatenate case in NCHW or NHWC, before or altered."""
    shape = (1, C, H, W) if layout == "NCHW" else (1, H, W, C)
    x = relay.var("x", shape=shape)
    w1 = relay.var("weight1", shape=(16, C, 3, 3))
    w2 = relay.var("weight2", shape=(16, 16, 3, 3))
    kw = {"data_layout": "NCHW16c" if altered else layout}
    if layout == "NHWC":
        w1 = relay.var("weight1", shape=(3, 3, C, 16))
        w2 = relay.var("weight2", shape=(3, 3, 16, 16))
        kw["kernel_layout"] = "HWIO"
    y = relay.layout_transform(x, layout, "NCHW16c") if altered else x
    y = _conv(y, w1, ch=16, **kw)
    y1 = _conv(y, w2, ch=16, **kw)
    ret = relay.concatenate([y, y1], axis=1 if altered or layout == "NCHW" else 3)
    if altered:
        ret = relay.layout_transform(ret, "NCHW16c", layout)
    return _fn(ret)


def test_concatenate_nchw():
    _check(_two_convs("NCHW", False), _two_convs("NCHW", True), _to_nchw16c)


def test_concatenate_nhwc():
    _check(_two_convs("NHWC", False), _two_convs("NHWC", True), _to_nchw16c)


def test_upsampling_and_pool_follow_blocked_layout():
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = relay.nn.upsampling(_conv(x, w), scale_h=2, scale_w=2)
    before = _fn(relay.nn.avg_pool2d(y, pool_size=(2, 2), strides=(2, 2)))
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    y = _conv(relay.layout_transform(x, "NCHW", "NCHW16c"), w, data_layout="NCHW16c")
    y = relay.nn.upsampling(y, scale_h=2, scale_w=2, layout="NCHW16c")
    y = relay.nn.avg_pool2d(y, pool_size=(2, 2), strides=(2, 2), layout="NCHW16c")
    _check(before, _fn(relay.layout_transform(y, "NCHW16c", "NCHW")), _to_nchw16c)


def _pad_case(layout, widths, new_widths):
    shape = (1, C, H, W) if layout == "NCHW" else (1, H, W, C)
    wshape = (16, C, 3, 3) if layout == "NCHW" else (3, 3, C, 16)
    kw = {} if layout == "NCHW" else {"kernel_layout": "HWIO"}

    def build(altered):
        x = relay.var("x", shape=shape)
        w = relay.var("weight1", shape=wshape)
        if not altered:
            return _fn(relay.nn.pad(_conv(x, w, ch=16, data_layout=layout, **kw),
                                    pad_width=widths))
        y = _conv(relay.layout_transform(x, layout, "NCHW16c"), w, ch=16,
                  data_layout="NCHW16c", **kw)
        if new_widths is None:  # padding along the split axis: back to the old layout first
            return _fn(relay.nn.pad(relay.layout_transform(y, "NCHW16c", layout),
                                    pad_width=widths))
        ret = relay.nn.pad(y, pad_width=new_widths)
        return _fn(relay.layout_transform(ret, "NCHW16c", layout))

    _check(build(False), build(True), _to_nchw16c)


def test_pad_nchw():
    _pad_case("NCHW", ((0, 0), (0, 0), (1, 1), (1, 1)),
              ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)))


def test_pad_nhwc():
    _pad_case("NHWC", ((0, 0), (1, 1), (1, 1), (0, 0)),
              ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)))


def test_pad_along_split_axis_stays_in_old_layout():
    _pad_case("NCHW", ((0, 0), (1, 1), (1, 1), (1, 1)), None)


def test_prelu_gets_the_old_layout_back():
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    alpha = relay.var("alpha", shape=(C,))
    before = _fn(relay.nn.prelu(_conv(x, w), alpha))
    x = relay.var("x", shape=(1, C, H, W))
    w = relay.var("weight", shape=(C, C, 3, 3))
    alpha = relay.var("alpha", shape=(C,))
    y = _conv(relay.layout_transform(x, "NCHW", "NCHW16c"), w, data_layout="NCHW16c")
    y = relay.nn.prelu(relay.layout_transform(y, "NCHW16c", "NCHW"), alpha)
    _check(before, _fn(y), _to_nchw16c, canonicalize=True)


def test_sum_over_blocked_channel_reduces_both_parts():
    """TVM's ReduceInferCorrectLayout on NCHW16c: summing C sums C and 16c (keepdims: 1c)."""
    for keep in (False, True):
        x = relay.var("x", shape=(1, C, H, W))
        w = relay.var("weight", shape=(C, C, 3, 3))
        before = _fn(relay.sum(_conv(x, w), axis=[1], keepdims=keep))
        x = relay.var("x", shape=(1, C, H, W))
        w = relay.var("weight", shape=(C, C, 3, 3))
        y = _conv(relay.layout_transform(x, "NCHW", "NCHW16c"), w, data_layout="NCHW16c")
        y = relay.sum(y, axis=[1, 4], keepdims=keep)
        if keep:
            y = relay.layout_transform(y, "NCHW1c", "NCHW")
        _check(before, _fn(y), _to_nchw16c)
