"""qnn.conv2d's fast canonical forms (``qnn/op/canonicalize_fast_conv``): the VNNI int32 conv of
the 8-bit data and int8 weight as they are (on a VNNI host), or an exact float32 conv where
every partial sum stays under 2**24 -- both give the integer conv's result exactly; and
qnn.add / subtract of inputs in the output's scale as an int32 sum."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import post_order_visit
from minitvm.schedule import conv_vnni

qnn = relay.qnn.op
RNG = np.random.default_rng(3)


def _qconv(x_dtype, x_zp, cin, cout, k, stride=1):
    x = relay.var("x", shape=(1, cin, 9, 9), dtype=x_dtype)
    w = RNG.integers(-127, 128, size=(cout, cin, k, k)).astype("int8")
    call = qnn.conv2d(x, relay.const(w), relay.const(np.int32(x_zp)),
                      relay.const(np.zeros(cout, "int32")), relay.const(np.float32(0.1)),
                      relay.const(np.full(cout, 0.01, "float32")), kernel_size=[k, k],
                      channels=cout, strides=[stride, stride], padding=[k // 2] * 4)
    return tvm.IRModule.from_expr(relay.Function([x], call)), w


def _reference(xv, x_zp, w, k, stride):
    p = k // 2
    xs = np.pad(xv.astype("int64") - x_zp, ((0, 0), (0, 0), (p, p), (p, p)))
    oh = (xs.shape[2] - k) // stride + 1
    out = np.zeros((1, w.shape[0], oh, oh), "int64")
    for i in range(k):
        for j in range(k):
            patch = xs[:, :, i:i + stride * oh:stride, j:j + stride * oh:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype("int64"))
    return out.astype("int32")


def _canonical_calls(mod):
    mod = relay.transform.InferType()(mod)
    mod = relay.qnn.transform.CanonicalizeOps()(mod)
    calls = []
    post_order_visit(mod["main"], lambda e: calls.append(e) if isinstance(e, relay.Call) else None)
    return calls


@pytest.mark.parametrize("x_dtype,x_zp,cin,cout,k,stride", [
    ("uint8", 128, 3, 32, 3, 2),   # a stem: too few channels for VNNI, exact in float32
    ("uint8", 0, 32, 32, 3, 1),    # after a relu
    ("uint8", 128, 32, 16, 1, 2),  # a strided 1x1 skip conv
    ("int8", -3, 16, 32, 3, 1),    # int8 data: shifted into uint8 on VNNI
])
def test_fast_forms_match_the_integer_conv(x_dtype, x_zp, cin, cout, k, stride):
    mod, w = _qconv(x_dtype, x_zp, cin, cout, k, stride)
    lo, hi = (0, 255) if x_dtype == "uint8" else (-128, 127)
    xv = RNG.integers(lo, hi + 1, size=(1, cin, 9, 9)).astype(x_dtype)
    with tvm.transform.PassContext(opt_level=3):
        got = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(xv).numpy()
    np.testing.assert_array_equal(got, _reference(xv, x_zp, w, k, stride))


def test_stem_conv_runs_in_float32():
    convs = [c for c in _canonical_calls(_qconv("uint8", 128, 3, 32, 3, 2)[0])
             if c.op.name == "nn.conv2d"]
    assert len(convs) == 1 and convs[0].attrs.out_dtype == "float32"
    assert convs[0].args[1].data.numpy().dtype == np.float32


def test_one_group_conv_past_float32_exact_sums_runs_in_pieces():
    """A 1x1 conv of 1100 -> 12 channels (off VNNI's step), weights of +-127: sums of 1100
    products of up to 128 x 127 could pass 2**24, so two float32 convs over input channels
    0..549 and 550..1099, each exact, cast to int32 and added: the integer conv's result."""
    x = relay.var("x", shape=(1, 1100, 3, 3), dtype="uint8")
    w = np.where(RNG.random((12, 1100, 1, 1)) > 0.5, 127, -127).astype("int8")
    call = qnn.conv2d(x, relay.const(w), relay.const(np.int32(128)),
                      relay.const(np.zeros(12, "int32")), relay.const(np.float32(0.1)),
                      relay.const(np.full(12, 0.01, "float32")), kernel_size=[1, 1],
                      channels=12)
    mod = tvm.IRModule.from_expr(relay.Function([x], call))
    convs = [c for c in _canonical_calls(mod) if c.op.name == "nn.conv2d"]
    assert [(c.attrs.out_dtype, tuple(c.args[1].data.shape)) for c in convs] == \
        [("float32", (12, 550, 1, 1))] * 2
    xv = RNG.integers(0, 256, size=(1, 1100, 3, 3)).astype("uint8")
    xv[:, :, 1, 1] = np.where(w[:, :, 0, 0][0] > 0, 255, 0)  # (a sum at its bound)
    with tvm.transform.PassContext(opt_level=3):
        got = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(xv).numpy()
    np.testing.assert_array_equal(got, _reference(xv, 128, w, 1, 1))


@pytest.mark.skipif(not conv_vnni.available(), reason="needs AVX-512 VNNI")
def test_vnni_form_reads_the_bytes():
    calls = _canonical_calls(_qconv("uint8", 128, 32, 32, 3)[0])
    conv = next(c for c in calls if c.op.name == "nn.conv2d")
    assert conv.args[0].checked_type.dtype == "uint8"
    assert conv.args[1].checked_type.dtype == "int8" and conv.attrs.out_dtype == "int32"


@pytest.mark.parametrize("sign", [1, -1])
def test_add_of_one_scale_is_an_int32_sum(sign):
    """qnn.add / qnn.subtract whose inputs share the output's scale (a residual add of one
    quantization) canonicalize to the int32 sum, no float step, equal to the reference."""
    a, b = (relay.var(n, shape=(2, 50), dtype="uint8") for n in "ab")
    c, s = relay.const, np.float32(0.05)
    make = qnn.add if sign > 0 else qnn.subtract
    y = make(a, b, c(s), c(np.int32(128)), c(s), c(np.int32(100)), c(s), c(np.int32(3)))
    mod = tvm.IRModule.from_expr(relay.Function([a, b], y))
    calls = _canonical_calls(mod)
    assert not any(str(e.checked_type.dtype).startswith("float") for e in calls)
    av, bv = (RNG.integers(0, 256, size=(2, 50)).astype("uint8") for _ in range(2))
    ref = relay.create_executor("debug", mod=mod).evaluate()(av, bv).numpy()
    with tvm.transform.PassContext(opt_level=3):
        got = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(av, bv).numpy()
    exact = np.clip((av - 128.0) + sign * (bv - 100.0) + 3, 0, 255)
    np.testing.assert_array_equal(got, exact)
    np.testing.assert_array_equal(got, ref)
