"""AlterOpLayout under an x86 target: the registered rules re-block NCHW conv2d into
``nn.contrib_conv2d_NCHWc`` / ``nn.contrib_depthwise_conv2d_NCHWc`` and dense into
``nn.contrib_dense_pack`` with TVM's fallback block sizes, build TVM's programs (cases of TVM
v0.19's test of the pass restated) and compute what the original computes."""

import numpy as np
import pytest
from pass_test_util import check_numerics
from pass_test_util import fn_of as _fn
from pass_test_util import opt_main as _opt

import minitvm as tvm
from minitvm import relay, topi
from minitvm.relay import transform
from minitvm.relay.testing.temp_op_attr import TempOpAttr
from minitvm.topi.x86 import conv2d_alter_op, dense_alter_op
from minitvm.topi.x86.utils import get_simd_32bit_lanes, is_x86_target

AVX2 = "llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"
AVX512 = "llvm -mcpu=skylake-avx512"


def _alter(before, target):
    if target is None:
        return _opt(before, transform.AlterOpLayout())
    with tvm.target.Target(target):
        return _opt(before, transform.AlterOpLayout())


def _check(before, expected, target):
    got = _alter(before, target)
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    check_numerics(before, got, rtol=1e-4, atol=1e-4)
    return got


# --------------------------------------------------------------------- TVM's own cases
def test_dense_packed_data_after_blocked_conv():
    """TVM's test_alter_op_dense_packed_data: the registered conv2d rule blocks by 8 under AVX2,
    the pool follows, and dense (TVM's topi hook) packs its weight NC16n."""

    def before():
        x = relay.var("x", shape=(1, 32, 8, 8))
        w = relay.var("conv2d_weight", shape=(32, 32, 3, 3))
        y = relay.nn.conv2d(x, w, channels=32, kernel_size=(3, 3), padding=(1, 1))
        y = relay.nn.avg_pool2d(y, pool_size=[8, 8], padding=[0, 0, 0, 0])
        y = relay.squeeze(y, axis=[2, 3])
        return _fn(relay.nn.dense(y, relay.var("dense_weight", shape=(16, 32))))

    def expected():
        x = relay.var("x", shape=(1, 32, 8, 8))
        w = relay.var("conv2d_weight", shape=(32, 32, 3, 3))
        dw = relay.var("dense_weight", shape=(16, 32))
        y = relay.nn.contrib_conv2d_nchwc(
            relay.layout_transform(x, "NCHW", "NCHW8c"),
            relay.layout_transform(w, "OIHW", "OIHW8i8o"), channels=32, kernel_size=(3, 3),
            padding=(1, 1), data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c")
        y = relay.nn.avg_pool2d(y, pool_size=[8, 8], padding=[0, 0, 0, 0], layout="NCHW8c")
        y = relay.squeeze(y, axis=[2, 3])
        y = relay.nn.contrib_dense_pack(relay.layout_transform(y, "NC8c", "NC"),
                                        relay.layout_transform(dw, "NC", "NC16n"), "NC16n",
                                        out_dtype="float32")
        return _fn(y)

    with TempOpAttr("nn.dense", "FTVMAlterOpLayout",
                    topi.x86.dense_alter_op._alter_dense_layout):
        _check(before(), expected(), AVX2)


def test_dense_after_pool1d_squeeze():
    """TVM's test_alter_op_dense: 48 output rows pack by 16 (two AVX2 registers)."""

    def before():
        x = relay.var("x", shape=(32, 1, 128))
        y = relay.squeeze(relay.nn.adaptive_avg_pool1d(x, [64]), axis=[1])
        return _fn(relay.nn.dense(y, relay.var("weight", shape=(48, 64))))

    def expected():
        x = relay.var("x", shape=(32, 1, 128))
        w = relay.layout_transform(relay.var("weight", shape=(48, 64)), "NC", "NC16n")
        y = relay.squeeze(relay.nn.adaptive_avg_pool1d(x, [64]), axis=[1])
        return _fn(relay.nn.contrib_dense_pack(y, w, "NC16n", units=None, out_dtype="float32"))

    with TempOpAttr("nn.dense", "FTVMAlterOpLayout",
                    topi.x86.dense_alter_op._alter_dense_layout):
        _check(before(), expected(), AVX2)


# --------------------------------------------------------------------- the registered rules
def _conv_relu(c_in=64, c_out=64, groups=1, layout=("NCHW", "OIHW")):
    x = relay.var("x", shape=(1, c_in, 6, 6))
    w = relay.var("w", shape=(c_out, c_in // groups, 3, 3))
    y = relay.nn.conv2d(x, w, channels=c_out, kernel_size=(3, 3), padding=(1, 1), groups=groups,
                        data_layout=layout[0], kernel_layout=layout[1])
    return _fn(relay.nn.relu(y))


def test_conv2d_blocks_by_avx512_width():
    def expected():
        x = relay.var("x", shape=(1, 64, 6, 6))
        w = relay.var("w", shape=(64, 64, 3, 3))
        y = relay.nn.contrib_conv2d_nchwc(
            relay.layout_transform(x, "NCHW", "NCHW16c"),
            relay.layout_transform(w, "OIHW", "OIHW16i16o"), channels=64, kernel_size=(3, 3),
            padding=(1, 1), data_layout="NCHW16c", kernel_layout="OIHW16i16o",
            out_layout="NCHW16c")
        return _fn(relay.layout_transform(relay.nn.relu(y), "NCHW16c", "NCHW"))

    _check(_conv_relu(), expected(), AVX512)


def test_conv2d_odd_channels_block_by_divisors():
    """3 input, 24 output channels under AVX2: output blocks of 8, input blocks of 3."""

    def expected():
        x = relay.var("x", shape=(1, 3, 6, 6))
        w = relay.var("w", shape=(24, 3, 3, 3))
        y = relay.nn.contrib_conv2d_nchwc(
            relay.layout_transform(x, "NCHW", "NCHW3c"),
            relay.layout_transform(w, "OIHW", "OIHW3i8o"), channels=24, kernel_size=(3, 3),
            padding=(1, 1), data_layout="NCHW3c", kernel_layout="OIHW3i8o", out_layout="NCHW8c")
        return _fn(relay.layout_transform(relay.nn.relu(y), "NCHW8c", "NCHW"))

    _check(_conv_relu(3, 24), expected(), AVX2)


def test_depthwise_conv2d_blocks():
    def expected():
        x = relay.var("x", shape=(1, 32, 6, 6))
        w = relay.var("w", shape=(32, 1, 3, 3))
        y = relay.nn.contrib_depthwise_conv2d_nchwc(
            relay.layout_transform(x, "NCHW", "NCHW8c"),
            relay.layout_transform(w, "OIHW", "OIHW1i8o"), groups=32, channels=32,
            kernel_size=(3, 3), padding=(1, 1), data_layout="NCHW8c", kernel_layout="OIHW1i8o",
            out_layout="NCHW8c")
        return _fn(relay.layout_transform(relay.nn.relu(y), "NCHW8c", "NCHW"))

    _check(_conv_relu(32, 32, groups=32), expected(), AVX2)


def test_registered_dense_rule_packs():
    x = relay.var("x", shape=(4, 64))
    before = _fn(relay.nn.dense(x, relay.var("w", shape=(40, 64))))
    # 40 rows: the largest divisor up to 16 (AVX2) is 10, up to 32 (AVX-512) 20
    w10 = relay.layout_transform(relay.var("w", shape=(40, 64)), "NC", "NC10n")
    _check(before, _fn(relay.nn.contrib_dense_pack(relay.var("x", shape=(4, 64)), w10, "NC10n",
                                                   out_dtype="float32")), AVX2)
    assert "NC20n" in str(_alter(before, AVX512))


@pytest.mark.parametrize("target", [None, "llvm", "llvm -device=arm_cpu -mcpu=cortex-a72",
                                    "c"])
def test_without_x86_target_nothing_changes(target):
    """No target, a plain llvm target (the default relay.build), or a non-x86 CPU: unchanged."""
    x = relay.var("x", shape=(2, 64))
    before = _fn(relay.nn.dense(relay.nn.relu(x), relay.var("w", shape=(16, 64))))
    for func in (_conv_relu(), _conv_relu(32, 32, groups=32), before):
        tvm.ir.assert_structural_equal(_alter(func, target), _opt(func, transform.InferType()))


def _nhwc_conv():
    x = relay.var("x", shape=(1, 6, 6, 16))
    w = relay.var("w", shape=(3, 3, 16, 16))
    return _fn(relay.nn.conv2d(x, w, channels=16, kernel_size=(3, 3), data_layout="NHWC",
                               kernel_layout="HWIO"))


def _dilated_depthwise():
    x = relay.var("x", shape=(1, 16, 8, 8))
    w = relay.var("w", shape=(16, 1, 3, 3))
    return _fn(relay.nn.conv2d(x, w, channels=16, groups=16, kernel_size=(3, 3),
                               dilation=(2, 2)))


def _uint8_conv():
    """12 output channels do not fill the int8 template's 16 lanes (TVM's fallback asserts)."""
    x = relay.var("x", shape=(1, 16, 6, 6), dtype="uint8")
    w = relay.var("w", shape=(12, 16, 3, 3), dtype="int8")
    return _fn(relay.nn.conv2d(x, w, channels=12, kernel_size=(3, 3), out_dtype="int32"))


@pytest.mark.parametrize("make,target", [
    (_nhwc_conv, AVX2),                                 # x86 runs NHWC as it is
    (lambda: _conv_relu(32, 32, groups=4), AVX2),       # grouped, not depthwise
    (_dilated_depthwise, AVX2),                         # the generic depthwise kernel
    (_uint8_conv, "llvm -mcpu=cascadelake"),            # int8 template, indivisible channels
])
def test_kept_ops(make, target):
    func = make()
    tvm.ir.assert_structural_equal(_alter(func, target), _opt(func, transform.InferType()))


def test_dense_left_to_external_gemm_library():
    x = relay.var("x", shape=(2, 64))
    func = _fn(relay.nn.dense(x, relay.var("w", shape=(16, 64))))
    got = _alter(func, "llvm -mcpu=core-avx2 -libs=cblas")
    tvm.ir.assert_structural_equal(got, _opt(func, transform.InferType()))


# --------------------------------------------------------------------- building the result
def _small_net():
    x = relay.var("x", shape=(1, 16, 8, 8))
    w1 = relay.var("w1", shape=(32, 16, 3, 3))
    w2 = relay.var("w2", shape=(32, 1, 3, 3))
    wd = relay.var("wd", shape=(24, 32))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, channels=32, kernel_size=(3, 3), padding=(1, 1)))
    y = relay.nn.conv2d(y, w2, channels=32, groups=32, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.global_avg_pool2d(y)
    y = relay.nn.dense(relay.nn.batch_flatten(y), wd)
    return _fn(y)


@pytest.mark.parametrize("executor", ["graph", "vm"])
def test_altered_program_builds_and_matches(executor):
    """The blocked program compiles (opt_level 3) and computes what the original computes in
    the unoptimized interpreter, on random inputs."""
    func = _small_net()
    with tvm.target.Target(AVX2):
        altered = _opt(func, transform.AlterOpLayout())
    text = str(altered)
    for op in ("contrib_conv2d_NCHWc", "contrib_depthwise_conv2d_NCHWc", "contrib_dense_pack"):
        assert op in text
    rng = np.random.default_rng(0)
    args = [rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
            for p in func.params]
    with tvm.transform.PassContext(opt_level=3):
        got = relay.create_executor(executor, mod=tvm.IRModule.from_expr(altered),
                                    target="llvm").evaluate()(*args)
    with tvm.transform.PassContext(opt_level=0):
        want = relay.create_executor("debug", mod=tvm.IRModule.from_expr(func),
                                     target="llvm").evaluate()(*args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_relay_build_keeps_its_kernels():
    """relay.build optimizes under the plain host target, so naming an x86 CPU does not swap
    its kernels for the blocked ones (measured 2.8x slower here; see the pass audit)."""
    mod = tvm.IRModule.from_expr(_small_net())
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=AVX2)
    graph = lib.get_graph_json()
    assert "nn_conv2d" in graph and "NCHWc" not in graph and "dense_pack" not in graph


# --------------------------------------------------------------------- the topi facts
def test_channel_blocks_and_pack_width():
    assert conv2d_alter_op.conv2d_channel_blocks(64, 64, 16) == (16, 16)
    assert conv2d_alter_op.conv2d_channel_blocks(24, 40, 16) == (8, 10)
    assert conv2d_alter_op.conv2d_channel_blocks(3, 64, 8) == (3, 8)
    assert dense_alter_op.dense_pack_block(48, 8) == 16
    assert dense_alter_op.dense_pack_block(7, 8) == 7
    assert dense_alter_op.dense_pack_block(tvm.tir.Var("n", "int64"), 4) == 8
    with pytest.raises(ValueError, match="positive"):
        conv2d_alter_op.conv2d_channel_blocks(0, 8, 8)


@pytest.mark.parametrize("target,lanes", [(AVX512, 16), (AVX2, 8), ("llvm", 4),
                                          ("llvm -mcpu=znver2", 8),
                                          ("llvm -mattr=+avx512f", 16)])
def test_simd_lanes(target, lanes):
    with tvm.target.Target(target):
        assert get_simd_32bit_lanes() == lanes


def test_x86_target_scope():
    assert not is_x86_target()
    assert is_x86_target(tvm.target.Target(AVX2))
    assert not is_x86_target(tvm.target.Target("llvm"))


def test_hooks_need_a_target():
    x = relay.var("x", shape=(2, 64))
    func = _fn(relay.nn.dense(x, relay.var("w", shape=(16, 64))))
    with TempOpAttr("nn.dense", "FTVMAlterOpLayout", dense_alter_op._alter_dense_layout):
        with pytest.raises(ValueError, match="target in scope"):
            _opt(func, transform.AlterOpLayout())


def test_make_op_call_unknown_op():
    from minitvm.relay.op.nn._alter_layout_x86 import make_op_call

    with pytest.raises(ValueError, match="no Relay constructor"):
        make_op_call("nn.nonexistent", [], {})
