"""relay.frontend.from_onnx: converted programs, numerics against ONNX Runtime, folding of shape
subgraphs, error messages, and a 100,000-node chain."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_resize_cases import RESIZES  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_, OpNotImplemented  # noqa: E402
from minitvm.relay.frontend.onnx import NeedsConstantInput  # noqa: E402

F = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s)
                                       for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def run_relay(mod, params, feeds, compiled=False):
    if compiled:
        from frontend_models import build_and_run

        return build_and_run(mod, params, feeds)
    run = relay.create_executor("debug", mod=mod).evaluate()
    names = [p.name_hint for p in mod["main"].params]
    args = [feeds[n] if n in feeds else params[n] for n in names]
    out = run(*args)
    return [o.numpy() for o in out] if not hasattr(out, "numpy") else [out.numpy()]


def ort_run(model, feeds):
    ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check_against_ort(model, feeds, compiled=False, rtol=1e-5, atol=1e-5):
    ref = ort_run(model, feeds)
    mod, params = relay.frontend.from_onnx(model)
    got = run_relay(mod, params, feeds, compiled)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
    return mod


rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype("float32")


# ------------------------------------------------------------------ converted programs
def test_conv_relu_structure():
    w = rand(8, 3, 3, 3)
    b = rand(8)
    model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", ["c"], ["y"])],
                       [("x", F, [1, 3, 8, 8])], [("y", F, [1, 8, 8, 8])],
                       inits=[("w", w), ("b", b)])
    mod, params = relay.frontend.from_onnx(model, freeze_params=False)
    x = relay.var("x", shape=(1, 3, 8, 8))
    wv = relay.var("w", shape=(8, 3, 3, 3))
    bv = relay.var("b", shape=(8,))
    body = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(
        x, wv, padding=(1, 1, 1, 1), channels=8, kernel_size=(3, 3)), bv))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, wv, bv],
                                                                                 body)))
    assert tvm.ir.structural_equal(mod["main"], expected["main"])
    assert set(params) == {"w", "b"}
    np.testing.assert_array_equal(params["w"].numpy(), w)


def test_shape_subgraph_folds_to_constant_reshape():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write flatten
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["i0"], value=numpy_helper.from_array(
            np.array(0, "int64"))),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    model = make_model(nodes, [("x", F, [2, 3, 4])], [("y", F, [2, 12])],
                       inits=[("ax", np.array([0], "int64")), ("m1", np.array([-1], "int64"))])
    mod, _ = relay.frontend.from_onnx(model)
    x = relay.var("x", shape=(2, 3, 4))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.reshape(x, (2, 12)))))
    assert tvm.ir.structural_equal(mod["main"], expected["main"])


def test_freeze_params_true_embeds_constants():
    model = make_model([helper.make_node("Add", ["x", "c"], ["y"])], [("x", F, [3])],
                       [("y", F, [3])], inits=[("c", np.ones(3, "float32"))])
    mod, params = relay.frontend.from_onnx(model)
    assert params == {}
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    np.testing.assert_allclose(run_relay(mod, params, {"x": np.zeros(3, "float32")})[0],
                               np.ones(3))


# ------------------------------------------------------------------ numerics vs onnxruntime
def _single(op, ins, outs, attrs=None, inits=(), opset=17):
    return make_model([helper.make_node(op, [n for n, *_ in ins] + [n for n, _ in inits],
                                        [n for n, *_ in outs], **(attrs or {}))],
                      ins, outs, inits, opset)


CASES = {
    "conv_same_upper_stride2": (
        _single("Conv", [("x", F, [1, 2, 7, 9])], [("y", F, None)],
                {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, [("w", rand(4, 2, 3, 3))]),
        {"x": rand(1, 2, 7, 9)}),
    "conv_grouped_dilated": (
        _single("Conv", [("x", F, [1, 4, 9, 9])], [("y", F, None)],
                {"group": 2, "dilations": [2, 2], "pads": [1, 0, 2, 1]},
                [("w", rand(6, 2, 3, 3))]),
        {"x": rand(1, 4, 9, 9)}),
    "conv1d": (
        _single("Conv", [("x", F, [2, 3, 10])], [("y", F, None)], {"pads": [1, 1]},
                [("w", rand(5, 3, 3))]),
        {"x": rand(2, 3, 10)}),
    "conv_transpose_output_padding": (
        _single("ConvTranspose", [("x", F, [1, 3, 5, 5])], [("y", F, None)],
                {"strides": [2, 2], "output_padding": [1, 1], "pads": [1, 1, 1, 1]},
                [("w", rand(3, 2, 3, 3))]),
        {"x": rand(1, 3, 5, 5)}),
    "gemm_trans_alpha_beta": (
        _single("Gemm", [("a", F, [4, 3])], [("y", F, None)],
                {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
                [("b", rand(5, 4)), ("c", rand(5))]),
        {"a": rand(4, 3)}),
    "matmul_batched_broadcast": (
        _single("MatMul", [("a", F, [2, 1, 3, 4]), ("b", F, [5, 4, 6])], [("y", F, None)]),
        {"a": rand(2, 1, 3, 4), "b": rand(5, 4, 6)}),
    "matmul_vector": (
        _single("MatMul", [("a", F, [4]), ("b", F, [2, 4, 3])], [("y", F, None)]),
        {"a": rand(4), "b": rand(2, 4, 3)}),
    "maxpool_ceil": (
        _single("MaxPool", [("x", F, [1, 2, 8, 8])], [("y", F, None)],
                {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        {"x": rand(1, 2, 8, 8)}),
    "avgpool_pads_count_include": (
        _single("AveragePool", [("x", F, [1, 2, 6, 6])], [("y", F, None)],
                {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        {"x": rand(1, 2, 6, 6)}),
    "softmax_opset11_axis1": (
        _single("Softmax", [("x", F, [2, 3, 4])], [("y", F, None)], {"axis": 1}, opset=11),
        {"x": rand(2, 3, 4)}),
    "slice_negative_step": (
        _single("Slice", [("x", F, [5, 6])], [("y", F, None)], None,
                [("s", np.array([4, -1], "int64")), ("e", np.array([0, -7], "int64")),
                 ("a", np.array([0, 1], "int64")), ("st", np.array([-2, -2], "int64"))]),
        {"x": rand(5, 6)}),
    "pad_reflect": (
        _single("Pad", [("x", F, [1, 2, 4, 4])], [("y", F, None)], {"mode": "reflect"},
                [("p", np.array([0, 0, 1, 2, 0, 0, 2, 1], "int64"))]),
        {"x": rand(1, 2, 4, 4)}),
    "resize_linear_half_pixel": (
        _single("Resize", [("x", F, [1, 2, 4, 5])], [("y", F, None)], {"mode": "linear"},
                [("roi", np.zeros(0, "float32")), ("sc", np.array([1, 1, 2, 1.5], "float32"))]),
        {"x": rand(1, 2, 4, 5)}),
    "resize_nearest_sizes": (
        _single("Resize", [("x", F, [1, 1, 3, 3])], [("y", F, None)],
                {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                 "nearest_mode": "floor"},
                [("roi", np.zeros(0, "float32")), ("sc", np.zeros(0, "float32")),
                 ("sz", np.array([1, 1, 7, 5], "int64"))]),
        {"x": rand(1, 1, 3, 3)}),
    "resize_cubic_align_corners": (
        _single("Resize", [("x", F, [1, 1, 4, 4])], [("y", F, None)],
                {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
                [("roi", np.zeros(0, "float32")), ("sc", np.array([1, 1, 2, 2], "float32"))]),
        {"x": rand(1, 1, 4, 4)}),
    "split_uneven_num_outputs": (
        make_model([helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
                   [("x", F, [2, 7])], [("a", F, None), ("b", F, None), ("c", F, None)],
                   opset=18),
        {"x": rand(2, 7)}),
    "layernorm_two_axes": (
        _single("LayerNormalization", [("x", F, [2, 3, 4])], [("y", F, None)], {"axis": -2},
                [("g", rand(3, 4)), ("b", rand(3, 4))]),
        {"x": rand(2, 3, 4)}),
    "gelu_tanh": (
        _single("Gelu", [("x", F, [3, 5])], [("y", F, None)], {"approximate": "tanh"},
                opset=20),
        {"x": rand(3, 5)}),
    "reduce_axes_input": (
        _single("ReduceMean", [("x", F, [2, 3, 4])], [("y", F, None)], {"keepdims": 0},
                [("ax", np.array([0, -1], "int64"))], opset=18),
        {"x": rand(2, 3, 4)}),
    "clip_only_max": (
        make_model([helper.make_node("Clip", ["x", "", "hi"], ["y"])], [("x", F, [6])],
                   [("y", F, None)], [("hi", np.array(0.2, "float32"))]),
        {"x": rand(6)}),
    "expand_where_cast": (
        make_model([helper.make_node("Expand", ["x", "s"], ["e"]),
                    helper.make_node("Greater", ["e", "z"], ["m"]),
                    helper.make_node("Cast", ["m"], ["mf"], to=F),
                    helper.make_node("Where", ["m", "e", "mf"], ["y"])],
                   [("x", F, [3, 1])], [("y", F, None)],
                   [("s", np.array([2, 3, 4], "int64")), ("z", np.zeros(1, "float32"))]),
        {"x": rand(3, 1)}),
    "einsum_attention": (
        _single("Einsum", [("q", F, [2, 3, 4, 5]), ("k", F, [2, 3, 6, 5])], [("y", F, None)],
                {"equation": "bhqd,bhkd->bhqk"}, opset=12),
        {"q": rand(2, 3, 4, 5), "k": rand(2, 3, 6, 5)}),
    "einsum_ellipsis_broadcast": (
        _single("Einsum", [("a", F, [2, 1, 3, 4]), ("b", F, [2, 5, 4, 2])], [("y", F, None)],
                {"equation": "...ij,...jk->...ik"}, opset=12),
        {"a": rand(2, 1, 3, 4), "b": rand(2, 5, 4, 2)}),
    "einsum_three_operands_implicit": (
        make_model([helper.make_node("Einsum", ["a", "b", "c"], ["y"], equation="bn,anm,bm")],
                   [("a", F, [2, 3]), ("b", F, [4, 3, 5]), ("c", F, [2, 5])], [("y", F, None)],
                   opset=12),
        {"a": rand(2, 3), "b": rand(4, 3, 5), "c": rand(2, 5)}),
    "einsum_batch_diagonal": (
        _single("Einsum", [("a", F, [2, 3, 3])], [("y", F, None)], {"equation": "...ii->...i"},
                opset=12),
        {"a": rand(2, 3, 3)}),
    "depth_to_space_crd": (
        _single("DepthToSpace", [("x", F, [1, 8, 2, 3])], [("y", F, None)],
                {"blocksize": 2, "mode": "CRD"}),
        {"x": rand(1, 8, 2, 3)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_onnxruntime(name):
    model, feeds = CASES[name]
    check_against_ort(model, feeds)


@pytest.mark.parametrize("name", ["conv_same_upper_stride2", "matmul_batched_broadcast",
                                  "resize_linear_half_pixel", "layernorm_two_axes"])
def test_operator_compiled_matches_onnxruntime(name):
    model, feeds = CASES[name]
    check_against_ort(model, feeds, compiled=True, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ Resize as image.resize2d
def _called_ops(mod):
    names = set()
    relay.expr_functor.post_order_visit(
        mod["main"], lambda e: names.add(e.op.name) if isinstance(e, relay.Call) else None)
    return names


@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize_imports_as_resize2d_where_it_samples_the_same(name):
    (model, x), as_resize2d = RESIZES[name]
    feeds = {"x": x}
    mod = check_against_ort(model, feeds)
    ops = _called_ops(mod)
    assert ("image.resize2d" in ops) == as_resize2d
    assert ("take" in ops) != as_resize2d
    check_against_ort(model, feeds, compiled=True, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ errors
def test_unsupported_ops_are_listed_at_once():
    nodes = [helper.make_node("TfIdfVectorizer", ["x"], ["a"]),
             helper.make_node("StringNormalizer", ["x"], ["b"]),
             helper.make_node("TfIdfVectorizer", ["x"], ["d"]),
             helper.make_node("Relu", ["x"], ["y"])]
    model = make_model(nodes, [("x", F, [4])], [("y", F, [4])])
    with pytest.raises(OpNotImplemented,
                       match=r"not supported.*StringNormalizer, TfIdfVectorizer \(x2\)"):
        relay.frontend.from_onnx(model)


def test_custom_domain_op_is_reported():
    node = helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft")
    model = make_model([node], [("x", F, [4])], [("y", F, [4])])
    with pytest.raises(OpNotImplemented, match="com.microsoft.FusedGemm"):
        relay.frontend.from_onnx(model)


def test_malformed_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf \xff\xff\xff")
    with pytest.raises(ImportError_, match="cannot read ONNX model|no graph"):
        relay.frontend.from_onnx(str(bad))


def test_empty_file(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(ImportError_, match="no graph"):
        relay.frontend.from_onnx(str(empty))


def test_not_a_model():
    with pytest.raises(TypeError, match="onnx.ModelProto or a file path"):
        relay.frontend.from_onnx(42)


def test_dynamic_dim_imports_as_any_or_takes_shape():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, ["N", 3])],
                       [("y", F, ["N", 3])])
    with pytest.warns(UserWarning, match=r"'x' has dynamic dimensions at axes 0 \(N\).*"
                                         r"relay.Any\(\)"):
        mod, _ = relay.frontend.from_onnx(model)
    assert str(mod["main"].params[0].type_annotation) == "Tensor[(?, 3), float32]"
    mod, _ = relay.frontend.from_onnx(model, shape={"x": (5, 3)})
    assert mod["main"].params[0].type_annotation.concrete_shape == (5, 3)


def test_shape_from_graph_input_is_a_clear_error_and_can_be_bound():
    model = make_model([helper.make_node("Reshape", ["x", "s"], ["y"])],
                       [("x", F, [2, 3]), ("s", TensorProto.INT64, [2])], [("y", F, None)])
    with pytest.raises(NeedsConstantInput, match="Reshape's shape must be a constant.*'s'"):
        relay.frontend.from_onnx(model)
    mod, _ = relay.frontend.from_onnx(model, const_inputs={"s": np.array([3, 2], "int64")})
    assert mod["main"].ret_type.concrete_shape == (3, 2)


def test_undefined_input_is_reported():
    model = make_model([helper.make_node("Relu", ["nowhere"], ["y"])], [("x", F, [2])],
                       [("y", F, [2])])
    with pytest.raises(ImportError_, match="'nowhere' is not defined"):
        relay.frontend.from_onnx(model)


def test_converter_failure_names_the_node():
    model = make_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="bad_reshape")],
                       [("x", F, [2, 3])], [("y", F, None)],
                       inits=[("s", np.array([4, 4], "int64"))])
    with pytest.raises(ImportError_, match="Reshape node 'bad_reshape'.*cannot reshape"):
        relay.frontend.from_onnx(model)


# ------------------------------------------------------------------ scale
def test_100k_node_chain_imports_without_recursion():
    n = 100_000
    nodes = [helper.make_node("Neg" if i % 2 == 0 else "Relu", [f"t{i}"], [f"t{i + 1}"])
             for i in range(n)]
    model = make_model(nodes, [("t0", F, [4])], [(f"t{n}", F, [4])])
    mod, _ = relay.frontend.from_onnx(model)
    assert mod["main"].ret_type.concrete_shape == (4,)
