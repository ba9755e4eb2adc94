"""AlterOpLayout, the rest of TVM's cases: layouts that split one axis twice (TVM's
test_alter_layout_multi with ``OHWI16i64o2i``, and the x86 int8 conv2d rule's
``OIHW{ic/4}i{oc}o4i``), test_alter_layout_lrn, and the strided_slice case with ``None`` ends
(TVM 0.6's file; v0.19's layout rule aborts on undefined ends, we keep TVM 0.6's program).

Every case checks the expected program (as TVM's test or TVM's x86 rule builds it) and runs the
program before and after on random inputs; the int8 programs are also compiled and run."""

import itertools

import numpy as np
import pytest
from pass_test_util import check_numerics
from pass_test_util import conv2d_layout_hook as _hook
from pass_test_util import fn_of as _fn
from pass_test_util import opt_main as _opt

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.op.layout import BijectiveLayout, Layout, transform_array
from minitvm.relay.testing.temp_op_attr import TempOpAttr
from minitvm.topi.x86 import conv2d_alter_op

VNNI = "llvm -mcpu=cascadelake"
AVX512 = "llvm -mcpu=skylake-avx512"
AVX2 = "llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"


def _check(before, expected, hook, args=None):
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", hook):
        got = _opt(before, [transform.CanonicalizeOps(), transform.AlterOpLayout()])
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    check_numerics(before, got, args=args, rtol=1e-4, atol=1e-4)
    return got


# ------------------------------------------------------------------ a twice-split layout
def test_layout_with_a_twice_split_axis():
    """TVM's Layout: a sub-axis may repeat; FactorOf multiplies the factors; the first
    occurrence is the outer block. A repeated primal axis is still an error."""
    lay = Layout("OIHW4i16o4i")
    assert lay.name == "OIHW4i16o4i" and len(lay) == 7 and lay.ndim_primal() == 4
    assert lay.factor_of("I") == 16 and lay.factor_of("i") == 16 and lay.factor_of("O") == 16
    assert lay.index_of("i") == 4 and lay.index_of("o") == 5
    assert Layout("OHWI16i64o2i").factor_of("I") == 32
    with pytest.raises(ValueError, match="appears twice"):
        Layout("NCHWC")
    with pytest.raises(ValueError, match="no primal"):
        Layout("NCHW4i4i")


def test_bijective_layout_follows_tvms_store_rule():
    """Shapes and indices as TVM's GetStoreRule gives them: I = I'*16 + i1*4 + i2."""
    bij = BijectiveLayout("OIHW", "OIHW4i16o4i")
    assert bij.forward_shape((32, 48, 3, 3)) == (2, 3, 3, 3, 4, 16, 4)
    assert bij.backward_shape((2, 3, 3, 3, 4, 16, 4)) == (32, 48, 3, 3)
    assert bij.forward_index((17, 29, 1, 2)) == (1, 1, 1, 2, 3, 1, 1)
    assert bij.backward_index((1, 1, 1, 2, 3, 1, 1)) == (17, 29, 1, 2)
    rng = np.random.default_rng(0)
    k = rng.standard_normal((32, 48, 3, 3))
    packed = transform_array(k, "OIHW", "OIHW4i16o4i")
    for idx in itertools.product(range(0, 32, 5), range(0, 48, 7), range(3), range(3)):
        assert packed[bij.forward_index(idx)] == k[idx]
        assert bij.backward_index(bij.forward_index(idx)) == idx
    # between two double splits, through the plain layout or directly
    other = transform_array(packed, "OIHW4i16o4i", "OHWI8i8o2i")
    np.testing.assert_array_equal(other, transform_array(k, "OIHW", "OHWI8i8o2i"))
    np.testing.assert_array_equal(transform_array(other, "OHWI8i8o2i", "OIHW"), k)


