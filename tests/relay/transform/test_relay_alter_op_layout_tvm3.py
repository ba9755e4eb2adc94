"""AlterOpLayout builds TVM's programs: the cases of TVM v0.19's test of the pass not restated in
test_relay_alter_op_layout_tvm.py / _x86.py (pool, strided_slice, global functions, blocked
broadcasts, re-blocking, packed-to-unpacked, non-adaptable broadcasts, sub-functions, ...),
restated with small shapes. Each registers its hook with ``TempOpAttr`` as TVM's tests do,
checks TVM's expected program and runs the program before and after on random inputs."""

import numpy as np
import pytest
from pass_test_util import check_numerics
from pass_test_util import conv2d_layout_hook as _hook
from pass_test_util import fn_of as _fn
from pass_test_util import opt_main as _opt

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def _check(before, expected, hook, passes=None, numerics=True):
    passes = passes or [transform.AlterOpLayout()]
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", hook):
        got = _opt(before, passes)
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    if numerics:
        check_numerics(before, got, rtol=1e-4, atol=1e-4)
    return got


def _conv(x, w, **kw):
    return relay.nn.conv2d(x, w, **kw)


# ------------------------------------------------------------------ pools and slices
def test_pool_follows_the_blocked_layout_nchw_and_nhwc():
    """TVM's test_alter_layout_pool: avg_pool2d takes NCHW16c after the conv, from NCHW and
    from NHWC inputs, and one transform back closes the graph."""
    for layout, shape, back in (("NCHW", (1, 32, 6, 6), "NCHW"), ("NHWC", (1, 6, 6, 32), "NHWC")):
        x = relay.var("x", shape=shape)
        w = relay.var("weight1", shape=(32, 32, 3, 3) if layout == "NCHW" else (3, 3, 32, 32))
        kl = "OIHW" if layout == "NCHW" else "HWIO"
        y = _conv(
            x,
            w,
            channels=32,
            kernel_size=(3, 3),
            padding=(1, 1),
            data_layout=layout,
            kernel_layout=kl,
        )
        before = _fn(relay.nn.avg_pool2d(y, pool_size=(1, 1), layout=layout))
        x = relay.var("x", shape=shape)
        w = relay.var("weight1", shape=w.type_annotation.shape)
        y = _conv(
            relay.layout_transform(x, layout, "NCHW16c"),
            w,
            channels=32,
            kernel_size=(3, 3),
            padding=(1, 1),
            data_layout="NCHW16c",
            kernel_layout=kl,
        )
        y = relay.nn.avg_pool2d(y, pool_size=(1, 1), layout="NCHW16c")
        _check(before, _fn(relay.layout_transform(y, "NCHW16c", back)), _hook("NCHW16c"))


def test_strided_slice_along_blocked_channels_nhwc_axes():
    """TVM's test_alter_layout_strided_slice_axes_nhwc: slicing channels 16..32 of NHWC with
    axes=[0, 3] becomes blocks 4..8 of NHWC4c."""
    x = relay.var("x", shape=(1, 6, 6, 32))
    w = relay.var("weight", shape=(3, 3, 32, 32))
    kw = dict(channels=32, kernel_size=(3, 3), padding=(1, 1), kernel_layout="HWIO")
    y = _conv(x, w, data_layout="NHWC", **kw)
    before = _fn(relay.strided_slice(y, begin=[0, 16], end=[1, 32], strides=[1, 1], axes=[0, 3]))
    x = relay.var("x", shape=(1, 6, 6, 32))
    w = relay.var("weight", shape=(3, 3, 32, 32))
    y = _conv(relay.layout_transform(x, "NHWC", "NHWC4c"), w, data_layout="NHWC4c", **kw)
    y = relay.strided_slice(y, begin=[0, 4], end=[1, 8], strides=[1, 1], axes=[0, 3])
    _check(before, _fn(relay.layout_transform(y, "NHWC4c", "NHWC")), _hook("NHWC4c"))


