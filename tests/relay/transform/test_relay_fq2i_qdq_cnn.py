"""FakeQuantizationToInteger on a QAT CNN's QDQ graph, as ``from_onnx(convert_config=
{"qdq_as_qnn": True})`` imports a fake-quantized residual block: per-channel int8 weights, a
float bias, uint8 activations (zero point 128 before the residual add, 0 after a relu). The
rewritten program is checked against the expected integer program and against the float
fake-quant program (interpreter, and the built module) within one quantization step."""

import numpy as np
from pass_test_util import run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import post_order_visit

qnn = relay.qnn.op
RNG = np.random.default_rng(7)
C, X = 16, (1, 8, 10, 10)
IN_SCALE, ACT = 1 / 64, 0.05


def _c(v, dtype=None):
    return relay.const(np.asarray(v, dtype) if dtype else v)


def _qdq_weight(shape):
    """A per-output-channel symmetric int8 weight and its scales (the dequantize reads them)."""
    w = RNG.integers(-127, 128, size=shape).astype("int8")
    scale = (RNG.uniform(0.5, 1.5, size=shape[0]) / 127).astype("float32")
    return w, scale


def _dq_weight(w, scale):
    return qnn.dequantize(_c(w), _c(scale), _c(np.zeros(len(scale), "int32")), axis=0)


def _fq(x, scale, zp):
    """quantize -> dequantize of ``x`` to uint8 (torch's fake_quantize_per_tensor_affine)."""
    q = qnn.quantize(x, _c(np.float32(scale)), _c(np.int32(zp)), axis=1, out_dtype="uint8")
    return qnn.dequantize(q, _c(np.float32(scale)), _c(np.int32(zp)), axis=1)


def _conv(x, w, scale, bias, k):
    y = relay.nn.conv2d(x, _dq_weight(w, scale), padding=[k // 2] * 4, channels=C,
                        kernel_size=[k, k])
    return relay.nn.bias_add(y, _c(bias))


def residual_block():
    """x -> fq -> [conv3x3 + bias -> relu -> fq] + [conv1x1 + bias -> fq(zp 128)] -> relu -> fq
    -> max_pool -> fq: what the QAT CNN's blocks export to."""
    x = relay.var("x", shape=X, dtype="float32")
    xin = _fq(x, IN_SCALE, 128)
    (wa, sa), (wb, sb) = _qdq_weight((C, X[1], 3, 3)), _qdq_weight((C, X[1], 1, 1))
    ba, bb = (RNG.normal(0, 0.2, C).astype("float32") for _ in range(2))
    a = _fq(relay.nn.relu(_conv(xin, wa, sa, ba, 3)), ACT, 0)
    b = _fq(_conv(xin, wb, sb, bb, 1), ACT, 128)
    y = _fq(relay.nn.relu(relay.add(a, b)), ACT, 0)
    return _fq(relay.nn.max_pool2d(y, pool_size=[2, 2], strides=[2, 2]), ACT, 0)


def _infer(expr):
    return relay.transform.InferType()(tvm.IRModule.from_expr(expr))


def _ops(mod) -> list:
    """(op name, output dtype) of each call."""
    calls = []
    post_order_visit(mod["main"], lambda e: calls.append((e.op.name, e.checked_type.dtype))
                     if isinstance(e, relay.Call) and hasattr(e.op, "name") else None)
    return calls


def test_conv_bias_relu_expected_program():
    x = relay.var("x", shape=X, dtype="float32")
    w, s = _qdq_weight((C, X[1], 3, 3))
    bias = RNG.normal(0, 0.2, C).astype("float32")
    before = _fq(relay.nn.relu(_conv(_fq(x, IN_SCALE, 128), w, s, bias, 3)), ACT, 0)

    xq = qnn.quantize(x, _c(np.float32(IN_SCALE)), _c(np.int32(128)), axis=1,
                      out_dtype="uint8")
    zeros = np.zeros(C, "int32")
    conv = qnn.conv2d(xq, _c(w), _c(np.int32(128)), _c(zeros), _c(np.float32(IN_SCALE)),
                      _c(s), kernel_size=[3, 3], channels=C, padding=[1, 1, 1, 1])
    acc_scale = _c(np.float32(IN_SCALE) * s)
    qbias = qnn.quantize(_c(bias), acc_scale, _c(zeros), axis=0, out_dtype="int32")
    relu = relay.maximum(relay.nn.bias_add(conv, qbias), _c(zeros.reshape(1, C, 1, 1)))
    out = qnn.requantize(relu, acc_scale, _c(zeros), _c(np.float32(ACT)), _c(np.int32(0)),
                         axis=1, out_dtype="uint8")
    expected = qnn.dequantize(out, _c(np.float32(ACT)), _c(np.int32(0)), axis=1)

    got = run_pass(relay.transform.FakeQuantizationToInteger(), _infer(before))
    tvm.ir.assert_structural_equal(got["main"], _infer(expected)["main"])


def test_residual_add_relu_expected_program():
    a, b = (relay.var(n, shape=X, dtype="uint8") for n in "ab")
    c = _c

    def dq(v, zp):
        return qnn.dequantize(v, c(np.float32(ACT)), c(np.int32(zp)), axis=1)

    q = qnn.quantize(relay.nn.relu(relay.add(dq(a, 0), dq(b, 128))), c(np.float32(ACT)),
                     c(np.int32(0)), axis=1, out_dtype="uint8")
    added = qnn.add(a, b, c(np.float32(ACT)), c(np.int32(0)), c(np.float32(ACT)),
                    c(np.int32(128)), c(np.float32(ACT)), c(np.int32(0)), lhs_axis=1,
                    rhs_axis=1)
    expected = relay.maximum(added, c(np.uint8(0)))
    got = run_pass(relay.transform.FakeQuantizationToInteger(), _infer(q))
    tvm.ir.assert_structural_equal(got["main"], _infer(expected)["main"])


def test_residual_block_is_integer_and_within_one_step():
    mod = _infer(residual_block())
    got = run_pass(relay.transform.FakeQuantizationToInteger(), mod)
    calls = _ops(got)
    float_ops = [op for op, dt in calls if dt == "float32" and op != "qnn.dequantize"]
    assert not float_ops, f"left in float: {float_ops}"
    ops = [op for op, _ in calls]
    assert ops.count("qnn.conv2d") == 2 and ops.count("qnn.add") == 1
    assert ops.count("qnn.dequantize") == 1  # the output's
    assert ops.count("qnn.quantize") == 3  # the input and the two float biases
    assert ("nn.max_pool2d", "uint8") in calls
    x = RNG.normal(0, 1, X).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
    out = relay.create_executor("debug", mod=got).evaluate()(x).numpy()
    with tvm.transform.PassContext(opt_level=3):
        built = relay.create_executor("graph", mod=got, target="llvm").evaluate()(x).numpy()
    np.testing.assert_array_equal(built, out)
    # the float program rounds each sum of dequantized terms once; the integer one requantizes
    # the accumulator and the add's inputs: at most one step of the output apart
    assert np.abs(out - ref).max() <= ACT * 1.001
    assert np.mean(out != ref) < 0.05