def test_layout_transform_op_types_and_computes_a_double_split():
    x = relay.var("w", shape=(32, 48, 3, 3), dtype="int8")
    y = relay.layout_transform(x, "OIHW", "OIHW4i16o4i")
    func = _opt(_fn(relay.layout_transform(y, "OIHW4i16o4i", "OIHW")), transform.InferType())
    assert tuple(func.body.args[0].checked_type.shape) == (2, 3, 3, 3, 4, 16, 4)
    w = np.random.default_rng(1).integers(-128, 128, (32, 48, 3, 3)).astype("int8")
    packed = relay.create_executor("debug", mod=tvm.IRModule.from_expr(_fn(y))).evaluate()(w)
    for occ, icc, h, wi, icb, ocb, ice in itertools.product(
            range(2), range(3), range(3), range(3), range(4), range(0, 16, 5), range(4)):
        assert packed.numpy()[occ, icc, h, wi, icb, ocb, ice] == \
            w[occ * 16 + ocb, icc * 16 + icb * 4 + ice, h, wi]
    with tvm.transform.PassContext(opt_level=3):
        back = relay.create_executor("graph", mod=tvm.IRModule.from_expr(func),
                                     target="llvm").evaluate()(w)
    np.testing.assert_array_equal(back.numpy(), w)


def test_alter_layout_multi():
    """TVM's test_alter_layout_multi: the hook asks for kernel layout OHWI16i64o2i (I split by
    16 and each block again by 2); the weight gets one transform, the output one back."""

    def before():
        x = relay.var("x", shape=(1, 64, 6, 6))
        y = relay.nn.conv2d(x, relay.var("weight"), channels=128, kernel_size=(3, 3),
                            padding=(1, 1))
        return _fn(y)

    def expected():
        x = relay.var("x", shape=(1, 64, 6, 6))
        w = relay.var("weight", shape=(128, 64, 3, 3))
        y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NCHW16c"),
                            relay.layout_transform(w, "OIHW", "OHWI16i64o2i"), channels=128,
                            kernel_size=(3, 3), padding=(1, 1), kernel_layout="OHWI16i64o2i",
                            data_layout="NCHW16c")
        return _fn(relay.layout_transform(y, "NCHW16c", "NCHW"))

    rng = np.random.default_rng(2)
    args = [rng.standard_normal((1, 64, 6, 6)).astype("float32"),
            rng.standard_normal((128, 64, 3, 3)).astype("float32")]
    got = _check(before(), expected(), _hook("NCHW16c", "OHWI16i64o2i"), args)
    assert tuple(got.body.args[0].args[1].checked_type.shape) == (2, 3, 3, 2, 16, 64, 2)


# ------------------------------------------------------------------ lrn, strided_slice(None)
def test_alter_layout_lrn():
    """TVM's test_alter_layout_lrn: max_pool2d follows NCHW16c, lrn (no layout rule) gets the
    plain layout back before it."""

    def before():
        x = relay.var("x", shape=(1, 64, 6, 6))
        y = relay.nn.conv2d(x, relay.var("weight"), channels=64, kernel_size=(3, 3),
                            padding=(1, 1))
        y = relay.nn.max_pool2d(y, pool_size=(2, 2))
        return _fn(relay.nn.lrn(y))

    def expected():
        x = relay.var("x", shape=(1, 64, 6, 6))
        w = relay.var("weight", shape=(64, 64, 3, 3))
        y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NCHW16c"),
                            relay.layout_transform(w, "OIHW", "OIHW16i"), channels=64,
                            kernel_size=(3, 3), padding=(1, 1), kernel_layout="OIHW16i",
                            data_layout="NCHW16c")
        y = relay.nn.max_pool2d(y, pool_size=(2, 2), layout="NCHW16c")
        return _fn(relay.nn.lrn(relay.layout_transform(y, "NCHW16c", "NCHW")))

    rng = np.random.default_rng(3)
    args = [rng.standard_normal((1, 64, 6, 6)).astype("float32"),
            rng.standard_normal((64, 64, 3, 3)).astype("float32")]
    _check(before(), expected(), _hook("NCHW16c", "OIHW16i"), args)