def test_strided_slice_on_nchw4c_computes_the_original_slice():
    """TVM's test_alter_layout_strided_slice compares TVM's blocked program (contrib_conv2d_NCHWc
    on NCHW4c/OIHW4i4o, the slice on blocks 4..21) with the original numerically, on the graph,
    debug and vm executors; so do we, and the pass's own result computes the same."""
    x = relay.var("x", shape=(1, 32, 6, 6))
    w = relay.var("weight", shape=(32, 32, 3, 3))
    y = _conv(x, w, channels=32, kernel_size=(3, 3), padding=(1, 1))
    before = _fn(relay.strided_slice(y, begin=[0, 16], end=[1, 33], strides=[1, 1]))
    x = relay.var("x", shape=(1, 32, 6, 6))
    w = relay.var("weight", shape=(32, 32, 3, 3))
    y = relay.nn.contrib_conv2d_nchwc(
        relay.layout_transform(x, "NCHW", "NCHW4c"),
        relay.layout_transform(w, "OIHW", "OIHW4i4o"),
        channels=32,
        kernel_size=(3, 3),
        padding=(1, 1),
        data_layout="NCHW4c",
    )
    y = relay.strided_slice(y, begin=[0, 4], end=[1, 21], strides=[1, 1])
    blocked = _fn(relay.layout_transform(y, "NCHW4c", "NCHW"))
    rng = np.random.default_rng(0)
    args = [
        rng.uniform(size=(1, 32, 6, 6)).astype("float32"),
        rng.uniform(size=(32, 32, 3, 3)).astype("float32"),
    ]
    mods = [tvm.IRModule.from_expr(f) for f in (before, blocked)]
    with tvm.transform.PassContext(opt_level=3):
        for kind in ("graph", "debug", "vm"):
            outs = [
                relay.create_executor(kind, mod=m, target="llvm").evaluate()(*args).numpy()
                for m in mods
            ]
            np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", _hook("NCHW4c")):
        got = _opt(before, transform.AlterOpLayout())
    check_numerics(before, got, args=args, rtol=1e-5, atol=1e-5)


def test_strided_slice_from_packed_to_unpacked_is_not_propagated():
    """TVM's test_conv2d_strided_slice_packed_to_unpacked: a NCHW4c conv altered to NCHW gets
    its inputs unpacked and its output packed again before the (strided) slice."""
    x_shape, w_shape = (1, 1, 1, 1, 4), (9, 1, 3, 3, 4, 4)
    x = relay.var("x", shape=x_shape)
    w = relay.var("weight", shape=w_shape)
    kw = dict(kernel_size=(3, 3), padding=(1, 1))
    y = _conv(x, w, data_layout="NCHW4c", kernel_layout="OIHW4i4o", **kw)
    before = relay.Function(
        [x, w], relay.strided_slice(y, begin=[0, 0], end=[1, -1], strides=[1, 8])
    )
    x = relay.var("x", shape=x_shape)
    w = relay.var("weight", shape=w_shape)
    y = _conv(
        relay.layout_transform(x, "NCHW4c", "NCHW"),
        relay.layout_transform(w, "OIHW4i4o", "OIHW"),
        data_layout="NCHW",
        kernel_layout="OIHW",
        **kw,
    )
    y = relay.layout_transform(y, "NCHW", "NCHW4c")
    expected = relay.Function(
        [x, w], relay.strided_slice(y, begin=[0, 0], end=[1, -1], strides=[1, 8])
    )
    _check(before, expected, _hook("NCHW", "OIHW"))


