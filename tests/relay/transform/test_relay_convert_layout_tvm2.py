"""ConvertLayout builds TVM's programs, part 2: the remaining cases of TVM v0.19's own test of the
pass (dual path, transpose, resnet blocks, scalars, norms, deformable conv, strided_slice, pad,
split, squeeze, reductions on blocked layouts, resize, roi ops, qnn), restated with small
shapes. Each case checks the expected program (or TVM's own count/attribute check) and that the
interpreter gives the same results before and after.
"""

import numpy as np
from pass_test_util import check_numerics, random_inputs

import minitvm as tvm
from minitvm import relay
from minitvm.relay import analysis, transform

N, H, W = 1, 6, 6


def _opt(expr, passes):
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes if isinstance(passes, list) else [passes])(mod)
    return mod["main"]


def _convert(before, desired):
    return _opt(before, transform.ConvertLayout(desired))


def _check(before, expected, desired, numerics=True, tol=1e-4):
    got = _convert(before, desired)
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    if numerics:
        check_numerics(before, got, rtol=tol, atol=tol)
    return got


def _fn(y):
    return relay.Function(analysis.free_vars(y), y)


def _calls(expr, name):
    found = []
    relay.analysis.post_order_visit(
        expr, lambda e: found.append(e) if isinstance(e, relay.Call) and
        getattr(e.op, "name", None) == name else None)
    return found


def _nhwc_conv(x, w, ch, k=3, pad=1):
    return relay.nn.conv2d(x, w, channels=ch, kernel_size=(k, k), padding=(pad, pad),
                           data_layout="NHWC", kernel_layout="HWIO")


def _nchw_conv(x, w, ch, k=3, pad=1):
    return relay.nn.conv2d(x, w, channels=ch, kernel_size=(k, k), padding=(pad, pad))


NCHW = {"nn.conv2d": ["NCHW", "default"]}
NHWC = {"nn.conv2d": ["NHWC", "default"]}


def test_dual_path():
    def before():
        x = relay.var("x", shape=(N, H, W, 4))
        w1 = relay.var("weight1", shape=(3, 3, 4, 2))
        w2 = relay.var("weight2", shape=(3, 3, 2, 2))
        y = relay.nn.relu(_nhwc_conv(x, w1, 2))
        y1 = relay.nn.relu(_nhwc_conv(y, w2, 2))
        return _fn(relay.Tuple([y1, relay.nn.batch_flatten(y)]))

    def expected():
        x = relay.var("x", shape=(N, H, W, 4))
        w1 = relay.var("weight1", shape=(3, 3, 4, 2))
        w2 = relay.var("weight2", shape=(3, 3, 2, 2))
        w1 = relay.layout_transform(w1, "HWIO", "OIHW")
        w2 = relay.layout_transform(w2, "HWIO", "OIHW")
        y = relay.nn.relu(_nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"), w1, 2))
        y1 = relay.nn.relu(_nchw_conv(y, w2, 2))
        y1 = relay.layout_transform(y1, "NCHW", "NHWC")
        y2 = relay.nn.batch_flatten(relay.layout_transform(y, "NCHW", "NHWC"))
        return _fn(relay.Tuple([y1, y2]))

    _check(before(), expected(), NCHW)


def test_bn_has_one_transform_back():
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight1", shape=(3, 3, 4, 2))
    y = _nhwc_conv(x, w, 2)
    params = [relay.var(n, shape=(2,)) for n in ("gamma", "beta", "mean", "variance")]
    y = relay.nn.batch_norm(y, *params, axis=3)[0]
    got = _convert(_fn(y), NCHW)
    back = [c for c in _calls(got, "layout_transform")
            if (c.attrs.src_layout, c.attrs.dst_layout) == ("NCHW", "NHWC")]
    assert len(back) == 1


def _transposed(data_shape, w_shape, layout, z_shape, axes, desired):
    x = relay.var("x", shape=data_shape)
    w = relay.var("weight1", shape=w_shape)
    conv = _nhwc_conv(x, w, 2) if layout == "NHWC" else _nchw_conv(x, w, 2)
    out = relay.add(conv, relay.var("z", shape=z_shape))
    out = relay.transpose(out, axes=axes)
    if axes is not None:
        out = relay.nn.batch_flatten(out)
    before = _fn(out)
    got = _convert(before, desired)
    check_numerics(before, got, rtol=1e-4, atol=1e-4)
    return got


def test_transpose_follows_new_layout():
    got = _transposed((N, H, W, 4), (3, 3, 4, 2), "NHWC", (H, W, 2), [0, 3, 1, 2], NCHW)
    assert [tuple(t.attrs.axes) for t in _calls(got, "transpose")] == [(0, 1, 2, 3)]
    assert len(_calls(got, "layout_transform")) == 3
    got = _transposed((N, 4, H, W), (2, 4, 3, 3), "NCHW", (2, H, W), [0, 2, -1, 1], NHWC)
    assert [tuple(t.attrs.axes) for t in _calls(got, "transpose")] == [(0, 1, 2, 3)]
    assert len(_calls(got, "layout_transform")) == 3
    got = _transposed((N, 4, H, W), (2, 4, 3, 3), "NCHW", (2, H, W), None, NHWC)
    assert [tuple(t.attrs.axes) for t in _calls(got, "transpose")] == [(2, 1, 3, 0)]
    assert len(_calls(got, "layout_transform")) == 3


def _resnet(pool_layout=None):
    x = relay.var("x", shape=(N, H, W, 4))
    w1 = relay.var("weight1", shape=(3, 3, 4, 2))
    w2 = relay.var("weight2", shape=(1, 1, 4, 2))
    y = relay.nn.relu(_nhwc_conv(x, w1, 2))
    y2 = relay.nn.relu(_nhwc_conv(x, w2, 2, k=1, pad=0))
    return _fn(relay.nn.global_max_pool2d(y + y2, layout="NHWC"))


def _resnet_expected(specified):
    x = relay.var("x", shape=(N, H, W, 4))
    w1 = relay.layout_transform(relay.var("weight1", shape=(3, 3, 4, 2)), "HWIO", "OIHW")
    w2 = relay.layout_transform(relay.var("weight2", shape=(1, 1, 4, 2)), "HWIO", "OIHW")
    x = relay.layout_transform(x, "NHWC", "NCHW")
    y = relay.nn.relu(_nchw_conv(x, w1, 2))
    y2 = relay.nn.relu(_nchw_conv(x, w2, 2, k=1, pad=0))
    y = y + y2
    if specified:
        y = relay.layout_transform(y, "NCHW", "NHWC")
        y = relay.nn.global_max_pool2d(y, layout="NHWC", out_layout="NHWC")
    else:
        y = relay.layout_transform(relay.nn.global_max_pool2d(y), "NCHW", "NHWC")
    return _fn(y)


def test_resnet():
    _check(_resnet(), _resnet_expected(False), NCHW)


def test_resnet_pool_uses_specified_layout():
    _check(_resnet(), _resnet_expected(True),
           {"nn.conv2d": ["NCHW", "default"], "nn.global_max_pool2d": ["NHWC"]})


def test_scalar_operand_untouched():
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    before = _fn(relay.add(_nhwc_conv(x, w, 4), relay.const(1, "float32")))
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    y = _nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"),
                   relay.layout_transform(w, "HWIO", "OIHW"), 4)
    y = relay.layout_transform(relay.add(y, relay.const(1.0, "float32")), "NCHW", "NHWC")
    _check(before, _fn(y), NCHW)


