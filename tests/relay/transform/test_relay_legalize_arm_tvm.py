"""Legalize of int8 nn.conv2d under an Arm CPU target: TVM v0.19's test_conv2d_NHWC_legalize
(test_pass_legalize.py) restated, and the programs TVM's ``topi.arm_cpu`` rule (through
``topi.generic.conv2d_alter_int8_common``) builds, each run before and after on random int
inputs."""

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay, topi
from minitvm.relay import transform
from minitvm.topi.arm_cpu import is_arm_cpu_target, is_dotprod_available

AARCH64 = "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu"


def _legalize(expr, target):
    mod = tvm.IRModule.from_expr(expr)
    with tvm.target.Target(target) if target else _nullcontext():
        with tvm.transform.PassContext(opt_level=3):
            mod = transform.Legalize()(mod)
    return mod["main"]


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _infer(func):
    return transform.InferType()(tvm.IRModule.from_expr(func))["main"]


def _int_args(func, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in func.params:
        t = p.type_annotation
        lo, hi = (0, 256) if t.dtype == "uint8" else (-128, 128)
        out.append(rng.integers(lo, hi, [int(d) for d in t.shape]).astype(t.dtype))
    return out


def _nhwc_conv(in_channels=3, out_channels=4, dtype="int8", out_dtype="int8"):
    x = relay.var("x", shape=(1, 1, 1, in_channels), dtype=dtype)
    w = relay.var("weight", shape=(1, 1, in_channels, out_channels), dtype=dtype)
    y = relay.nn.conv2d(x, w, kernel_size=(1, 1), channels=out_channels, data_layout="NHWC",
                        kernel_layout="HWIO", out_dtype=out_dtype)
    return relay.Function([x, w], y)


def _relaid(func):
    """``_nhwc_conv``'s function as Legalize leaves it without an int8 rule: the conv relaid
    out to NCHW/OIHW between layout_transforms (``_legalize_conv2d_layout``)."""
    x, w = func.params
    conv = func.body
    y = relay.nn.conv2d(relay.layout_transform(x, "NHWC", "NCHW"),
                        relay.layout_transform(w, "HWIO", "OIHW"), kernel_size=(1, 1),
                        channels=conv.attrs.channels, out_dtype=conv.attrs.out_dtype)
    return _infer(relay.Function([x, w], relay.layout_transform(y, "NCHW", "NHWC")))


@pytest.mark.parametrize("target,exp_in_channels", [
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu", 8),
    ("llvm --device=arm_cpu --mtriple=aarch64-linux-gnu -mattr=+v8.2a,+dotprod", 3),
    ("llvm --device=arm_cpu --mtriple=aarch64-linux-gnu -mattr=+v8.2a,+i8mm", 8),
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon", 8),
    ("llvm -device=arm_cpu -mtriple=armv8l-linux-gnu -mattr=+neon", 8),
])
def test_conv2d_nhwc_legalize(target, exp_in_channels):
    """TVM's case: 3 input channels pad to 8 unless the dot-product kernel (which takes any
    count) is picked; 4 output channels pad to 8 and are sliced back."""
    before = _nhwc_conv()
    got = _legalize(before, target)
    assert got.body.op.name == "strided_slice"
    conv = got.body.args[0]
    assert int(conv.args[0].checked_type.shape[3]) == exp_in_channels

    x = relay.var("x", shape=(1, 1, 1, 3), dtype="int8")
    w = relay.var("weight", shape=(1, 1, 3, 4), dtype="int8")
    data, kernel = x, w
    if exp_in_channels != 3:
        data = relay.nn.pad(x, pad_width=((0, 0), (0, 0), (0, 0), (0, 5)))
        kernel = relay.nn.pad(w, pad_width=((0, 0), (0, 0), (0, 5), (0, 0)))
    kernel = relay.nn.pad(kernel, pad_width=((0, 0), (0, 0), (0, 0), (0, 4)))
    y = relay.nn.conv2d(data, kernel, padding=(0, 0), kernel_size=(1, 1), channels=8,
                        data_layout="NHWC", kernel_layout="HWIO", out_dtype="int8")
    y = relay.strided_slice(y, begin=[0, 0, 0, 0], end=[1, 1, 1, 4])
    tvm.ir.assert_structural_equal(got, _infer(relay.Function([x, w], y)))
    check_numerics(before, got, args=_int_args(before), rtol=0, atol=0)


def test_uint8_data_is_shifted_to_the_kernels_type_nchw():
    """uint8 data with an int8 kernel: the data is shifted by -128 into int8 (padding with
    -128 done outside the conv), the shift is undone with 128 * sum(kernel); channels padded
    to 8 both ways."""
    x = relay.var("x", shape=(1, 3, 5, 5), dtype="uint8")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    before = relay.Function([x, w], relay.nn.conv2d(
        x, w, kernel_size=(3, 3), channels=4, padding=(1, 1), out_dtype="int32"))
    got = _legalize(before, AARCH64)

    adjust = relay.sum(relay.cast(w, "int32"), axis=(1, 2, 3))
    adjust = relay.multiply(relay.expand_dims(adjust, axis=1, num_newaxis=2),
                            relay.const(128, "int32"))
    data = relay.cast(relay.subtract(relay.cast(x, "int32"), relay.const(128, "int32")), "int8")
    data = relay.nn.pad(data, pad_width=((0, 0), (0, 0), (1, 1), (1, 1)), pad_value=-128)
    width = ((0, 0), (0, 5), (0, 0), (0, 0))
    data, kernel = relay.nn.pad(data, pad_width=width), relay.nn.pad(w, pad_width=width)
    kernel = relay.nn.pad(kernel, pad_width=((0, 4), (0, 0), (0, 0), (0, 0)))
    y = relay.nn.conv2d(data, kernel, kernel_size=(3, 3), channels=8, padding=(0, 0),
                        out_dtype="int32")
    y = relay.add(relay.strided_slice(y, begin=[0, 0, 0, 0], end=[1, 4, 5, 5]), adjust)
    tvm.ir.assert_structural_equal(got, _infer(relay.Function([x, w], y)))
    check_numerics(before, got, args=_int_args(before, 1), rtol=0, atol=0)


@pytest.mark.parametrize("target", [None, "llvm", "llvm -mcpu=core-avx2"])
def test_other_targets_keep_the_conv(target):
    before = _nhwc_conv()
    tvm.ir.assert_structural_equal(_legalize(before, target), _relaid(before))


@pytest.mark.parametrize("make,expected", [
    # not int8: no int8 rule, so only relaid out
    (lambda: _nhwc_conv(dtype="float32", out_dtype="float32"), _relaid),
    # already aligned: the arm rule rebuilds the conv unchanged (so it stays NHWC)
    (lambda: _nhwc_conv(in_channels=8, out_channels=16), _infer),
])
def test_arm_rule_leaves_aligned_or_float_convs(make, expected):
    before = make()
    tvm.ir.assert_structural_equal(_legalize(before, AARCH64), expected(before))


def test_arm_target_facts():
    assert is_arm_cpu_target(tvm.target.Target(AARCH64))
    assert not is_arm_cpu_target(tvm.target.Target("llvm -mcpu=core-avx2"))
    assert is_dotprod_available(tvm.target.Target(AARCH64 + " -mattr=+v8.2a,+dotprod"))
    assert not is_dotprod_available(tvm.target.Target(AARCH64 + " -mattr=+dotprod"))  # v8.0
    assert is_dotprod_available(tvm.target.Target(AARCH64 + " -mattr=+v8.4a"))
    assert not is_dotprod_available(tvm.target.Target(AARCH64 + " -mattr=+v8.2a,+i8mm"))
    # the generic function with no target in scope: its default, no rewrite
    assert topi.nn.conv2d_legalize(None, [], []) is None