def test_strided_slice_with_an_arbitrary_stride_runs():
    """TVM's test_conv2d_strided_slice_arbitrary_stride only runs the pass (channels 3..6 by 3
    under NCHW3c); we also check the numbers."""
    x = relay.var("x", shape=(4, 12, 1, 1))
    w = relay.var("weight", shape=(9, 12, 1, 1))
    y = _conv(x, w, channels=9, kernel_size=(1, 1), padding=(0, 0))
    before = _fn(relay.strided_slice(y, begin=[3], end=[6], strides=[3], axes=[1]))
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", _hook("NCHW3c")):
        got = _opt(before, transform.AlterOpLayout())
    check_numerics(before, got, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ global functions, purity
def test_alter_op_inside_a_global_function():
    """TVM's test_alter_op_with_global_var: the hook rewrites the conv inside @foo; @main's
    call of @foo stays."""

    def alter(attrs, inputs, tinfos, out_type):
        data, weight = inputs
        return relay.nn.conv2d(data, relay.multiply(weight, relay.const(2.0, "float32")), **attrs)

    def module(double):
        x = relay.var("x", shape=(1, 8, 5, 5))
        w = relay.var("weight", shape=(8, 8, 3, 3))
        ww = relay.multiply(w, relay.const(2.0, "float32")) if double else w
        y = relay.nn.relu(_conv(x, ww, channels=8, kernel_size=(3, 3), padding=(1, 1)))
        mod = tvm.IRModule()
        foo = relay.GlobalVar("foo")
        mod[foo] = relay.Function([x, w], y)
        mod = transform.InferType()(mod)
        mod["main"] = relay.Function([x, w], foo(x, w))
        return transform.InferType()(mod)

    before = module(False)
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", alter):
        got = transform.AlterOpLayout()(before)
    tvm.ir.assert_structural_equal(got, module(True), map_free_vars=True)
    args = check_numerics(got, module(True))
    out = [relay.create_executor("debug", mod=m).evaluate()(*args).numpy() for m in (before, got)]
    np.testing.assert_allclose(out[1], 2 * out[0], rtol=1e-4, atol=1e-4)


def test_the_input_function_is_not_modified():
    """TVM's test_not_inplace_modify: the pool of the input keeps layout NCHW."""
    x = relay.var("x", shape=(1, 16, 6, 6))
    w = relay.var("weight", shape=(16, 16, 3, 3))
    y = relay.nn.relu(_conv(x, w, channels=16, kernel_size=(3, 3), padding=(1, 1)))
    y = relay.nn.max_pool2d(y, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0])
    before = relay.Function([x, w], y)
    digest = tvm.ir.structural_hash(before)
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", _hook("NCHW16c", "OIHW16i")):
        got = _opt(before, [transform.AlterOpLayout()])
    assert before.body.attrs.layout == "NCHW" and tvm.ir.structural_hash(before) == digest
    assert got.body.op.name == "layout_transform" and got.body.args[0].attrs.layout == "NCHW16c"
    check_numerics(before, got, rtol=1e-4, atol=1e-4)


def test_sub_functions_are_left_alone():
    """TVM's test_alter_with_subfunc: resize2d inside a local function and after it; nothing
    registered, nothing changes."""
    v1 = relay.var("v", shape=[1, 4, 5, 5], dtype="float32")
    sub = relay.Function(
        [v1], relay.image.resize2d(v1, size=[8, 8], roi=[0.0, 0.0, 0.0, 0.0], rounding_method="")
    )
    x1 = relay.var("x", shape=[1, 4, 5, 5], dtype="float32")
    x3 = relay.image.resize2d(sub(x1), size=[4, 4], roi=[0.0, 0.0, 0.0, 0.0], rounding_method="")
    mod = transform.InferType()(tvm.IRModule.from_expr(relay.Function([x1], x3)))
    tvm.ir.assert_structural_equal(transform.AlterOpLayout()(mod), mod)


# ------------------------------------------------------------------ broadcasts on blocked layouts
def _blocked_conv(a, b, data_layout="NCHW4c", kernel_layout="OIHW4i4o"):
    return _conv(
        a,
        b,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        padding=[3, 3, 0, 0],
        strides=[2, 2],
        out_dtype="float32",
        channels=4,
        kernel_size=(4, 4),
    )


# the test's AlterOpLayout hook blocks the conv (NCHW4c) after Legalize relaid it out to NCHW
_BLOCKED_CONV = pytest.mark.numpy_fallback("nn.conv2d: a blocked conv2d has no native compute")

def _blocked(bias_shape):
    a = relay.var("data", shape=(1, 8, 16, 16, 4))
    b = relay.var("weight", shape=(1, 8, 4, 4, 4, 4))
    c = relay.var("bias", shape=bias_shape)
    return a, b, c


@_BLOCKED_CONV
def test_blocked_conv_with_a_blocked_or_broadcast_bias_is_unchanged():
    """TVM's test_alter_layout_blocked_no_broadcast / _blocked_broadcast: the hook keeps the
    conv's NCHW4c/OIHW4i4o, so nothing changes, with a (.., 4) or a (1, 1, 1, 1, 1) bias; the
    graph executor at opt level 4 agrees with the debug interpreter."""
    for bias_shape in ((1, 1, 1, 1, 4), (1, 1, 1, 1, 1)):
        a, b, c = _blocked(bias_shape)
        before = _fn(relay.add(_blocked_conv(a, b), c))
        _check(before, before, _hook("NCHW4c", "OIHW4i4o"))
        _graph_matches_debug(before, _hook("NCHW4c", "OIHW4i4o"))