def _norm_case(make):
    def build(converted):
        x = relay.var("x", shape=(N, H, W, 4))
        w = relay.var("weight", shape=(3, 3, 4, 4))
        params = [relay.var(n, relay.TensorType((4,), "float32")) for n in make.names]
        if converted:
            y = _nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"),
                           relay.layout_transform(w, "HWIO", "OIHW"), 4)
            return _fn(relay.layout_transform(make(y, params, 1), "NCHW", "NHWC"))
        return _fn(make(_nhwc_conv(x, w, 4), params, 3))

    before = build(False)
    got = _check(before, build(True), NCHW, numerics=False)
    # 1-D parameters made positive: a batch_norm variance must not be negative
    args = [np.abs(a) if a.ndim == 1 else a for a in random_inputs(tvm.IRModule.from_expr(before))]
    check_numerics(before, got, args=args, rtol=1e-4, atol=1e-4)


def test_layer_norm():
    def make(y, p, axis):
        return relay.nn.layer_norm(y, p[1], p[0], axis=axis)

    make.names = ("beta", "gamma")
    _norm_case(make)


def test_instance_norm():
    def make(y, p, axis):
        return relay.nn.instance_norm(y, p[1], p[0], axis=axis)

    make.names = ("beta", "gamma")
    _norm_case(make)


def test_batch_norm():
    def make(y, p, axis):
        return relay.nn.relu(relay.nn.batch_norm(y, p[1], p[0], p[2], p[3], axis=axis)[0])

    make.names = ("beta", "gamma", "moving_mean", "moving_var")
    _norm_case(make)


