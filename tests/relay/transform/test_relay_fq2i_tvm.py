"""FakeQuantizationToInteger: TVM v0.19's cases (test_pass_fake_quantization_to_integer.py,
restated with small shapes) — the integer program runs bit-exact (or within one step where TVM
allows it) against the un-rewritten float program — plus Before/Expected programs of the
rewrite and the pass's options."""

import numpy as np
import pytest
from pass_test_util import run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.ir import TensorAffineType

qnn = relay.qnn.op
RNG = np.random.default_rng(0)


def _int(shape, dtype="int8", lo=-128, hi=127):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def _run(mod, args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def compare_fq_to_int(expr, args, allow_rounding_error=False, **opts):
    """TVM's check: the pass changes the program and both programs agree on ``args``."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    mod_int = run_pass(relay.transform.FakeQuantizationToInteger(**opts), mod)
    assert not tvm.ir.structural_equal(mod, mod_int)
    ref, got = _run(mod, args), _run(mod_int, args)
    if allow_rounding_error:
        assert np.all(np.abs(ref.astype("int32") - got.astype("int32")) <= 1)
    else:
        np.testing.assert_array_equal(ref, got)
    return mod_int


def _dq(x, scale, zp=0, axis=-1):
    return qnn.dequantize(x, relay.const(scale), relay.const(zp), axis=axis)


def _q(x, scale, zp=0, out_dtype="int8", axis=-1):
    return qnn.quantize(x, relay.const(scale), relay.const(zp), axis=axis, out_dtype=out_dtype)


X4 = (1, 3, 12, 12)


def _x(shape=X4, dtype="int8"):
    return relay.var("x", shape=shape, dtype=dtype)


# ------------------------------------------------------------------ TVM's numeric cases
@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
def test_conv(out_dtype):
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    op = relay.nn.conv2d(_dq(_x(), 2.0), _dq(w, 0.5), kernel_size=[3, 3])
    out = compare_fq_to_int(_q(op, 1.0, out_dtype=out_dtype), [_int(X4), _int((4, 3, 3, 3))])
    assert out["main"].body.op.name == "qnn.requantize"


@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
def test_conv_per_channel(out_dtype):
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    ws = relay.const(RNG.random(4).astype("float32"))
    op = relay.nn.conv2d(_dq(_x(), 2.0), qnn.dequantize(w, ws, relay.const([0] * 4), axis=0),
                         kernel_size=[3, 3], channels=4)
    compare_fq_to_int(_q(op, 1.0, out_dtype=out_dtype), [_int(X4), _int((4, 3, 3, 3))],
                      allow_rounding_error=True)


@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
def test_dense(out_dtype):
    x = relay.var("x", shape=(8, 16), dtype="int8")
    w = relay.var("w", shape=(12, 16), dtype="int8")
    op = _q(relay.nn.dense(_dq(x, 2.0), _dq(w, 0.5)), 1.0, out_dtype=out_dtype)
    compare_fq_to_int(op, [_int((8, 16)), _int((12, 16))])


@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
def test_batch_matmul(out_dtype):
    x = relay.var("x", shape=(1, 8, 16), dtype="int8")
    w = relay.var("w", shape=(1, 12, 16), dtype="int8")
    op = _q(relay.nn.batch_matmul(_dq(x, 2.0), _dq(w, 0.5)), 1.0, out_dtype=out_dtype)
    compare_fq_to_int(op, [_int((1, 8, 16)), _int((1, 12, 16))])


def test_transpose_conv_and_bias_add():
    x = relay.var("x", shape=(1, 12, 12, 3), dtype="int8")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    bias = relay.var("bias", shape=(4,), dtype="int32")
    xt = relay.transpose(_dq(x, 2.0), [0, 3, 1, 2])
    conv = relay.nn.conv2d(xt, _dq(w, 0.5), kernel_size=[3, 3])
    args = [_int((1, 12, 12, 3)), _int((4, 3, 3, 3))]
    compare_fq_to_int(_q(conv, 1.0), args)
    b = _int((4,), "int32", -32768, 32767)
    for bias_scale in (1.0, 2.0):  # matching and mismatching bias parameters
        op = relay.nn.bias_add(conv, _dq(bias, bias_scale))
        compare_fq_to_int(_q(op, 1.0), args + [b])


def test_bias_add_float_constant():
    x = relay.var("x", shape=(1, 4, 6), dtype="int8")
    op = relay.nn.bias_add(_dq(x, 0.5), relay.const(np.arange(4, dtype="float32")))
    out = compare_fq_to_int(_q(op, 0.5), [_int((1, 4, 6), lo=-60, hi=60)])
    assert relay.analysis.list_op_freqs(out)["qnn.quantize"] == 1  # the bias, quantized


@pytest.mark.parametrize("pool", ["max", "avg", "global_avg"])
def test_pools(pool):
    x = _dq(_x(), 2.0)
    op = {"max": lambda: relay.nn.max_pool2d(x, [3, 3]),
          "avg": lambda: relay.nn.avg_pool2d(x, [3, 3]),
          "global_avg": lambda: relay.nn.global_avg_pool2d(x)}[pool]()
    # the integer mean rounds to nearest (ties to even) as quantize rounds the float mean:
    # equal (a truncating mean was up to one step low)
    compare_fq_to_int(_q(op, 2.0), [_int(X4)])


def test_avgpool_requantizes_to_output_params():
    op = _q(relay.nn.avg_pool2d(_dq(_x(), 2.0), [3, 3]), 1.0)
    out = compare_fq_to_int(op, [_int(X4, lo=-60, hi=60)], allow_rounding_error=True)
    assert "qnn.requantize" in relay.analysis.list_op_freqs(out)


@pytest.mark.parametrize("build", [
    lambda x: relay.reshape(x, [1, 3, -1]),
    lambda x: relay.expand_dims(x, axis=1),
    lambda x: relay.squeeze(x, axis=[0]),
    lambda x: relay.strided_slice(x, begin=[0, 0, 0, 0], end=[1, 1, 6, 6]),
    lambda x: relay.split(x, axis=3, indices_or_sections=2)[0],
    lambda x: relay.split(x, axis=3, indices_or_sections=[3, 6, 9])[1],
    lambda x: relay.nn.batch_flatten(x),
    lambda x: relay.reshape(relay.transpose(x, [1, 0, 2, 3]), [3, -1]),
    lambda x: relay.nn.depth_to_space(relay.reshape(x, [1, 12, 3, 12]), 2),
    lambda x: relay.max(x, axis=1),
    lambda x: relay.min(x, axis=[2, 3], keepdims=True),
    lambda x: relay.image.resize2d(x, [6, 6], method="nearest_neighbor"),
    lambda x: relay.broadcast_to(relay.strided_slice(x, [0, 0, 0, 0], [1, 1, 12, 12]),
                                 [2, 3, 12, 12]),
    lambda x: relay.topk(x, k=2, axis=3, ret_type="values"),
], ids=["reshape", "expand_dims", "squeeze", "strided_slice", "split_sections",
        "split_indices", "batch_flatten", "transpose_reshape", "depth_to_space", "max", "min",
        "resize2d", "broadcast_to", "topk"])
def test_value_moving_ops(build):
    out = compare_fq_to_int(_q(build(_dq(_x(), 2.0)), 2.0), [_int(X4)])
    # same parameters in and out: no requantize, no float left
    freqs = relay.analysis.list_op_freqs(out)
    assert not {"qnn.requantize", "qnn.dequantize", "qnn.quantize"} & set(freqs)


def test_concat():
    xs = [relay.var(f"x{i}", shape=(1, 4), dtype="int8") for i in range(4)]
    cat = relay.concatenate([_dq(x, i + 0.5) for i, x in enumerate(xs)], axis=1)
    out = compare_fq_to_int(_q(cat, 3.5), [_int((1, 4)) for _ in range(4)])
    assert out["main"].body.op.name == "qnn.concatenate"


def test_clip():
    x = relay.var("x", shape=X4, dtype="uint8")
    op = relay.clip(qnn.dequantize(x, relay.const(2.0), relay.const(114)), 0, 6)
    op = qnn.quantize(op, relay.const(2.0), relay.const(114), out_dtype="uint8")
    out = compare_fq_to_int(op, [_int(X4, "uint8", 0, 255)])
    assert out["main"].body.op.name == "clip"
    assert (out["main"].body.attrs.a_min, out["main"].body.attrs.a_max) == (114, 117)


def test_clip_per_channel():
    x = relay.var("x", shape=X4, dtype="uint8")
    scales, zps = relay.const([1.0, 2.0, 3.0]), relay.const([96, 114, 128])
    op = relay.clip(qnn.dequantize(x, scales, zps, axis=1), 0, 6)
    op = qnn.quantize(op, scales, zps, out_dtype="uint8", axis=1)
    compare_fq_to_int(op, [_int(X4, "uint8", 0, 255)])


@pytest.mark.parametrize("per_channel", [False, True])
def test_relu(per_channel):
    x = relay.var("x", shape=X4, dtype="uint8")
    if per_channel:
        s, z = relay.const([1.0, 2.0, 3.0]), relay.const([96, 114, 128])
    else:
        s, z = relay.const(2.0), relay.const(114)
    op = relay.nn.relu(qnn.dequantize(x, s, z, axis=1))
    op = qnn.quantize(op, s, z, out_dtype="uint8", axis=1)
    compare_fq_to_int(op, [_int(X4, "uint8", 0, 255)])


def test_leaky_relu():
    op = _q(relay.nn.leaky_relu(_dq(_x(), 0.1, 3), 0.1), 0.05, 1)
    out = compare_fq_to_int(op, [_int(X4)], allow_rounding_error=True)
    assert out["main"].body.op.name == "qnn.requantize" or "qnn.leaky_relu" in out.astext()


@pytest.mark.parametrize("operator", [relay.add, relay.multiply, relay.subtract,
                                      relay.minimum, relay.maximum])
def test_binary(operator):
    x = _dq(_x(), 0.1)
    y = _dq(relay.var("y", shape=X4, dtype="int8"), 0.2)
    scale = 20.0 if operator is relay.multiply else 0.1
    op = _q(operator(x, y), scale)
    # multiply: a product landing exactly on .5 in float32 rounds to even in the float
    # program, while qnn.mul (float64 scale 0.1f*0.2f/20 slightly above 1/1000) rounds up
    compare_fq_to_int(op, [_int(X4, lo=-25, hi=25), _int(X4, lo=-25, hi=25)],
                      allow_rounding_error=operator is relay.multiply)


@pytest.mark.parametrize("operator", [relay.add, relay.multiply, relay.subtract,
                                      relay.minimum, relay.maximum])
def test_binary_const(operator):
    op = _q(operator(_dq(_x(), 0.1, 10), relay.const(1.0)), 0.1, 10)
    compare_fq_to_int(op, [_int(X4, lo=-25, hi=25)])


def test_pad():
    x = relay.var("x", shape=(1, 9, 8), dtype="int8")
    op = relay.nn.pad(_dq(x, 1.0, 10), [[0, 0], [0, 1], [0, 0]], 0.0)
    compare_fq_to_int(_q(op, 1.0, 10), [_int((1, 9, 8), lo=-25, hi=25)])


def test_mean():
    op = _q(relay.mean(_dq(_x(), 0.5), axis=[2, 3]), 0.5)
    compare_fq_to_int(op, [_int(X4)], allow_rounding_error=True)


@pytest.mark.parametrize("fn,in_scale,out_scale,lo,hi", [
    (relay.tanh, 1 / 64, 1 / 128, -128, 127),
    (relay.sigmoid, 1 / 16, 1 / 256, -128, 127),
    (relay.exp, 0.015, 16 / 256, -128, 127),
    (relay.erf, 1 / 64, 1 / 128, -128, 127),
    (relay.sqrt, 0.1, 0.05, 1, 127),
    (relay.rsqrt, 0.1, 0.05, 1, 127),
    (relay.log, 0.1, 0.05, 1, 127),
    (relay.abs, 0.1, 0.1, -128, 127),
])
def test_unary_lookup_table(fn, in_scale, out_scale, lo, hi):
    op = _q(fn(_dq(_x(), in_scale)), out_scale)
    out = compare_fq_to_int(op, [_int(X4, lo=lo, hi=hi)])
    assert out["main"].body.op.name == "qnn." + fn.__name__
    canon = relay.transform.QnnCanonicalize()(out)
    assert "gather" in relay.analysis.list_op_freqs(canon)
    np.testing.assert_array_equal(_run(canon, [_int(X4, lo=lo, hi=hi)]).shape, X4)


# ------------------------------------------------------------------ structure
def _infer(expr):
    return relay.transform.InferType()(tvm.IRModule.from_expr(expr))


def test_conv_expected_program():
    x = relay.var("x", shape=X4, dtype="int8")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    before = _q(relay.nn.conv2d(_dq(x, 2.0), _dq(w, 0.5), kernel_size=[3, 3]), 1.0, 0, "uint8")
    conv = qnn.conv2d(x, w, relay.const(0), relay.const(0), relay.const(2.0), relay.const(0.5),
                      kernel_size=[3, 3], channels=None)
    expected = qnn.requantize(conv, relay.const(1.0), relay.const(0), relay.const(1.0),
                              relay.const(0), axis=1, out_dtype="uint8")
    out = run_pass(relay.transform.FakeQuantizationToInteger(), _infer(before))
    tvm.ir.assert_structural_equal(out["main"], _infer(expected)["main"])


def test_identity_region_expected_program():
    x = relay.var("x", shape=X4, dtype="int8")
    before = _q(relay.reshape(relay.transpose(_dq(x, 2.0), [1, 0, 2, 3]), [3, -1]), 2.0)
    expected = relay.reshape(relay.transpose(x, [1, 0, 2, 3]), [3, -1])
    out = run_pass(relay.transform.FakeQuantizationToInteger(), _infer(before))
    tvm.ir.assert_structural_equal(out["main"], _infer(expected)["main"])


def test_binary_expected_program():
    x, y = _x(), relay.var("y", shape=X4, dtype="int8")
    before = _q(relay.add(_dq(x, 0.1), _dq(y, 0.2)), 0.1)
    c = relay.const
    expected = qnn.add(x, y, c(0.1), c(0), c(0.2), c(0), c(0.1), c(0))
    out = run_pass(relay.transform.FakeQuantizationToInteger(), _infer(before))
    tvm.ir.assert_structural_equal(out["main"], _infer(expected)["main"])


def test_maximum_requantizes_both_inputs():
    x, y = _x(), relay.var("y", shape=X4, dtype="int8")
    before = _q(relay.maximum(_dq(x, 0.1), _dq(y, 0.2)), 0.1)
    c = relay.const
    expected = relay.maximum(qnn.requantize(x, c(0.1), c(0), c(0.1), c(0), out_dtype="int8"),
                             qnn.requantize(y, c(0.2), c(0), c(0.1), c(0), out_dtype="int8"))
    out = run_pass(relay.transform.FakeQuantizationToInteger(), _infer(before))
    tvm.ir.assert_structural_equal(out["main"], _infer(expected)["main"])


def test_region_outside_stays():
    # a float op fed by a plain variable (not a dequantize) ends the region: unchanged
    x, f = _x(), relay.var("f", shape=X4)
    before = _infer(_q(relay.add(_dq(x, 0.5), f), 0.5))
    out = run_pass(relay.transform.FakeQuantizationToInteger(), before)
    tvm.ir.assert_structural_equal(out["main"], before["main"])


def test_unsupported_op_hard_fail():
    before = _infer(_q(relay.cos(_dq(_x(), 0.5)), 0.5))
    out = relay.transform.FakeQuantizationToInteger()(before)
    tvm.ir.assert_structural_equal(out["main"], before["main"])
    with pytest.raises(ValueError, match="no rewrite rule for cos"):
        relay.transform.FakeQuantizationToInteger(hard_fail=True)(before)


def test_failing_rule_skips_region_or_raises():
    # topk returning indices cannot stay quantized: the rule raises, the region is kept
    before = _infer(_q(relay.topk(_dq(_x(), 0.5), k=2, ret_type="values") * relay.const(1.0),
                       0.5))
    before_bad = _infer(_q(relay.cast(relay.topk(_dq(_x(), 0.5), k=2, ret_type="indices"),
                                      "float32"), 0.5))
    assert relay.transform.FakeQuantizationToInteger()(before_bad)["main"].body.op.name == \
        "qnn.quantize"
    out = relay.transform.FakeQuantizationToInteger()(before)
    assert out["main"].body.op.name == "qnn.mul"


def test_optional_ops_and_custom_rule():
    from minitvm.ir.op import Op

    op = Op.get("negative")
    seen = []

    def neg_rule(expr, type_map):
        seen.append(type_map[expr.args[0]])
        t = type_map[expr.args[0]]
        return [relay.negative(expr.args[0]), t]

    op.set_attr("FTVMOptionalFakeQuantizationToInteger", neg_rule, 99)
    try:
        before = _infer(_q(relay.negative(_dq(_x(), 0.5)), 0.5))
        kept = relay.transform.FakeQuantizationToInteger()(before)
        tvm.ir.assert_structural_equal(kept["main"], before["main"])
        out = relay.transform.FakeQuantizationToInteger(optional_qnn_ops=["negative"])(before)
        tvm.ir.assert_structural_equal(out["main"], _infer(relay.negative(_x()))["main"])
        assert isinstance(seen[0], TensorAffineType) and seen[0].dtype == "int8"
    finally:
        op.reset_attr("FTVMOptionalFakeQuantizationToInteger")


def test_qat_converts_single_ops():
    # conv2d has dequantized inputs but its result feeds an unsupported op (cos): only QAT
    # converts it, ending with a dequantize
    x = relay.var("x", shape=X4, dtype="int8")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    conv = relay.nn.conv2d(_dq(x, 2.0), _dq(w, 0.5), kernel_size=[3, 3])
    before = _infer(_q(relay.cos(conv), 1.0))
    plain = relay.transform.FakeQuantizationToInteger()(before)
    tvm.ir.assert_structural_equal(plain["main"], before["main"])
    out = run_pass(relay.transform.FakeQuantizationToInteger(use_qat=True), before)
    c = relay.const
    qconv = qnn.conv2d(x, w, c(0), c(0), c(2.0), c(0.5), kernel_size=[3, 3], channels=None)
    expected = _q(relay.cos(qnn.dequantize(qconv, c(1.0), c(0), axis=1)), 1.0)
    tvm.ir.assert_structural_equal(out["main"], _infer(expected)["main"])
    args = [_int(X4, lo=-5, hi=5), _int((4, 3, 3, 3), lo=-5, hi=5)]
    np.testing.assert_array_equal(_run(before, args), _run(out, args))


def test_pass_info_and_stats():
    p = relay.transform.FakeQuantizationToInteger()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "FakeQuantizationToInteger", 0, ["InferType", "DivToMul"])


def test_list_fake_quantized_op_freqs():
    x = relay.var("x", shape=X4, dtype="int8")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    y = relay.nn.relu(relay.nn.conv2d(_dq(x, 2.0), _dq(w, 0.5), kernel_size=[3, 3]))
    y = _q(relay.nn.max_pool2d(y, [2, 2]), 1.0)
    z = _q(relay.nn.relu(relay.reshape(_dq(y, 1.0), [1, -1])), 1.0)
    mod = _infer(relay.add(relay.cos(_dq(z, 1.0)), relay.const(1.0)))
    assert relay.analysis.list_fake_quantized_op_freqs(mod) == {
        "nn.conv2d": 1, "nn.relu": 2, "nn.max_pool2d": 1, "reshape": 1}


def test_deep_region_chain():
    n = 100_000
    y = _dq(relay.var("x", shape=(2, 3), dtype="int8"), 0.5)
    for _ in range(n):
        y = relay.transpose(y, [1, 0])
    mod = _infer(_q(y, 0.5))
    out = relay.transform.FakeQuantizationToInteger()(mod)
    body, depth = out["main"].body, 0
    while isinstance(body, relay.Call):
        assert body.op.name == "transpose"
        body, depth = body.args[0], depth + 1
    assert depth == n and isinstance(body, relay.Var)


@pytest.mark.parametrize("build", [
    lambda a, b: relay.add(a, b),
    lambda a, b: relay.concatenate([a, b], axis=1),
], ids=["add", "concatenate"])
def test_one_tensor_two_dequantizations(build):
    x = _x()
    args = [_int(X4)]
    # different parameters: left alone (TVM would give both uses one type: wrong numbers)
    before = _infer(_q(build(_dq(x, 2.0), _dq(x, 0.5)), 1.0))
    out = relay.transform.FakeQuantizationToInteger()(before)
    tvm.ir.assert_structural_equal(out["main"], before["main"])
    with pytest.raises(ValueError, match="dequantized with different parameters"):
        relay.transform.FakeQuantizationToInteger(hard_fail=True)(before)
    # the same parameters: converted (qnn.add requantizes each side before adding, as TVM's
    # lowering does: within one step of the float program)
    compare_fq_to_int(_q(build(_dq(x, 0.5), _dq(x, 0.5)), 1.0), args, allow_rounding_error=True)


def _compiled_cases():
    x, y = _x(), relay.var("y", shape=X4, dtype="int8")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    xs, ws = _int(X4), _int((4, 3, 3, 3))
    return {
        "conv": (_q(relay.nn.conv2d(_dq(x, 2.0), _dq(w, 0.5), kernel_size=[3, 3]), 1.0),
                 [xs, ws]),
        "concat": (_q(relay.concatenate([_dq(x, 2.0), _dq(y, 1.5)], axis=1), 3.5), [xs, xs]),
        "add": (_q(relay.add(_dq(x, 0.1), _dq(y, 0.2)), 0.1), [xs // 5, xs // 5]),
        "tanh": (_q(relay.tanh(_dq(x, 1 / 64)), 1 / 128), [xs]),
        "clip_maxpool": (_q(relay.nn.max_pool2d(relay.clip(_dq(x, 2.0), 0, 6), [3, 3]), 2.0),
                         [xs]),
    }


@pytest.mark.parametrize("case", ["conv", "concat", "add", "tanh", "clip_maxpool"])
def test_compiled_vm_llvm(case):
    # TVM's own check: both programs through the VM with the llvm back end
    expr, args = _compiled_cases()[case]
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    mod_int = relay.transform.FakeQuantizationToInteger()(mod)
    assert not tvm.ir.structural_equal(mod, mod_int)

    def run(m):
        return relay.create_executor("vm", mod=m, device=tvm.cpu(), target="llvm").evaluate()(
            *args).numpy()

    np.testing.assert_array_equal(run(mod), run(mod_int))


def test_rule_helpers_at_tvms_module_path():
    from minitvm.ir.op import Op
    from minitvm.relay.transform.fake_quantization_to_integer import register_unary_identity

    before = _infer(_q(relay.reverse(_dq(_x(), 0.5), axis=1), 0.5))
    assert relay.transform.FakeQuantizationToInteger()(before)["main"].body.op.name == \
        "qnn.quantize"
    register_unary_identity("reverse")
    try:
        out = compare_fq_to_int(_q(relay.reverse(_dq(_x(), 0.5), axis=1), 0.5), [_int(X4)])
        tvm.ir.assert_structural_equal(out["main"], _infer(relay.reverse(_x(), axis=1))["main"])
    finally:
        Op.get("reverse").reset_attr("FTVMFakeQuantizationToInteger")