def test_alter_layout_strided_slice_with_none_ends():
    """TVM 0.6's test_alter_layout_strided_slice: ends [None, None] after NCHW4c become
    [None, 8] (the blocked axis ends at its extent / 4, the other stays open). TVM v0.19's rule
    aborts here (ICHECK on an undefined end); this is the program it used to build."""

    def before():
        x = relay.var("x", shape=(1, 32, 8, 8))
        y = relay.nn.conv2d(x, relay.var("weight"), channels=32, kernel_size=(3, 3),
                            padding=(1, 1))
        return _fn(relay.strided_slice(y, begin=[0, 16], end=[None, None]))

    def expected():
        x = relay.var("x", shape=(1, 32, 8, 8))
        y = relay.nn.conv2d(relay.layout_transform(x, "NCHW", "NCHW4c"), relay.var("weight"),
                            channels=32, kernel_size=(3, 3), padding=(1, 1),
                            data_layout="NCHW4c")
        y = relay.strided_slice(y, begin=[0, 4], end=[None, 8])
        return _fn(relay.layout_transform(y, "NCHW4c", "NCHW"))

    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 32, 8, 8)).astype("float32")
    w = rng.standard_normal((32, 32, 3, 3)).astype("float32")
    got = _check(before(), expected(), _hook("NCHW4c"), [x, w])
    assert tuple(got.checked_type.ret_type.shape) == (1, 16, 8, 8)
    with tvm.transform.PassContext(opt_level=3):
        built = relay.create_executor("graph", mod=tvm.IRModule.from_expr(got),
                                      target="llvm").evaluate()(x, w)
    plain = relay.create_executor("debug", mod=tvm.IRModule.from_expr(before())).evaluate()(x, w)
    np.testing.assert_allclose(built.numpy(), plain.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,end,index", [
    ("end", [None, None], np.s_[0:, 2:]),
    ("end", [1, None], np.s_[0:1, 2:]),
    ("size", [None, 2], np.s_[0:, 2:4]),
])
def test_strided_slice_accepts_none_ends(mode, end, index):
    """An open end runs to the end of its axis (TVM's attributes allow None entries)."""
    data = np.arange(36, dtype="float32").reshape(2, 6, 3)
    y = relay.strided_slice(relay.var("x", shape=(2, 6, 3)), begin=[0, 2], end=end,
                            slice_mode=mode)
    func = _opt(_fn(y), transform.InferType())
    assert tuple(func.ret_type.shape) == data[index].shape
    got = relay.create_executor("debug", mod=tvm.IRModule.from_expr(func)).evaluate()(data)
    np.testing.assert_array_equal(got.numpy(), data[index])


# ------------------------------------------------------------------ the x86 int8 conv2d rule
def _int8_conv(c_in, c_out, hw=6, kernel=3, pad=1):
    x = relay.var("x", shape=(1, c_in, hw, hw), dtype="uint8")
    w = relay.var("w", shape=(c_out, c_in, kernel, kernel), dtype="int8")
    y = relay.nn.conv2d(x, w, channels=c_out, kernel_size=(kernel, kernel),
                        padding=(pad, pad), out_dtype="int32")
    return _fn(relay.nn.relu(y))


def _int8_expected(c_in, c_out, ic_bn, oc_bn, hw=6, kernel=3, pad=1):
    """What TVM's x86 rule builds: contrib_conv2d_NCHWc with data NCHW{ic}c, kernel
    OIHW{ic/4}i{oc}o4i and out NCHW{oc}c; relu follows the blocked output."""
    x = relay.var("x", shape=(1, c_in, hw, hw), dtype="uint8")
    w = relay.var("w", shape=(c_out, c_in, kernel, kernel), dtype="int8")
    kernel_layout = f"OIHW{ic_bn // 4}i{oc_bn}o4i"
    y = relay.nn.contrib_conv2d_nchwc(
        relay.layout_transform(x, "NCHW", f"NCHW{ic_bn}c"),
        relay.layout_transform(w, "OIHW", kernel_layout), channels=c_out,
        kernel_size=(kernel, kernel), padding=(pad, pad), data_layout=f"NCHW{ic_bn}c",
        kernel_layout=kernel_layout, out_layout=f"NCHW{oc_bn}c", out_dtype="int32")
    return _fn(relay.layout_transform(relay.nn.relu(y), f"NCHW{oc_bn}c", "NCHW"))