def _deformable(src, dst, pool_layout=None):
    """TVM's deformable conv + bias + relu + pool block, before (src) and converted (dst)."""
    ci, co, k = 3, 4, 3
    oh = ow = H - k + 1
    shapes = {"NCHW": ((N, ci, H, W), (N, k * k * 2, oh, ow), (co, ci, k, k), "OIHW"),
              "NHWC": ((N, H, W, ci), (N, oh, ow, k * k * 2), (k, k, ci, co), "HWIO")}

    def before():
        d_shape, o_shape, w_shape, klayout = shapes[src]
        data = relay.var("data", shape=d_shape)
        # TVM leaves offset untyped (its type relation infers it); ours needs the shape
        offset = relay.var("offset", shape=o_shape)
        weight = relay.var("weight", shape=w_shape)
        bias = relay.var("bias", shape=(co,))
        y = relay.nn.deformable_conv2d(data, offset, weight, kernel_size=(k, k), channels=co,
                                       data_layout=src, kernel_layout=klayout)
        y = relay.nn.bias_add(y, bias, axis=-1 if src == "NHWC" else 1)
        y = relay.nn.max_pool2d(relay.nn.relu(y), pool_size=(2, 2), layout=src)
        return _fn(relay.nn.batch_flatten(relay.cast(y, "int32")))

    def expected():
        d_shape, o_shape, w_shape, klayout = shapes[src]
        data = relay.layout_transform(relay.var("data", shape=d_shape), src, dst)
        offset = relay.layout_transform(relay.var("offset", shape=o_shape), src, dst)
        weight = relay.layout_transform(relay.var("weight", shape=w_shape), klayout,
                                        shapes[dst][3])
        bias = relay.var("bias", shape=(co,))
        y = relay.nn.deformable_conv2d(data, offset, weight, kernel_size=(k, k), channels=co,
                                       data_layout=dst, kernel_layout=shapes[dst][3])
        if src == "NHWC":
            bias = relay.expand_dims(bias, axis=0, num_newaxis=3)
        else:
            bias = relay.expand_dims(relay.expand_dims(bias, axis=1, num_newaxis=2), axis=0)
        y = relay.nn.relu(relay.add(y, relay.layout_transform(bias, src, dst)))
        if pool_layout is None:
            y = relay.cast(relay.nn.max_pool2d(y, pool_size=(2, 2), layout=dst), "int32")
            return _fn(relay.nn.batch_flatten(relay.layout_transform(y, dst, src)))
        if pool_layout != dst:
            y = relay.layout_transform(y, dst, pool_layout)
        y = relay.nn.max_pool2d(y, pool_size=(2, 2), layout=pool_layout, out_layout=pool_layout)
        return _fn(relay.nn.batch_flatten(relay.cast(y, "int32")))

    return before(), expected()


def test_deformable_conv_bias_pool():
    for src, dst in (("NHWC", "NCHW"), ("NCHW", "NHWC")):
        before, expected = _deformable(src, dst)
        _check(before, expected, {"nn.deformable_conv2d": [dst, "default"]}, tol=1)


def test_deformable_conv_bias_pool_uses_specified_pool_layout():
    for src, dst in (("NHWC", "NCHW"), ("NCHW", "NHWC")):
        before, expected = _deformable(src, dst, pool_layout=src)
        _check(before, expected,
               {"nn.deformable_conv2d": [dst, "default"], "nn.max_pool2d": [src]}, tol=1)


def _qconv(x, w, ch, **kw):
    return relay.qnn.op.conv2d(x, w, relay.const(1, "int32"), relay.const(1, "int32"),
                               relay.const(1, "float32"), relay.const(1, "float32"),
                               channels=ch, kernel_size=(3, 3), padding=(1, 1), **kw)


def _requantize(y, **kw):
    return relay.qnn.op.requantize(y, relay.const(1, "float32"), relay.const(1, "int32"),
                                   relay.const(1, "float32"), relay.const(1, "int32"),
                                   out_dtype="int32", **kw)


_Q_NHWC = {"data_layout": "NHWC", "kernel_layout": "HWIO"}
QNCHW = {"qnn.conv2d": ["NCHW", "default"]}


def test_qnn_conv_requantize():
    x = relay.var("x", shape=(N, H, W, 4), dtype="int8")
    w = relay.var("weight", shape=(3, 3, 4, 4), dtype="int8")
    before = relay.Function([x, w], relay.nn.relu(_requantize(_qconv(x, w, 4, **_Q_NHWC))))
    x = relay.var("x", shape=(N, H, W, 4), dtype="int8")
    w = relay.var("weight", shape=(3, 3, 4, 4), dtype="int8")
    y = _qconv(relay.layout_transform(x, "NHWC", "NCHW"),
               relay.layout_transform(w, "HWIO", "OIHW"), 4)
    y = relay.nn.relu(_requantize(y, axis=1))
    _check(before, _fn(relay.layout_transform(y, "NCHW", "NHWC")), QNCHW)


def _qnn_pair(combine, converted):
    x = relay.var("x", shape=(N, H, W, 4), dtype="int8")
    w1 = relay.var("weight1", shape=(3, 3, 4, 4), dtype="int8")
    w2 = relay.var("weight2", shape=(3, 3, 4, 4), dtype="int8")
    if converted:
        w1 = relay.layout_transform(w1, "HWIO", "OIHW")
        w2 = relay.layout_transform(w2, "HWIO", "OIHW")
        y = _qconv(relay.layout_transform(x, "NHWC", "NCHW"), w1, 4)
        _ = _qconv(y, w2, 4)
    else:
        y = _qconv(x, w1, 4, **_Q_NHWC)
        _ = _qconv(y, w2, 4, **_Q_NHWC)
    y = relay.cast(y, "int8")
    y1 = relay.cast(y, "int8")
    ret = combine(y, y1, 1 if converted else 3)
    if converted:
        ret = relay.layout_transform(ret, "NCHW", "NHWC")
    return _fn(ret)