def _graph_matches_debug(func, hook):
    mod = tvm.IRModule.from_expr(func)
    from pass_test_util import random_inputs

    args = random_inputs(mod)
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", hook):
        with tvm.transform.PassContext(opt_level=4):
            res = relay.create_executor("graph", mod, target="llvm").evaluate()(*args)
    with tvm.transform.PassContext(opt_level=0):
        ref = relay.create_executor("debug", mod, target="llvm").evaluate()(*args)
    np.testing.assert_allclose(res.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


@_BLOCKED_CONV
def test_re_blocking_transforms_the_bias_too():
    """TVM's test_alter_layout_re_blocking_broadcast: NCHW4c re-blocked to NCHW2c; data, weight
    and the blocked bias are transformed, the result goes back to NCHW4c."""
    a, b, c = _blocked((1, 1, 1, 1, 4))
    hook = _hook("NCHW2c", "OIHW2i2o")
    before = _fn(relay.add(_blocked_conv(a, b), c))
    a, b, c = _blocked((1, 1, 1, 1, 4))
    y = _blocked_conv(
        relay.layout_transform(a, "NCHW4c", "NCHW2c"),
        relay.layout_transform(b, "OIHW4i4o", "OIHW2i2o"),
        "NCHW2c",
        "OIHW2i2o",
    )
    y = relay.add(y, relay.layout_transform(c, "NCHW4c", "NCHW2c"))
    _check(before, _fn(relay.layout_transform(y, "NCHW2c", "NCHW4c")), hook)
    _graph_matches_debug(before, hook)


@_BLOCKED_CONV
def test_nonscalar_broadcast_operand_is_expanded_and_blocked():
    """TVM's test_alter_layout_nonscalar_broadcast: a (1, 3, 3) addend is expanded to 4-D and
    transformed to NCHW1c."""
    hook = _hook("NCHW4c", "OIHW4i4o")
    x = relay.var("x", shape=(1, 16, 3, 3))
    w = relay.var("weight", shape=(16, 16, 1, 1))
    z = relay.var("z", shape=(1, 3, 3))
    kw = dict(channels=16, kernel_size=(1, 1), padding=(0, 0))
    before = _fn(_conv(x, w, data_layout="NCHW", **kw) + z)
    x = relay.var("x", shape=(1, 16, 3, 3))
    w = relay.var("weight", shape=(16, 16, 1, 1))
    z = relay.var("z", shape=(1, 3, 3))
    y = _conv(
        relay.layout_transform(x, "NCHW", "NCHW4c"),
        relay.layout_transform(w, "OIHW", "OIHW4i4o"),
        data_layout="NCHW4c",
        kernel_layout="OIHW4i4o",
        **kw,
    )
    y = y + relay.layout_transform(relay.expand_dims(z, 0), "NCHW", "NCHW1c")
    _check(before, _fn(relay.layout_transform(y, "NCHW4c", "NCHW")), hook)
    _graph_matches_debug(before, hook)


def test_broadcast_that_cannot_adapt_gets_the_old_layout():
    """TVM's test_broadcast_non_adaptable: NCHW4c conv altered to NCHW; its (3, 3, 4) addend
    cannot follow, so the conv's output is packed back to NCHW4c first."""
    hook = _hook("NCHW", "OIHW")
    x = relay.var("x", shape=(1, 4, 3, 3, 4))
    w = relay.var("weight", shape=(4, 4, 1, 1, 4, 4))
    z = relay.var("z", shape=(3, 3, 4))
    kw = dict(channels=16, kernel_size=(1, 1), padding=(0, 0))
    before = _fn(_conv(x, w, data_layout="NCHW4c", kernel_layout="OIHW4i4o", **kw) + z)
    x = relay.var("x", shape=(1, 4, 3, 3, 4))
    w = relay.var("weight", shape=(4, 4, 1, 1, 4, 4))
    z = relay.var("z", shape=(3, 3, 4))
    y = _conv(
        relay.layout_transform(x, "NCHW4c", "NCHW"),
        relay.layout_transform(w, "OIHW4i4o", "OIHW"),
        data_layout="NCHW",
        kernel_layout="OIHW",
        **kw,
    )
    y = relay.layout_transform(y, "NCHW", "NCHW4c") + z
    _check(before, _fn(y), hook)
    _graph_matches_debug(before, hook)


@_BLOCKED_CONV
def test_broadcast_respects_its_inputs_layouts():
    """TVM's test_broadcast_respect_input_layouts: min over H and over W, then added; the
    blocked program at opt level 4 agrees with the interpreter."""
    x = relay.var("x", shape=(1, 16, 1, 1))
    w = relay.var("w", shape=(16, 16, 1, 1))
    y = _conv(x, w, kernel_size=(1, 1), padding=(0, 0), channels=16)
    before = _fn(relay.min(y, axis=[2]) + relay.min(y, axis=[3]))
    _graph_matches_debug(before, _hook("NCHW4c", "OIHW4i4o"))


def test_builds_where_an_axis_changes_meaning():
    """TVM's test_axis_semantic_change and test_conv2d_reduce_channels build at opt level 3:
    a transpose between two convs; an argmin over the channels of a strided conv."""
    rng = np.random.default_rng(1)
    x = relay.var("x", shape=(1, 1, 6, 8))
    w1 = relay.const(rng.uniform(size=(1, 1, 1, 1)).astype("float32"))
    w2 = relay.const(rng.uniform(size=(1, 1, 1, 1)).astype("float32"))
    y = relay.transpose(_conv(x, w1, kernel_size=(1, 1), padding=(0, 0), channels=1), (0, 1, 3, 2))
    z = _conv(y, w2, kernel_size=(1, 1), padding=(0, 0), channels=1)
    data = relay.var("data", shape=(1, 8, 48, 48))
    weight = relay.var("weight", shape=(8, 8, 1, 1))
    c = relay.argmin(
        _conv(data, weight, kernel_size=(1, 1), channels=8, dilation=1, strides=(47, 47)), axis=1
    )
    for func in (relay.Function([x], z), relay.Function([data, weight], c)):
        mod = tvm.IRModule.from_expr(func)
        from pass_test_util import random_inputs

        args = random_inputs(mod)
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm")
        from minitvm.contrib import graph_executor

        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        for i, a in enumerate(args):
            m.set_input(i, a)
        m.run()
        ref = relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()
        np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_reduce_after_resize_builds():
    """TVM's test_alter_with_reduce: resize2d, mean over the batch, resize1d at opt level 4."""
    x = relay.var("x", shape=(1, 1, 1, 1))
    a = relay.image.resize1d(relay.mean(relay.image.resize2d(x, (2, 4)), axis=0), (1,))
    mod = transform.InferType()(tvm.IRModule.from_expr(relay.Function((x,), a)))
    with tvm.transform.PassContext(opt_level=4):
        relay.build(mod, target="llvm")


# ------------------------------------------------------------------ pipelines and more ops
def test_scalar_regression_through_convert_layout_and_batch_norm():
    """TVM's test_alter_layout_scalar_regression: NHWC conv converted to NCHW, batch_norm
    (kept NHWC) simplified, then the conv blocked to NCHW16c; mean/variance reduce the blocked
    channels ([1, 4], exclude) and the per-channel factors go through C16c."""
    x = relay.var("x", shape=(1, 6, 6, 64))
    weight = relay.var("weight", shape=(3, 3, 64, 16))
    bias = relay.var("bias", shape=(1, 1, 1, 16))
    y = relay.add(
        _conv(
            x,
            weight,
            channels=16,
            kernel_size=(3, 3),
            padding=(1, 1),
            data_layout="NHWC",
            kernel_layout="HWIO",
        ),
        bias,
    )
    mean = relay.mean(y, axis=3, exclude=True)
    var = relay.variance(y, axis=3, exclude=True)
    y = relay.nn.batch_norm(y, relay.var("gamma"), relay.var("beta"), mean, var, axis=3)[0]
    before = _fn(y)

    x = relay.var("x", shape=(1, 6, 6, 64))
    weight = relay.var("weight", shape=(3, 3, 64, 16))
    bias = relay.var("bias", shape=(1, 1, 1, 16))
    gamma, beta = relay.var("gamma", shape=(16,)), relay.var("beta", shape=(16,))

    def lt(e, src, dst):
        return relay.layout_transform(e, src_layout=src, dst_layout=dst)

    def to_nchw16c(e):
        return lt(
            relay.expand_dims(relay.expand_dims(lt(e, "C16c", "C"), axis=1, num_newaxis=2), axis=0),
            "NCHW",
            "NCHW16c",
        )

    y = _conv(
        lt(lt(x, "NHWC", "NCHW"), "NCHW", "NCHW16c"),
        lt(weight, "HWIO", "OIHW"),
        channels=16,
        kernel_size=(3, 3),
        padding=(1, 1),
        data_layout="NCHW16c",
    )
    add = relay.add(y, lt(lt(bias, "NHWC", "NCHW"), "NCHW", "NCHW16c"))
    mean = relay.mean(add, axis=[1, 4], exclude=True)
    var = relay.variance(add, axis=[1, 4], exclude=True)
    denom = relay.const(1.0) / relay.sqrt(var + relay.const(1e-05))
    denom_c16c = denom * lt(gamma, "C", "C16c")
    out = add * to_nchw16c(denom_c16c)
    out = out + to_nchw16c((-mean) * denom_c16c + lt(beta, "C", "C16c"))
    expected = _fn(lt(lt(out, "NCHW16c", "NCHW"), "NCHW", "NHWC"))
    passes = [
        transform.InferType(),
        transform.ConvertLayout(
            {"nn.conv2d": ["NCHW", "default"], "nn.batch_norm": ["NHWC", "default"]}
        ),
        transform.SimplifyInference(),
        transform.CanonicalizeOps(),
        transform.AlterOpLayout(),
    ]
    _check(before, expected, _hook("NCHW16c"), passes=passes)


def test_upsampling_with_constant_scales_follows_the_blocked_layout():
    """TVM's test_alter_layout_nchw_dyn_upsamping_op: constant scales make a static upsampling
    (as TVM's builder does), which takes NCHW16c; the expected program's weight is untyped and
    typed from channels/kernel_size through the blocked data layout, as TVM's relation does."""
    x = relay.var("x", shape=(1, 32, 6, 6))
    w = relay.var("weight", shape=(32, 32, 3, 3))
    y = _conv(x, w, channels=32, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.upsampling(y, scale_h=relay.const(2), scale_w=relay.const(2))
    before = _fn(relay.nn.avg_pool2d(y, pool_size=(2, 2), strides=(2, 2)))
    x = relay.var("x", shape=(1, 32, 6, 6))
    y = _conv(
        relay.layout_transform(x, "NCHW", "NCHW16c"),
        relay.var("weight"),
        channels=32,
        kernel_size=(3, 3),
        padding=(1, 1),
        data_layout="NCHW16c",
    )
    y = relay.nn.upsampling(y, scale_h=relay.const(2), scale_w=relay.const(2), layout="NCHW16c")
    y = relay.nn.avg_pool2d(y, pool_size=(2, 2), strides=(2, 2), layout="NCHW16c")
    _check(before, _fn(relay.layout_transform(y, "NCHW16c", "NCHW")), _hook("NCHW16c"))


def test_untyped_weight_of_a_blocked_conv_is_typed_from_its_attributes():
    for layout, shape, kernel_layout, wshape in (
        ("NCHW16c", (1, 2, 6, 6, 16), "OIHW", (32, 32, 3, 3)),
        ("NHWC", (1, 6, 6, 32), "HWIO", (3, 3, 32, 8)),
        ("NCHW4c", (1, 8, 6, 6, 4), "OIHW4i4o", (2, 8, 3, 3, 4, 4)),
    ):
        x = relay.var("x", shape=shape)
        w = relay.var("weight")
        ch = 8 if layout == "NHWC" else 32 if kernel_layout == "OIHW" else 8
        y = _conv(
            x,
            w,
            channels=ch,
            kernel_size=(3, 3),
            padding=(1, 1),
            data_layout=layout,
            kernel_layout=kernel_layout,
        )
        mod = transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
        got = mod["main"].params[1].checked_type
        assert tuple(int(d) for d in got.shape) == wshape, (layout, got)


# ------------------------------------------------------------------ x86 int8 (VNNI) dense
VNNI = "llvm -mcpu=cascadelake"


def test_vnni_dense_packs_its_weight_nc16n4c():
    """Under a VNNI CPU TVM's x86 rule turns a uint8 x int8 dense whose (N, K) divide by
    (16, 4) into contrib_dense_pack with an NC16n4c weight; the program computes the same
    integers and builds."""
    x = relay.var("x", shape=(4, 64), dtype="uint8")
    w = relay.var("w", shape=(32, 64), dtype="int8")
    before = relay.Function([x, w], relay.nn.dense(x, w, out_dtype="int32"))
    x = relay.var("x", shape=(4, 64), dtype="uint8")
    w = relay.var("w", shape=(32, 64), dtype="int8")
    expected = relay.Function(
        [x, w],
        relay.nn.contrib_dense_pack(
            x, relay.layout_transform(w, "NC", "NC16n4c"), "NC16n4c", None, "int32"
        ),
    )
    with tvm.target.Target(VNNI):
        got = _opt(before, transform.AlterOpLayout())
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (4, 64)).astype("uint8")
    b = rng.integers(-128, 128, (32, 64)).astype("int8")
    args = check_numerics(before, got, args=[a, b], rtol=0, atol=0)
    ref = a.astype("int32") @ b.astype("int32").T
    out = relay.create_executor("debug", mod=tvm.IRModule.from_expr(got)).evaluate()(*args)
    np.testing.assert_array_equal(out.numpy(), ref)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(got), target="llvm")
    from minitvm.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input(0, a)
    m.set_input(1, b)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), ref)


