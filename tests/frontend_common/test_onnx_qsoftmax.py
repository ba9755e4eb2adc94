"""onnxruntime's integer softmax (frontend_common.onnx_qsoftmax) and both importers' use of it:
com.microsoft.QLinearSoftmax, and DequantizeLinear -> Softmax -> QuantizeLinear (which ORT's
QDQ fusion runs as one), give ORT's integers exactly; a Softmax read by more than its
QuantizeLinear keeps the float softmax."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the models are ONNX")
ort = pytest.importorskip("onnxruntime", reason="ORT is the reference")

from onnx import TensorProto as P  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.frontend_common.onnx_qsoftmax import nan_rows, qsoftmax_plan, reference  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx as relax_from_onnx  # noqa: E402

SHAPE = (2, 3, 40)
# (8-bit dtype, input zero point, output zero point)
DTYPES = [("uint8", 131, 0), ("int8", -3, -128)]


def _model(nodes, inits, in_dtype, out_name, out_dtype):
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", in_dtype, SHAPE)],
        [helper.make_tensor_value_info(out_name, out_dtype, SHAPE)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("com.microsoft", 1)])


def _qdq_softmax(dtype, xz, yz, axis=-1, second_use=False):
    """x -> Q -> DQ -> Softmax(axis) -> Q -> DQ (float in, float out); ``second_use`` adds a
    graph output reading the softmax itself."""
    n = helper.make_node
    nodes = [n("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             n("DequantizeLinear", ["q", "xs", "xz"], ["d"]),
             n("Softmax", ["d"], ["p"], axis=axis),
             n("QuantizeLinear", ["p", "ys", "yz"], ["pq"]),
             n("DequantizeLinear", ["pq", "ys", "yz"], ["y"])]
    inits = {"xs": np.float32(0.043), "xz": np.array(xz, dtype),
             "ys": np.float32(1 / 255), "yz": np.array(yz, dtype)}
    m = _model(nodes, inits, P.FLOAT, "y", P.FLOAT)
    if second_use:
        m.graph.output.append(helper.make_tensor_value_info("p", P.FLOAT, SHAPE))
    return m


def _qlinear_softmax(dtype, xz, yz):
    code = P.UINT8 if dtype == "uint8" else P.INT8
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", axis=-1, opset=13)
    inits = {"xs": np.float32(0.061), "xz": np.array(xz, dtype),
             "ys": np.float32(1 / 255), "yz": np.array(yz, dtype)}
    return _model([node], inits, code, "y", code)


def _ort(model, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _relay(model, x):
    mod, params = relay.frontend.from_onnx(model, shape={"x": SHAPE})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    return g.get_output(0).numpy(), mod.astext()


def _relax(model, x):
    """(Relax's output, the names of the built module's kernels: a float softmax the
    integer one made dead is dropped there)."""
    mod = relax_from_onnx(model, shape_dict={"x": SHAPE})
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(mod, "llvm")
        built = relax.get_pipeline("default_build")(mod)
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x))
    out = out[0] if isinstance(out, (list, tuple)) else out
    return out.numpy(), " ".join(g.name_hint for g in built.functions)


def _input(dtype=None, seed=0):
    rng = np.random.default_rng(seed)
    if dtype is None:
        return (rng.standard_normal(SHAPE) * 2.5).astype("float32")
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    return rng.integers(lo, hi, SHAPE).astype(dtype)


@pytest.mark.parametrize("dtype,xz,yz", DTYPES)
def test_qlinear_softmax_reference_and_importers_equal_ort(dtype, xz, yz):
    m, x = _qlinear_softmax(dtype, xz, yz), _input(dtype)
    want = _ort(m, x)
    plan = qsoftmax_plan(dtype, np.float32(0.061), dtype, np.float32(1 / 255),
                         np.array(yz, dtype), SHAPE[-1])
    assert plan.y_mult == 254  # (floor(1 / (1/255)) in float32: ORT's multiplier)
    np.testing.assert_array_equal(reference(x, plan), want)
    for run in (_relay, _relax):
        got, text = run(m, x)
        np.testing.assert_array_equal(got, want)
        assert "take" in text and "softmax" not in text


@pytest.mark.parametrize("dtype,xz,yz", DTYPES)
@pytest.mark.parametrize("axis", [-1, 1])
def test_qdq_softmax_takes_ort_integer_kernel(dtype, xz, yz, axis):
    m, x = _qdq_softmax(dtype, xz, yz, axis), _input()
    want = _ort(m, x)
    for run in (_relay, _relax):
        got, text = run(m, x)
        np.testing.assert_array_equal(got, want)
        assert "take" in text and "softmax" not in text
    # (a float softmax quantized is a step off ORT somewhere on this input)
    d = (x / np.float32(0.043)).round().clip(*((0, 255) if dtype == "uint8" else (-128, 127)))
    d = (d - xz) * np.float32(0.043)
    e = np.exp(d - d.max(axis, keepdims=True))
    f = np.clip(np.rint(e / e.sum(axis, keepdims=True) * 255) + yz, -128, 255)
    assert np.any((f - yz) / 255 != want)


def test_softmax_with_another_reader_keeps_float_softmax():
    m, x = _qdq_softmax("uint8", 131, 0, second_use=True), _input()
    for run in (_relay, _relax):
        _, text = run(m, x)
        assert "softmax" in text and "take" not in text


def test_plan_refuses_what_ort_kernel_does_not_cover():
    ok = dict(x_dtype="uint8", x_scale=np.float32(0.1), y_dtype="uint8",
              y_scale=np.float32(1 / 256), y_zp=np.array(0, "uint8"), reduce_len=8)
    assert qsoftmax_plan(**ok).y_mult == 256
    for bad in (dict(x_scale=np.float32(np.inf)), dict(x_scale=None),
                dict(y_scale=np.array([0.1, 0.2], "float32")), dict(x_dtype="int16"),
                dict(y_zp=np.array(0, "int8")), dict(reduce_len=None)):
        assert qsoftmax_plan(**{**ok, **bad}) is None, bad
    # an int8 zero point above -128 lets a result pass 127, which wraps as ORT's cast does
    wide = qsoftmax_plan("int8", np.float32(0.1), "int8", np.float32(1 / 255),
                         np.array(0, "int8"), 4)
    assert wide.wraps
    q = np.array([[-128, -128, -128, 127]], "int8")
    assert reference(q, wide)[0, 3] == np.int8(np.int64(254) - 256)


def _masked_softmax(mask, quantized):
    """x + mask -> Softmax over the last axis. ``quantized``: as onnxruntime's quantizer
    writes it for a -inf mask (its calibrated range is infinite, so the scale is inf): x
    through Q/DQ, the mask an int8 zeros initializer DequantizeLinear'd with scale inf (NaN
    everywhere), the sum through Q/DQ of scale inf, the softmax through Q/DQ to int8."""
    n = helper.make_node
    if not quantized:
        m = _model([n("Add", ["x", "mask"], ["s"]), n("Softmax", ["s"], ["y"], axis=-1)],
                   {"mask": mask}, P.FLOAT, "y", P.FLOAT)
        return m
    nodes = [n("QuantizeLinear", ["x", "xs", "z"], ["q"]),
             n("DequantizeLinear", ["q", "xs", "z"], ["d"]),
             n("DequantizeLinear", ["mq", "inf", "z"], ["md"]),
             n("Add", ["d", "md"], ["s"]),
             n("QuantizeLinear", ["s", "inf", "z"], ["sq"]),
             n("DequantizeLinear", ["sq", "inf", "z"], ["sd"]),
             n("Softmax", ["sd"], ["p"], axis=-1),
             n("QuantizeLinear", ["p", "ys", "yz"], ["pq"]),
             n("DequantizeLinear", ["pq", "ys", "yz"], ["y"])]
    inits = {"xs": np.float32(0.043), "z": np.array(0, "int8"), "inf": np.float32(np.inf),
             "mq": np.zeros(mask.shape, "int8"), "ys": np.float32(1 / 255),
             "yz": np.array(-128, "int8")}
    return _model(nodes, inits, P.FLOAT, "y", P.FLOAT)


def _causal_mask():
    """-inf above a band of the diagonal; the last row masked whole (its softmax is NaN)."""
    rows, cols = SHAPE[-2:]
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    mask = np.where(j > 3 * i + 2, -np.inf, 0.0).astype("float32")
    mask[-1] = -np.inf
    return mask


def test_minus_inf_masked_softmax_equals_ort():
    # the masked lanes are exp(-inf): native exp zeroes them without a denormal (a microcode
    # assist per lane on Intel; benchmarks/sweep_quantized_options.py's gpt model)
    m, x = _masked_softmax(_causal_mask(), quantized=False), _input()
    want = _ort(m, x)
    assert np.isnan(want[:, -1]).all() and np.isfinite(want[:, :-1]).all()
    for run in (_relay, _relax):
        np.testing.assert_allclose(run(m, x)[0], want, rtol=2e-6, atol=1e-7)


def test_mask_quantized_with_infinite_scale_equals_ort():
    # NaN + x is NaN, which quantizes to -128; dequantized with scale inf that is -inf, so
    # every row is all -inf, its softmax NaN, quantized -128: the zero point (ORT agrees)
    m, x = _masked_softmax(_causal_mask(), quantized=True), _input()
    want = _ort(m, x)
    assert (want == 0).all()
    for run in (_relay, _relax):
        np.testing.assert_array_equal(run(m, x)[0], want)


@pytest.mark.parametrize("dtype,xz,yz", [("uint8", 0, 7), ("int8", 5, -128)])
def test_qlinear_softmax_of_infinite_scale_is_ort_zero(dtype, xz, yz):
    # x_scale +inf (a QOperator model's -inf mask): ORT's exponentials are NaN at each row's
    # maximum, so every result is NaN, which its cast makes 0 whatever the zero point
    m = helper.make_model(helper.make_graph(
        [helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"],
                          domain="com.microsoft", axis=-1, opset=13)], "g",
        [helper.make_tensor_value_info("x", P.UINT8 if dtype == "uint8" else P.INT8, SHAPE)],
        [helper.make_tensor_value_info("y", P.UINT8 if dtype == "uint8" else P.INT8, SHAPE)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in {
            "xs": np.float32(np.inf), "xz": np.array(xz, dtype), "ys": np.float32(1 / 256),
            "yz": np.array(yz, dtype)}.items()]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    x = _input(dtype)
    want = _ort(m, x)
    assert (want == 0).all() and nan_rows(np.float32(np.inf)) and not nan_rows(np.float32(3))
    for run in (_relay, _relax):
        got, text = run(m, x)
        np.testing.assert_array_equal(got, want)
        assert "softmax" not in text and "take" not in text