def test_qnn_conv_concat():
    def combine(a, b, axis):
        one_f, one_i = relay.const(1, "float32"), relay.const(1, "int32")
        return relay.qnn.op.concatenate([a, b], [one_f, one_f], [one_i, one_i], one_f, one_i,
                                        axis=axis)

    _check(_qnn_pair(combine, False), _qnn_pair(combine, True), QNCHW)


def test_qnn_conv_add():
    def combine(a, b, axis):
        f, i = (lambda: relay.const(1, "float32")), (lambda: relay.const(1, "int32"))
        return relay.qnn.op.add(a, b, f(), i(), f(), i(), f(), i())

    _check(_qnn_pair(combine, False), _qnn_pair(combine, True), QNCHW)


def test_qnn_conv_nchw_to_nhwc():
    x = relay.var("x", shape=(N, 4, H, W), dtype="int8")
    w = relay.var("weight", shape=(4, 4, 3, 3), dtype="int8")
    before = relay.Function([x, w], relay.nn.relu(_qconv(x, w, 4)))
    x = relay.var("x", shape=(N, 4, H, W), dtype="int8")
    w = relay.var("weight", shape=(4, 4, 3, 3), dtype="int8")
    y = _qconv(relay.layout_transform(x, "NCHW", "NHWC"),
               relay.layout_transform(w, "OIHW", "HWIO"), 4, **_Q_NHWC)
    y = relay.layout_transform(relay.nn.relu(y), "NHWC", "NCHW")
    _check(before, _fn(y), {"qnn.conv2d": ["NHWC", "default"]})


def test_conv_kernel_layout_only():
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    before = _fn(_nhwc_conv(x, w, 4))
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.layout_transform(relay.var("weight", shape=(3, 3, 4, 4)), "HWIO", "OHWI")
    y = relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1),
                        data_layout="NHWC", kernel_layout="OHWI")
    _check(before, _fn(y), {"nn.conv2d": ["NHWC", "OHWI"]})


def test_conv_strided_slice():
    def build(converted):
        x = relay.var("x", shape=(N, 4, H, W))
        w = relay.var("weight", shape=(4, 4, 3, 3))
        if converted:
            y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                                relay.layout_transform(w, "OIHW", "HWIO"), channels=4,
                                kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC",
                                kernel_layout="HWIO")
            y = relay.strided_slice(relay.nn.relu(y), begin=[0, 0, 0, 1], end=[1, 4, W, -1],
                                    strides=[1, 2, 1, 1])
            y = relay.layout_transform(y, "NHWC", "NCHW")
        else:
            y = relay.nn.relu(_nchw_conv(x, w, 4))
            y = relay.strided_slice(y, begin=[0, 1], end=[1, -1, 4], strides=[1, 1, 2, 1])
        return relay.Function([x, w] if not converted else analysis.free_vars(y), y)

    _check(build(False), build(True), NHWC)


def _split_case(sections, axis, new_axis, n_out):
    def build(converted):
        x = relay.var("x", shape=(N, H, W, 8))
        w = relay.var("weight", shape=(3, 3, 8, 8))
        if converted:
            w = relay.layout_transform(w, "HWIO", "OIHW")
            y = relay.nn.conv2d(relay.layout_transform(x, "NHWC", "NCHW"), w, channels=8,
                                kernel_size=(3, 3))
        else:
            y = relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3), data_layout="NHWC",
                                kernel_layout="HWIO")
        y = relay.split(relay.nn.relu(y), indices_or_sections=sections,
                        axis=new_axis if converted else axis).astuple()
        items = [relay.TupleGetItem(y, i) for i in range(n_out)]
        if converted:
            items = [relay.layout_transform(i, "NCHW", "NHWC") for i in items]
        return _fn(relay.Tuple(items))

    _check(build(False), build(True), NCHW)


def test_split_sections_negative_axis():
    _split_case(2, -1, 1, 2)


def test_split_sections_positive_axis():
    _split_case(2, 3, 1, 2)


def test_split_indices():
    _split_case((2, 5), -1, 1, 3)


def test_split_on_blocked_layout_divides_indices():
    def build(converted):
        x = relay.var("x", shape=(N, 8, H, W))
        w = relay.var("weight", shape=(8, 8, 3, 3))
        if converted:
            y = relay.nn.contrib_conv2d_nchwc(
                relay.layout_transform(x, "NCHW", "NCHW4c"),
                relay.layout_transform(w, "OIHW", "OIHW4o"), channels=8, kernel_size=(3, 3),
                padding=(0, 0), data_layout="NCHW4c", kernel_layout="OIHW4o")
            y = relay.split(relay.nn.relu(y), indices_or_sections=[1], axis=1).astuple()
        else:
            y = relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3))
            y = relay.split(relay.nn.relu(y), indices_or_sections=[4], axis=1).astuple()
        items = [relay.TupleGetItem(y, i) for i in range(2)]
        if converted:
            items = [relay.layout_transform(i, "NCHW4c", "NCHW") for i in items]
        return _fn(relay.Tuple(items))

    _check(build(False), build(True), {"nn.conv2d": ["NCHW4c", "OIHW4o"]})