def _int8_args(func, seed=0):
    rng = np.random.default_rng(seed)
    x, w = (p.type_annotation for p in func.params)
    return [rng.integers(0, 256, [int(d) for d in x.shape]).astype("uint8"),
            rng.integers(-128, 128, [int(d) for d in w.shape]).astype("int8")]


@pytest.mark.parametrize("target,c_in,c_out,ic_bn,oc_bn,kernel", [
    (VNNI, 32, 32, 16, 16, 3),      # VNNI: 16 int32 lanes, 4 bytes each
    (AVX512, 48, 16, 16, 16, 1),    # AVX-512 (pmaddubsw path): 1x1 kernel, same blocks
    (VNNI, 24, 32, 12, 16, 3),      # input blocks: the largest of 16, 12, 8, 4 dividing 24
    (VNNI, 4, 16, 4, 16, 3),        # 4 input channels: one 4-byte group
    (AVX2, 16, 16, 8, 8, 3),        # AVX2: 8 int32 lanes
])
def test_x86_int8_conv2d_blocks_input_channels_twice(target, c_in, c_out, ic_bn, oc_bn, kernel):
    """TVM's x86 AlterOpLayout rule for uint8 x int8 conv2d (conv2d_NCHWc_int8.x86, fallback
    configuration): the input-channel block is split again into the 4 bytes one int32 lane of
    the dot product reduces. The result computes what the original computes, interpreted and
    compiled."""
    pad = 1 if kernel == 3 else 0
    before = _int8_conv(c_in, c_out, kernel=kernel, pad=pad)
    with tvm.target.Target(target):
        got = _opt(before, transform.AlterOpLayout())
    want = _int8_expected(c_in, c_out, ic_bn, oc_bn, kernel=kernel, pad=pad)
    tvm.ir.assert_structural_equal(got, _opt(want, transform.InferType()))
    args = _int8_args(before)
    check_numerics(before, got, args=args, rtol=0, atol=0)
    with tvm.transform.PassContext(opt_level=3):
        built = relay.create_executor("graph", mod=tvm.IRModule.from_expr(got),
                                      target="llvm").evaluate()(*args)
    plain = relay.create_executor("debug", mod=tvm.IRModule.from_expr(before)).evaluate()(*args)
    np.testing.assert_array_equal(built.numpy(), plain.numpy())


@pytest.mark.parametrize("c_in,c_out,dtypes,target", [
    (18, 16, ("uint8", "int8"), VNNI),   # input channels not a multiple of 4 (Legalize pads)
    (16, 12, ("uint8", "int8"), VNNI),   # output channels do not fill the 16 lanes
    (16, 16, ("uint8", "int8"), "llvm -mcpu=x86-64"),  # no SSE4.2: the float template blocks
    (16, 16, ("int8", "int8"), VNNI),    # int8 data: the float template blocks (TVM's strategy)
])
def test_x86_int8_rule_boundaries(c_in, c_out, dtypes, target):
    x = relay.var("x", shape=(1, c_in, 6, 6), dtype=dtypes[0])
    w = relay.var("w", shape=(c_out, c_in, 3, 3), dtype=dtypes[1])
    before = _fn(relay.nn.conv2d(x, w, channels=c_out, kernel_size=(3, 3), out_dtype="int32"))
    with tvm.target.Target(target):
        got = _opt(before, transform.AlterOpLayout())
    text = str(got)
    if c_in % 4 or c_out % 16:
        tvm.ir.assert_structural_equal(got, _opt(before, transform.InferType()))
    else:
        assert "contrib_conv2d_NCHWc" in text and "o4i" not in text
    check_numerics(before, got, args=_int8_args(before, 5) if dtypes[0] == "uint8" else None,
                   rtol=0, atol=0)


