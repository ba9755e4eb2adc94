"""QnnLegalize (relay.qnn.transform.Legalize) per target and the lookup-table helpers of
relay.qnn.op.canonicalizations: TVM's test_pass_qnn_legalize.py and
qnn/test_canonicalizations.py cases, restated."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.qnn.op import canonicalizations
from minitvm.relay.testing.temp_op_attr import TempOpAttr

c = relay.const


def _opt(expr, passes):
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes)(mod)
    return mod["main"]


def _requantize(x):
    return relay.qnn.op.requantize(x, c(1, "float32"), c(0, "int32"), c(1, "float32"),
                                   c(0, "int32"), out_dtype="int8")


def test_qnn_legalize_hook_replaces_call():
    x = relay.var("x", shape=(1, 4, 6, 6), dtype="int8")
    before = relay.Function([x], _requantize(x))

    def hook(attrs, inputs, types):
        return _requantize(relay.add(c(0, "int8"), inputs[0]))

    with TempOpAttr("qnn.requantize", "FTVMQnnLegalize", hook):
        # relay's Legalize does not look at FTVMQnnLegalize
        a = _opt(before, [relay.transform.Legalize()])
        tvm.ir.assert_structural_equal(a, _opt(before, [relay.transform.InferType()]))
        a = _opt(a, [relay.qnn.transform.Legalize()])
        x2 = relay.var("x", shape=(1, 4, 6, 6), dtype="int8")
        expected = relay.Function([x2], _requantize(relay.add(c(0, "int8"), x2)))
        tvm.ir.assert_structural_equal(a, _opt(expected, [relay.transform.InferType()]))


def _conv_mod(data_dtype, kernel_dtype):
    data = relay.var("data", shape=(1, 8, 10, 10), dtype=data_dtype)
    kernel = relay.var("kernel", shape=(16, 8, 3, 3), dtype=kernel_dtype)
    y = relay.qnn.op.conv2d(data, kernel, c(1, "int32"), c(1, "int32"), c(1.0, "float32"),
                            c(1.0, "float32"), kernel_size=(3, 3), channels=16)
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([data, kernel], y)))


def _dense_mod(data_dtype, kernel_dtype):
    data = relay.var("data", shape=(10, 3), dtype=data_dtype)
    kernel = relay.var("kernel", shape=(20, 3), dtype=kernel_dtype)
    y = relay.qnn.op.dense(data, kernel, c(1, "int32"), c(1, "int32"), c(1.0, "float32"),
                           c(1.0, "float32"), units=20)
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([data, kernel], y)))


AVX512 = ["llvm -mcpu=skylake-avx512", "llvm -mcpu=cascadelake"]
ARM_DOT = "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+v8.2a,+dotprod"
NO_FAST = ["llvm", "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu"]


def _legalized(mod, target):
    with tvm.target.Target(target):
        return relay.qnn.transform.Legalize()(mod)


def _run(mod, args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


@pytest.mark.parametrize("make,qop", [(_conv_mod, "qnn.conv2d"), (_dense_mod, "qnn.dense")])
def test_per_target(make, qop):
    rng = np.random.default_rng(0)
    for dtype in ("uint8", "int8"):
        mod = make(dtype, dtype)
        p = mod["main"].params
        args = [rng.integers(0 if dtype == "uint8" else -128, 127, size=[int(d) for d in
                                                                          v.type_annotation.shape]
                             ).astype(dtype) for v in p]
        ref = _run(mod, args)
        for target in AVX512:
            out = _legalized(mod, target)  # data to uint8 / kernel to int8
            assert "cast" in out.astext() and qop in out.astext()
            np.testing.assert_array_equal(_run(out, args), ref)
        # same dtypes: nothing to do with dot-product instructions
        tvm.ir.assert_structural_equal(_legalized(mod, ARM_DOT)["main"], mod["main"])
        for target in NO_FAST:
            out = _legalized(mod, target)
            assert "cast" in out.astext() and "qnn" not in out.astext()
            np.testing.assert_array_equal(_run(out, args), ref)
    mixed = make("uint8", "int8")
    tvm.ir.assert_structural_equal(_legalized(mixed, AVX512[0])["main"], mixed["main"])
    for target, keeps_qnn in ((ARM_DOT, True), (NO_FAST[0], False), (NO_FAST[1], False),
                              ("cuda", True)):
        text = _legalized(mixed, target).astext()
        assert "cast" in text and (qop in text) == keeps_qnn
    # no current target: unchanged
    tvm.ir.assert_structural_equal(relay.qnn.transform.Legalize()(mixed)["main"],
                                   mixed["main"])


def test_int8_data_shift_expected_program():
    mod = _dense_mod("int8", "int8")
    out = _legalized(mod, AVX512[0])
    data, kernel = (relay.var(v.name_hint, v.type_annotation) for v in mod["main"].params)
    shifted = relay.cast(relay.add(relay.cast(data, "int32"), c(128, "int32")), "uint8")
    expected = relay.qnn.op.dense(shifted, kernel, c(129, "int32"), c(1, "int32"),
                                  c(1.0, "float32"), c(1.0, "float32"), units=20)
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data, kernel], expected)))
    tvm.ir.assert_structural_equal(out["main"], expected["main"])


def test_no_fast_int8_expected_program():
    mod = _dense_mod("uint8", "int8")
    out = _legalized(mod, "llvm")
    data, kernel = (relay.var(v.name_hint, v.type_annotation) for v in mod["main"].params)
    x = relay.subtract(relay.cast(data, "int16"), c(1, "int16"))
    w = relay.subtract(relay.cast(kernel, "int16"), c(1, "int16"))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data, kernel], relay.nn.dense(x, w, units=20, out_dtype="int32"))))
    tvm.ir.assert_structural_equal(out["main"], expected["main"])


# ------------------------------------------------------------------ lookup tables
def _lut_check(in_scale, in_zp, out_scale, out_zp, in_dtype, out_dtype, func, input_arg=None,
               rtol=1e-7, atol=0.0):
    if input_arg is None:
        input_arg = relay.const(np.arange(0, 256, dtype="uint8").view(in_dtype))
    lookup = canonicalizations.create_integer_lookup_op(
        input_arg=input_arg, floating_point_func=func, in_scale=c(in_scale, "float32"),
        in_zero_point=c(in_zp, "int32"), out_scale=c(out_scale, "float32"),
        out_zero_point=c(out_zp, "int32"), in_dtype=in_dtype, out_dtype=out_dtype)
    result = canonicalizations.run_const_expr(lookup)
    data = input_arg.data.numpy()
    assert result.shape == data.shape and str(result.dtype) == out_dtype

    def deq(a, s, z):
        return (a.astype("int32") - z) * s

    np.testing.assert_allclose(func(deq(data, in_scale, in_zp)),
                               deq(result, out_scale, out_zp), rtol=rtol, atol=atol)


def _identity(a):
    return np.asarray(a, "float32")


@pytest.mark.parametrize("in_dtype,in_zp,out_dtype,out_zp", [
    ("int8", 0, "int8", 0), ("uint8", 128, "uint8", 128), ("int8", 0, "uint8", 128),
    ("uint8", 128, "int8", 0)])
def test_lookup_dtypes(in_dtype, in_zp, out_dtype, out_zp):
    _lut_check(1.0, in_zp, 1.0, out_zp, in_dtype, out_dtype, _identity)


@pytest.mark.parametrize("shape", [(2, 2, 8, 8), (2, 2, 64), (2, 128)])
def test_lookup_keeps_shapes(shape):
    arg = relay.const(np.arange(-128, 128).astype("int8").reshape(shape))
    _lut_check(0.015, 0, 16 / 256, 0, "int8", "int8", _identity, arg, rtol=0.01, atol=0.03)


def test_lookup_functions():
    arg = relay.const(np.arange(-128, 128).astype("int8"))
    _lut_check(1 / 64, 0, 1 / 128, 0, "int8", "int8", np.tanh, arg, rtol=0.01, atol=0.01)
    _lut_check(0.015, 0, 16 / 256, 0, "int8", "int8", np.exp, arg, rtol=0.01, atol=0.03)


def test_lookup_errors():
    with pytest.raises(ValueError, match="Only integer dtypes"):
        canonicalizations.create_integer_lookup_table(np.exp, c(1.0), c(0), c(1.0), c(0),
                                                      in_dtype="float32")
    with pytest.raises(ValueError, match="constant scalar input scale"):
        canonicalizations.create_integer_lookup_op(
            relay.var("x", shape=(4,), dtype="int8"), np.exp, relay.var("s", shape=()), c(0),
            c(1.0), c(0), in_dtype="int8", out_dtype="int8")


def test_qnn_unary_ops_canonicalize_to_tables():
    x = relay.var("x", shape=(16,), dtype="int8")
    for name in ("sqrt", "rsqrt", "exp", "erf", "sigmoid", "tanh", "abs", "log"):
        y = getattr(relay.qnn.op, name)(x, c(0.05), c(0), c(0.02), c(-3))
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
        canon = relay.qnn.transform.CanonicalizeOps()(mod)
        assert "gather" in canon.astext() and "qnn." not in canon.astext()
        data = np.arange(-8, 8).astype("int8") * 9
        np.testing.assert_array_equal(_run(canon, [data]), _run(mod, [data]))


def test_plain_llvm_leaves_host_fast_convs_to_canonicalize():
    """On a plain ``llvm`` target a conv that QnnCanonicalize's fast form takes on this host (a
    depthwise conv of a constant int8 weight: the exact float32 conv of the integers) stays a
    qnn.conv2d; a kernel from an input still becomes the int16 conv; the built result equals
    the integer reference."""
    rng = np.random.default_rng(3)
    data = relay.var("data", shape=(1, 16, 6, 6), dtype="uint8")
    w = rng.integers(-127, 128, size=(16, 1, 3, 3)).astype("int8")
    y = relay.qnn.op.conv2d(data, c(w), c(3, "int32"), c(0, "int32"), c(1.0, "float32"),
                            c(1.0, "float32"), kernel_size=(3, 3), channels=16, groups=16,
                            padding=(1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([data], y)))
    assert "qnn.conv2d" in _legalized(mod, "llvm").astext()
    wide = _conv_mod("uint8", "int8")
    assert "qnn.conv2d" not in _legalized(wide, "llvm").astext()
    x = rng.integers(0, 256, size=(1, 16, 6, 6)).astype("uint8")
    with tvm.target.Target("llvm"), tvm.transform.PassContext(opt_level=3):
        out = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(x).numpy()
    xs = np.pad(x.astype(np.int64) - 3, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 16, 6, 6), np.int64)
    for i in range(3):
        for j in range(3):
            ref += xs[:, :, i:i + 6, j:j + 6] * w[:, 0, i, j].reshape(1, 16, 1, 1)
    np.testing.assert_array_equal(out, ref)