def test_strided_slice_with_axes():
    def build(converted):
        x = relay.var("x", shape=(N, H, W, 8))
        w = relay.var("weight", shape=(3, 3, 8, 8))
        if converted:
            y = _nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"),
                           relay.layout_transform(w, "HWIO", "OIHW"), 8)
        else:
            y = _nhwc_conv(x, w, 8)
        y = relay.strided_slice(y, begin=[0, 4], end=[1, 9], strides=[1, 1],
                                axes=[0, 1] if converted else [0, 3])
        if converted:
            y = relay.layout_transform(y, "NCHW", "NHWC")
        return _fn(y)

    _check(build(False), build(True), NCHW)


def test_topk():
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    before = _fn(relay.topk(_nhwc_conv(x, w, 4), k=2, axis=2).astuple())
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.layout_transform(relay.var("weight", shape=(3, 3, 4, 4)), "HWIO", "OIHW")
    y = relay.topk(_nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"), w, 4), k=2,
                   axis=3).astuple()
    out = relay.Tuple([relay.layout_transform(relay.TupleGetItem(y, i), "NCHW", "NHWC")
                       for i in range(2)])
    _check(before, _fn(out), NCHW)


def _roi_case(op):
    def build(converted):
        x = relay.var("x", shape=(N, 4, H, W))
        w = relay.var("weight1", shape=(4, 4, 3, 3))
        rois = relay.var("rois", shape=(3, 5))
        kw = {"sample_ratio": 2} if op is relay.vision.roi_align else {}
        if converted:
            y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                                relay.layout_transform(w, "OIHW", "HWIO"), channels=4,
                                kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC",
                                kernel_layout="HWIO")
            y = op(y, rois, pooled_size=(2, 2), spatial_scale=0.5, layout="NHWC", **kw)
            return _fn(relay.layout_transform(y, "NHWC", "NCHW"))
        y = _nchw_conv(x, w, 4)
        return _fn(op(y, rois, pooled_size=(2, 2), spatial_scale=0.5, layout="NCHW", **kw))

    name = "vision.roi_align" if op is relay.vision.roi_align else "vision.roi_pool"
    got = _check(build(False), build(True),
                 {"nn.conv2d": ["NHWC", "HWIO"], name: ["NHWC", "default"]}, numerics=False)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 4, H, W)).astype("float32")
    w = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    rois = np.array([[0, 0, 0, 4, 4], [0, 1, 1, 5, 5], [0, 0, 2, 3, 5]], "float32")
    check_numerics(build(False), got, args=[x, w, rois], rtol=1e-4, atol=1e-4)


def test_roi_align():
    _roi_case(relay.vision.roi_align)


def test_roi_pool():
    _roi_case(relay.vision.roi_pool)


def test_default_kernel_keyword():
    x = relay.var("x", shape=(N, 4, H, W))
    w = relay.var("weight", shape=(4, 3, 3, 4))
    before = _fn(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1),
                                 kernel_layout="OHWI"))
    x = relay.var("x", shape=(N, 4, H, W))
    w = relay.layout_transform(relay.var("weight", shape=(4, 3, 3, 4)), "OHWI", "OIHW")
    _check(before, _fn(_nchw_conv(x, w, 4)), NCHW)


def _conv1x1(converted, co=6):
    """TVM's (1, 1, 1, C) NHWC 1x1 conv + relu, before or converted to NCHW."""
    x = relay.var("x", shape=(1, 1, 1, 4))
    w = relay.var("weight", shape=(1, 1, 4, co))
    if converted:
        y = relay.nn.conv2d(relay.layout_transform(x, "NHWC", "NCHW"),
                            relay.layout_transform(w, "HWIO", "OIHW"), channels=co,
                            kernel_size=(1, 1))
    else:
        y = relay.nn.conv2d(x, w, channels=co, kernel_size=(1, 1), data_layout="NHWC",
                            kernel_layout="HWIO")
    return relay.nn.relu(y)


def test_squeeze_named_axis():
    before = _fn(relay.squeeze(_conv1x1(False), axis=[-3]))
    expected = _fn(relay.layout_transform(relay.squeeze(_conv1x1(True), axis=[2]), "NCW", "NWC"))
    _check(before, expected, NCHW)


def test_squeeze_all_unit_axes():
    before = _fn(relay.squeeze(_conv1x1(False)))
    _check(before, _fn(relay.squeeze(_conv1x1(True), [0, 2, 3])), NCHW)


def test_squeeze_no_axis():
    before = _fn(relay.squeeze(_conv1x1(False), axis=[]))
    expected = _fn(relay.layout_transform(relay.squeeze(_conv1x1(True), axis=[]), "NCHW",
                                          "NHWC"))
    _check(before, expected, NCHW)