def test_vnni_dense_with_indivisible_shapes_packs_like_float():
    """N = 24 does not divide by 16: TVM's VNNI layout does not apply and the generic dense
    packing (NC{n}n) does."""
    x = relay.var("x", shape=(4, 64), dtype="uint8")
    w = relay.var("w", shape=(24, 64), dtype="int8")
    before = relay.Function([x, w], relay.nn.dense(x, w, out_dtype="int32"))
    with tvm.target.Target(VNNI):
        got = _opt(before, transform.AlterOpLayout())
    assert got.body.attrs.weight_layout != "NC16n4c"
    assert got.body.attrs.weight_layout.startswith("NC") and got.body.attrs.weight_layout[-1] == "n"
    rng = np.random.default_rng(4)
    check_numerics(
        before,
        got,
        args=[
            rng.integers(0, 256, (4, 64)).astype("uint8"),
            rng.integers(-128, 128, (24, 64)).astype("int8"),
        ],
        rtol=0,
        atol=0,
    )


# ------------------------------------------------------------------ topi.nn.conv2d_alter_layout
def test_depthwise_conv2d_through_topi_conv2d_alter_layout():
    """TVM's test_alter_layout_depthwise_conv2d: the hook calls ``topi.nn.conv2d_alter_layout``
    under an AVX2 target, which dispatches to the x86 rule: NCHW8c / OIHW1i8o."""
    from minitvm import topi

    def alter(attrs, inputs, tinfos, out_type):
        with tvm.target.Target("llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"):
            return topi.nn.conv2d_alter_layout(attrs, inputs, tinfos, out_type)

    x = relay.var("x", shape=(1, 32, 6, 6))
    w = relay.var("w", shape=(32, 1, 3, 3))
    before = _fn(_conv(x, w, padding=(1, 1), channels=32, kernel_size=(3, 3), groups=32))
    x = relay.var("x", shape=(1, 32, 6, 6))
    w = relay.var("w", shape=(32, 1, 3, 3))
    y = relay.nn.contrib_depthwise_conv2d_nchwc(
        relay.layout_transform(x, "NCHW", "NCHW8c"),
        relay.layout_transform(w, "OIHW", "OIHW1i8o"),
        padding=(1, 1, 1, 1),
        channels=32,
        kernel_size=(3, 3),
        groups=32,
        data_layout="NCHW8c",
        kernel_layout="OIHW1i8o",
        out_layout="NCHW8c",
    )
    _check(
        before,
        _fn(relay.layout_transform(y, "NCHW8c", "NCHW")),
        alter,
        passes=[transform.CanonicalizeOps(), transform.AlterOpLayout()],
    )


def test_arm_cpu_keeps_nhwc_convolutions():
    """TVM's test_alter_layout_nhwc_arm: under ``-device=arm_cpu`` the NHWC float convs stay
    (no x86 blocking, and no ARM rules here)."""
    from minitvm import topi

    def alter(attrs, inputs, tinfos, out_type):
        with tvm.target.Target("llvm -device=arm_cpu"):
            return topi.nn.conv2d_alter_layout(attrs, inputs, tinfos, out_type)

    x = relay.var("x", shape=(1, 6, 6, 16))
    w1 = relay.var("weight1", shape=(3, 3, 16, 16))
    w2 = relay.var("weight2", shape=(3, 3, 16, 16))
    kw = dict(channels=16, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.relu(_conv(x, w1, **kw))
    y = relay.nn.avg_pool2d(y, pool_size=(1, 1), layout="NHWC")
    before = _fn(relay.nn.relu(_conv(y, w2, **kw)))
    _check(before, before, alter)
    assert topi.nn.conv2d_alter_layout(None, [], [], None) is None  # no target: no rule