def test_int8_channel_blocks_follow_tvms_fallback():
    blocks = conv2d_alter_op.conv2d_int8_channel_blocks
    assert blocks(64, 64, 16) == (16, 16)
    assert blocks(24, 32, 16) == (12, 16)
    assert blocks(40, 32, 16) == (8, 16)
    assert blocks(12, 8, 8) == (4, 8)
    assert blocks(8, 8, 4) == (4, 4)
    assert blocks(6, 16, 16) is None and blocks(16, 24, 16) is None
    with pytest.raises(ValueError, match="positive"):
        blocks(0, 16, 16)


# ------------------------------------------------------------------ Arm int8 NHWC (aarch64)
def _nhwc_int8(hw, c_in=73, c_out=79):
    x = relay.var("x", shape=(1, hw, hw, c_in), dtype="int8")
    w = relay.var("weight1", shape=(3, 3, c_in, c_out), dtype="int8")
    return x, w, dict(channels=c_out, kernel_size=(3, 3), data_layout="NHWC",
                      kernel_layout="HWIO", out_dtype="int32")


def _arm_hook(target):
    def alter(attrs, inputs, tinfos, out_type):
        from minitvm import topi

        with tvm.target.Target(target):
            return topi.nn.conv2d_alter_layout(attrs, inputs, tinfos, out_type)

    return alter


@pytest.mark.parametrize("target,tiles", [
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu", (4, 16)),              # TVM's case
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+v8.2a,+dotprod", (16, 4)),
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+v8.2a,+i8mm", (12, 8)),
])
def test_alter_layout_nhwc_int8_aarch64(target, tiles):
    """TVM's test_alter_layout_nhwc_int8_aarch64 (its autotvm fallback context only records
    the workload): the weight is pre-transformed into interleaved GEMM tiles (4x16 without
    dot product; 16x4 for the dot-product kernel, 12x8 with i8mm) and the conv runs as
    contrib_conv2d_gemm_without_weight_transform."""
    for hw, numerics in ((56, False), (6, True)):
        x, w, kw = _nhwc_int8(hw)
        before = _fn(relay.nn.conv2d(x, w, **kw))
        x, w, kw = _nhwc_int8(hw)
        wt = relay.nn.contrib_conv2d_gemm_weight_transform(w, *tiles)
        expected = _fn(relay.nn.contrib_conv2d_gemm_without_weight_transform(x, wt, **kw))
        with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", _arm_hook(target)):
            got = _opt(before, transform.AlterOpLayout())
        tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
        if numerics:
            rng = np.random.default_rng(6)
            args = [rng.integers(-128, 128, (1, hw, hw, 73)).astype("int8"),
                    rng.integers(-128, 128, (3, 3, 73, 79)).astype("int8")]
            check_numerics(before, got, args=args, rtol=0, atol=0)


def test_arm_32bit_int8_nhwc_runs_on_int16_operands():
    """Not AArch64: TVM's strategy picks the spatial-pack kernel, whose rule casts both
    operands to int16; float NHWC stays as it is (TVM's test_alter_layout_nhwc_arm)."""
    target = "llvm -device=arm_cpu -mtriple=armv8l-linux-gnu -mattr=+neon"
    x, w, kw = _nhwc_int8(6, 8, 8)
    before = _fn(relay.nn.conv2d(x, w, **kw))
    x, w, kw = _nhwc_int8(6, 8, 8)
    expected = _fn(relay.nn.conv2d(relay.cast(x, "int16"), relay.cast(w, "int16"), **kw))
    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", _arm_hook(target)):
        got = _opt(before, transform.AlterOpLayout())
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    check_numerics(before, got, args=_int8_args_signed(before), rtol=0, atol=0)


def _int8_args_signed(func, seed=7):
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, [int(d) for d in p.type_annotation.shape]).astype("int8")
            for p in func.params]