def test_reduce_chain_to_scalar():
    def chain(y, first):
        y = relay.sum(y, axis=first)
        return relay.sum(relay.sum(relay.sum(y, axis=(1,))))

    _check(_fn(chain(_conv1x1(False), (1, 2))), _fn(chain(_conv1x1(True), (2, 3))), NCHW)


def test_reduce_keepdims_keeps_spans():
    def spanned(y, text):
        return relay.Call(y.op, y.args, y.attrs, y.type_args,
                          tvm.ir.Span(tvm.ir.SourceName(text), 0, 0, 0, 0))

    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    y = spanned(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), data_layout="NHWC",
                                kernel_layout="HWIO"), "SpanConv2D")
    y = spanned(relay.nn.relu(y), "SpanRelu")
    y = spanned(relay.multiply(y, y), "SpanMultiply")
    before = _fn(spanned(relay.sum(y, axis=(3,), keepdims=True), "SpanSum"))
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.layout_transform(relay.var("weight", shape=(3, 3, 4, 4)), "HWIO", "OIHW")
    y = relay.nn.relu(relay.nn.conv2d(relay.layout_transform(x, "NHWC", "NCHW"), w, channels=4,
                                      kernel_size=(3, 3)))
    y = relay.sum(relay.multiply(y, y), axis=(1,), keepdims=True)
    got = _check(before, _fn(relay.layout_transform(y, "NCHW", "NHWC")), NCHW)
    names = set()
    relay.analysis.post_order_visit(got, lambda e: names.add(e.span.source_name.name) if
                                    isinstance(e, relay.Call) and e.span is not None else None)
    assert {"SpanConv2D", "SpanRelu", "SpanMultiply", "SpanSum"} <= names


def test_reduce_ops_nchw_to_nhwc():
    for reduce_op in (relay.argmax, relay.mean, relay.max):
        x = relay.var("x", shape=(N, 4, H, W))
        w = relay.var("weight", shape=(4, 4, 3, 3))
        before = relay.Function([x, w], reduce_op(_nchw_conv(x, w, 4), axis=[2, 3]))
        x = relay.var("x", shape=(N, 4, H, W))
        w = relay.var("weight", shape=(4, 4, 3, 3))
        y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                            relay.layout_transform(w, "OIHW", "HWIO"), channels=4,
                            kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC",
                            kernel_layout="HWIO")
        _check(before, _fn(reduce_op(y, axis=[1, 2])), NHWC)


def test_image_resize2d_alone():
    for src, dst, shape in (("NCHW", "NHWC", (1, 2, 4, 4)), ("NHWC", "NCHW", (1, 4, 4, 2))):
        x = relay.var("x", shape=shape)
        before = relay.Function([x], relay.image.resize2d(x, (8, 8), layout=src))
        x = relay.var("x", shape=shape)
        y = relay.image.resize2d(relay.layout_transform(x, src, dst), (8, 8), layout=dst)
        _check(before, _fn(relay.layout_transform(y, dst, src)), {"image.resize2d": [dst]})


def test_conv_then_resize2d_follows():
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    before = _fn(relay.image.resize2d(_nhwc_conv(x, w, 4), (12, 12), layout="NHWC"))
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.layout_transform(relay.var("weight", shape=(3, 3, 4, 4)), "HWIO", "OIHW")
    y = _nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"), w, 4)
    y = relay.image.resize2d(y, (12, 12), layout="NCHW")
    _check(before, _fn(relay.layout_transform(y, "NCHW", "NHWC")), NCHW)


def test_python_infer_correct_layout_rule_is_used():
    from minitvm.relay.op import op as reg
    from minitvm.relay.op.layout import Layout
    from minitvm.relay.testing.temp_op_attr import TempOpAttr
    from minitvm.relay.transform.infer_layout_utils import InferCorrectLayoutOutput

    called = []

    def relu_rule(attrs, new_in_layouts, old_in_layouts, old_in_types):
        called.append(True)
        ret = Layout("")  # undefined, as tvm.tir.layout("")
        if new_in_layouts:
            ret = new_in_layouts[0]
        else:
            ret = next((lay for lay in old_in_layouts if lay), ret)
        return InferCorrectLayoutOutput([ret] * len(old_in_layouts), [ret], attrs)

    assert hasattr(reg, "register_infer_correct_layout")
    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    before = relay.Function([x, w], relay.nn.relu(_nhwc_conv(x, w, 4)))
    with TempOpAttr("nn.relu", "FInferCorrectLayout", relu_rule):
        got = _convert(before, NCHW)
    assert called
    assert len(_calls(got, "layout_transform")) == 3
    check_numerics(before, got, rtol=1e-4, atol=1e-4)


def test_max_pool_uses_specified_layout():
    x = relay.var("x", shape=(N, 4, H, W))
    w = relay.var("weight", shape=(4, 4, 3, 3))
    y = relay.nn.max_pool2d(relay.nn.relu(_nchw_conv(x, w, 4)), pool_size=(2, 2), layout="NCHW")
    before = _fn(relay.nn.batch_flatten(y))
    x = relay.var("x", shape=(N, 4, H, W))
    w = relay.var("weight", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                        relay.layout_transform(w, "OIHW", "OHWI"), channels=4, kernel_size=(3, 3),
                        padding=(1, 1), data_layout="NHWC", kernel_layout="OHWI")
    y = relay.nn.max_pool2d(relay.nn.relu(y), pool_size=(2, 2), layout="NHWC", out_layout="NHWC")
    y = relay.nn.batch_flatten(relay.layout_transform(y, "NHWC", "NCHW"))
    _check(before, _fn(y), {"nn.conv2d": ["NHWC", "OHWI"], "nn.max_pool2d": ["NHWC"]})


def test_l2_normalize_axes_renamed():
    for axis, new_axis in (([3], [1]), ([-1], [1]), ([2, 3], [3, 1])):
        x = relay.var("x", shape=(N, H, W, 4))
        w = relay.var("weight", shape=(3, 3, 4, 4))
        before = _fn(relay.nn.l2_normalize(_nhwc_conv(x, w, 4), eps=0.001, axis=axis))
        x = relay.var("x", shape=(N, H, W, 4))
        w = relay.layout_transform(relay.var("weight", shape=(3, 3, 4, 4)), "HWIO", "OIHW")
        y = _nchw_conv(relay.layout_transform(x, "NHWC", "NCHW"), w, 4)
        y = relay.nn.l2_normalize(y, eps=0.001, axis=new_axis)
        _check(before, _fn(relay.layout_transform(y, "NCHW", "NHWC")), NCHW)


def test_layout_config_skips_first_conv():
    def before():
        x = relay.var("x", shape=(N, H, W, 4))
        w = relay.var("weight", shape=(3, 3, 4, 4))
        w2 = relay.var("weight2", shape=(3, 3, 4, 4))
        y = relay.nn.relu(_nhwc_conv(x, w, 4))
        return relay.Function([x, w, w2], relay.nn.relu(_nhwc_conv(y, w2, 4)))

    x = relay.var("x", shape=(N, H, W, 4))
    w = relay.var("weight", shape=(3, 3, 4, 4))
    w2 = relay.layout_transform(relay.var("weight2", shape=(3, 3, 4, 4)), "HWIO", "HWOI")
    y = relay.layout_transform(relay.nn.relu(_nhwc_conv(x, w, 4)), "NHWC", "HWNC")
    y = relay.nn.conv2d(y, w2, channels=4, kernel_size=(3, 3), padding=(1, 1),
                        data_layout="HWNC", kernel_layout="HWOI")
    expected = _fn(relay.layout_transform(relay.nn.relu(y), "HWNC", "NHWC"))
    with relay.transform.LayoutConfig(skip_layers=[0]):
        got = _convert(before(), {"nn.conv2d": ["HWNC", "default"]})
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))


def test_no_desired_layout_for_roi_align():
    x = relay.var("x", shape=(N, 4, H, W))
    w = relay.var("weight1", shape=(4, 4, 3, 3))
    rois = relay.var("rois", shape=(3, 5))
    y = relay.vision.roi_align(_nchw_conv(x, w, 4), rois, pooled_size=(2, 2), spatial_scale=0.5,
                               sample_ratio=2, layout="NCHW")
    before = _fn(y)
    x = relay.var("x", shape=(N, 4, H, W))
    w = relay.var("weight1", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                        relay.layout_transform(w, "OIHW", "HWIO"), channels=4, kernel_size=(3, 3),
                        padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.vision.roi_align(relay.layout_transform(y, "NHWC", "NCHW"), rois,
                               pooled_size=(2, 2), spatial_scale=0.5, sample_ratio=2,
                               layout="NCHW")
    _check(before, _fn(y), {"nn.conv2d": ["NHWC", "HWIO"]}, numerics=False)


def test_different_ops_in_one_graph():
    def build(converted):
        x = relay.var("x", shape=(N, 4, H, W))
        w1 = relay.var("weight1", shape=(4, 3, 3, 4))
        w2 = relay.var("weight2", shape=(4, 3, 3, 4), dtype="int8")
        w3 = relay.var("weight3", shape=(4, 3, 3, 4))
        kw = {"channels": 4, "kernel_size": (3, 3), "padding": (1, 1)}
        if not converted:
            out = relay.nn.conv2d(x, w1, kernel_layout="OHWI", **kw)
            out = _qconv(relay.cast(out, "int8"), w2, 4, kernel_layout="OHWI")
            out = relay.nn.conv2d_transpose(relay.cast(out, "float32"), w3, kernel_layout="OHWI",
                                            **kw)
            return _fn(out)
        out = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NHWC"),
                              relay.layout_transform(w1, "OHWI", "HWIO"), data_layout="NHWC",
                              kernel_layout="HWIO", **kw)
        out = relay.layout_transform(relay.cast(out, "int8"), "NHWC", "NCHW")
        out = _qconv(out, relay.layout_transform(w2, "OHWI", "OIHW"), 4)
        out = relay.layout_transform(relay.cast(out, "float32"), "NCHW", "NHWC")
        out = relay.nn.conv2d_transpose(out, relay.layout_transform(w3, "OHWI", "HWIO"),
                                        data_layout="NHWC", kernel_layout="HWIO", **kw)
        return _fn(relay.layout_transform(out, "NHWC", "NCHW"))

    _check(build(False), build(True),
           {"nn.conv2d": ["NHWC", "HWIO"], "qnn.conv2d": ["NCHW", "OIHW"],
            "nn.conv2d_transpose": ["NHWC", "HWIO"]}, numerics=False)


def test_resnet_block_to_nchw4c():
    x = relay.var("x", shape=(1, 3, 16, 16))
    w1 = relay.var("weight1", shape=(8, 3, 3, 3))
    w2 = relay.var("weight2", shape=(8, 8, 3, 3))
    w3 = relay.var("weight3", shape=(8, 8, 1, 1))

    def before():
        y = relay.nn.conv2d(x, w1, strides=(2, 2), padding=(1, 1), channels=8, kernel_size=(3, 3))
        y = relay.nn.max_pool2d(relay.nn.relu(y), pool_size=(3, 3), strides=(2, 2),
                                padding=(1, 1))
        y1 = relay.nn.relu(relay.nn.conv2d(y, w2, channels=8, kernel_size=(3, 3), padding=(1, 1)))
        y2 = relay.nn.relu(relay.nn.conv2d(y, w3, channels=8, kernel_size=(1, 1)))
        return relay.Function([x, w1, w2, w3],
                              relay.nn.global_max_pool2d(y1 + y2, layout="NCHW"))

    def expected():
        y = relay.nn.conv2d(x, w1, strides=(2, 2), padding=(1, 1), channels=8, kernel_size=(3, 3))
        y = relay.nn.max_pool2d(relay.nn.relu(y), pool_size=(3, 3), strides=(2, 2),
                                padding=(1, 1))
        y = relay.layout_transform(y, "NCHW", "NCHW4c")
        y1 = relay.nn.contrib_conv2d_nchwc(y, relay.layout_transform(w2, "OIHW", "OIHW4i4o"),
                                           channels=8, kernel_size=(3, 3), padding=(1, 1),
                                           data_layout="NCHW4c", kernel_layout="OIHW4i4o")
        y2 = relay.nn.contrib_conv2d_nchwc(y, relay.layout_transform(w3, "OIHW", "OIHW4i4o"),
                                           channels=8, kernel_size=(1, 1),
                                           data_layout="NCHW4c", kernel_layout="OIHW4i4o")
        y = relay.nn.relu(y1) + relay.nn.relu(y2)
        y = relay.nn.global_max_pool2d(y, layout="NCHW4c")
        return relay.Function([x, w1, w2, w3], relay.layout_transform(y, "NCHW4c", "NCHW"))

    _check(before(), expected(), {"nn.conv2d": ["NCHW4c", "OIHW4i4o"]})


def test_slice_like_axes_follow():
    def after(layout, axes, other=None):
        shape = (N, H, W, 4) if layout == "NHWC" else (N, 4, H, W)
        x = relay.var("x", shape=shape)
        conv = _nhwc_conv if layout == "NHWC" else _nchw_conv
        w = relay.var("weight1", shape=(3, 3, 4, 2) if layout == "NHWC" else (2, 4, 3, 3))
        y = conv(x, w, 2)
        z = relay.var("z", shape=other) if other else y
        before = _fn(relay.slice_like(y, z, axes=axes))
        got = _convert(before, NCHW if layout == "NHWC" else NHWC)
        check_numerics(before, got, rtol=1e-4, atol=1e-4)
        return [tuple(c.attrs.axes) for c in _calls(got, "slice_like")]

    assert after("NHWC", [1, 2]) == [(2, 3)]
    assert after("NCHW", [2, 3]) == [(1, 2)]
    # an operand without a known layout: the slice stays in the old layout
    assert after("NHWC", [1, 2], other=(N, H, W, 2)) == [(1, 2)]


def test_qnn_conv_transpose_requantize():
    def build(converted):
        x = relay.var("x", shape=(N, H, W, 4), dtype="int8")
        w = relay.var("weight", shape=(3, 3, 4, 4), dtype="int8")
        kw = {} if converted else {"data_layout": "NHWC", "kernel_layout": "HWIO"}
        if converted:
            x = relay.layout_transform(x, "NHWC", "NCHW")
            w = relay.layout_transform(w, "HWIO", "IOHW")
        y = relay.qnn.op.conv2d_transpose(
            x, w, relay.const(1, "int32"), relay.const(1, "int32"), relay.const(1, "float32"),
            relay.const(1, "float32"), channels=4, kernel_size=(3, 3), padding=(1, 1),
            out_dtype="int32", **kw)
        y = relay.nn.relu(_requantize(y, **({"axis": 1} if converted else {})))
        if converted:
            y = relay.layout_transform(y, "NCHW", "NHWC")
        return _fn(y)

    _check(build(False), build(True), {"qnn.conv2d_transpose": ["NCHW", "default"]})
