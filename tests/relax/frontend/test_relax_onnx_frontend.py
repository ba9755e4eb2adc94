"""relax.frontend.onnx.from_onnx: PyTorch-built MLP / ResNet-block / attention models exported
to ONNX with a dynamic batch axis import with a symbolic ``batch`` dim, build once and match
ONNX Runtime at two batch sizes; an op sweep against ONNX Runtime; errors; keep_params."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the test models needs `torch`")
onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference results come from onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, tir  # noqa: E402
from minitvm.relax.frontend.onnx import (  # noqa: E402
    ONNXImportError,
    OpNotImplemented,
    from_onnx,
    supported_ops,
)

from .torch_models import Attention, randomize_bn  # noqa: E402

nn = torch.nn


# --------------------------------------------------------------------------- models
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                                 nn.Linear(32, 5))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class ResBlock(nn.Module):
    """A ResNet basic block with a strided downsampling shortcut, then pool / flatten / fc."""

    def __init__(self, cin=3, c=8):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.down = nn.Sequential(nn.Conv2d(cin, c, 1, 2, bias=False), nn.BatchNorm2d(c))
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + self.down(x))
        y = nn.functional.max_pool2d(y, 2, 2)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def export(model, example, opset=17) -> onnx.ModelProto:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), buf, input_names=["x"], output_names=["y"],
                          opset_version=opset, dynamo=False,
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return onnx.load_from_string(buf.getvalue())


CASES = {
    "mlp": (MLP, (12,), 17),
    "resnet_block": (ResBlock, (3, 16, 16), 17),
    "attention": (Attention, (6, 16), 17),
    "attention_opset11": (Attention, (6, 16), 11),
    "mlp_opset11": (MLP, (12,), 11),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dynamic_batch_model_matches_onnxruntime(name):
    torch.manual_seed(0)
    cls, tail, opset = CASES[name]
    model = randomize_bn(cls())
    proto = export(model, torch.randn(2, *tail), opset)
    mod = from_onnx(proto)
    x_sinfo = mod["main"].params[0].struct_info
    batch = x_sinfo.shape.values[0]
    assert isinstance(batch, tir.Var) and batch.name == "batch" and batch.dtype == "int64"
    assert [int(d) for d in x_sinfo.shape.values[1:]] == list(tail)
    # shape arithmetic (Shape -> Gather -> Concat -> Reshape) stays symbolic, no shape tensors
    assert "shape_to_tensor" not in mod.script()
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    sess = ort.InferenceSession(proto.SerializeToString())
    for b in (1, 5):
        x = np.random.RandomState(b).randn(b, *tail).astype("float32")
        out = vm["main"](x).numpy()
        np.testing.assert_allclose(out, sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


class Embeddings(nn.Module):
    """BERT-style embeddings: token + position lookup (arange over the dynamic seq axis)."""

    def __init__(self):
        super().__init__()
        self.tok, self.pos, self.ln = nn.Embedding(50, 16), nn.Embedding(32, 16), nn.LayerNorm(16)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.ln(self.tok(ids) + self.pos(pos))


def test_two_symbolic_axes_embeddings():
    torch.manual_seed(0)
    model = Embeddings().eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randint(0, 50, (2, 5)),), buf, input_names=["ids"],
                          opset_version=17, dynamo=False,
                          dynamic_axes={"ids": {0: "batch", 1: "seq"}})
    proto = onnx.load_from_string(buf.getvalue())
    mod = from_onnx(proto)
    text = mod.script()
    assert 'def main(ids: R.Tensor(("batch", "seq"), dtype="int64"))' in text
    assert "R.arange(R.prim_value(0), R.prim_value(seq), R.prim_value(1)" in text
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    sess = ort.InferenceSession(proto.SerializeToString())
    for b, t in ((1, 3), (4, 7)):
        ids = np.random.RandomState(t).randint(0, 50, (b, t)).astype("int64")
        np.testing.assert_allclose(vm["main"](ids).numpy(), sess.run(None, {"ids": ids})[0],
                                   rtol=1e-4, atol=1e-5)


def test_printed_signature_and_num_input():
    proto = export(MLP().eval(), torch.randn(2, 12))
    text = from_onnx(proto).script()
    assert 'def main(x: R.Tensor(("batch", 12), dtype="float32")) -> ' \
           'R.Tensor(("batch", 5), dtype="float32"):' in text
    assert "batch = T.int64()" in text
    assert 'R.func_attr({"num_input": 1})' in text
    assert "R.nn.softmax(" in text and "R.matmul(" in text


def test_sanitized_input_names():
    node = helper.make_node("Relu", ["input.1"], ["out"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert from_onnx(proto)["main"].params[0].name_hint == "input_1"
    assert from_onnx(proto, sanitize_input_names=False)["main"].params[0].name_hint == "input.1"


def test_shape_dict_overrides_and_names_symbols():
    proto = export(MLP().eval(), torch.randn(2, 12))
    mod = from_onnx(proto, shape_dict={"x": (3, 12)})
    assert [int(d) for d in mod["main"].params[0].struct_info.shape.values] == [3, 12]
    mod = from_onnx(proto, shape_dict={"x": ("n", 12)})
    assert mod["main"].params[0].struct_info.shape.values[0].name == "n"


def test_keep_params_in_input_and_detach_params():
    torch.manual_seed(0)
    model = MLP().eval()
    proto = export(model, torch.randn(2, 12))
    mod = from_onnx(proto, keep_params_in_input=True)
    main = mod["main"]
    assert main.attrs["num_input"] == 1
    assert len(main.params) == 1 + 6  # x, then three weights and three biases
    mod, params = relax.frontend.detach_params(mod)
    assert "params" not in mod["main"].attrs.keys() and len(params["main"]) == 6
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = np.random.randn(4, 12).astype("float32")
    out = vm["main"](x, *params["main"]).numpy()
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- op sweep
def _single_node_model(op, inputs, attrs=None, initializers=(), opset=17, out_dtype=None):
    """A one-node ONNX model; ``inputs`` are (name, array); initializers are constants."""
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in initializers], ["out"],
                            **(attrs or {}))
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs]
    inits = [onnx.numpy_helper.from_array(a, n) for n, a in initializers]
    out = helper.make_tensor_value_info("out", out_dtype or TensorProto.FLOAT, None)
    graph = helper.make_graph([node], op.lower(), vis, [out], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


R = np.random.RandomState(7)
X4 = R.randn(2, 3, 6, 6).astype("float32")
X3 = R.randn(2, 4, 6).astype("float32")
X2 = R.randn(3, 5).astype("float32")
I64 = lambda *v: np.array(v, "int64")  # noqa: E731

SWEEP = [
    ("Relu", [("x", X3)], {}, []), ("Sigmoid", [("x", X3)], {}, []),
    ("Tanh", [("x", X3)], {}, []), ("Erf", [("x", X3)], {}, []),
    ("Gelu", [("x", X3)], {}, []), ("LeakyRelu", [("x", X3)], {"alpha": 0.2}, []),
    ("HardSwish", [("x", X3)], {}, []), ("Elu", [("x", X3)], {"alpha": 0.7}, []),
    ("Exp", [("x", X3)], {}, []), ("Neg", [("x", X3)], {}, []),
    ("Add", [("x", X3), ("y", X3[:1])], {}, []), ("Sub", [("x", X3), ("y", X3)], {}, []),
    ("Mul", [("x", X3)], {}, [("w", R.randn(6).astype("float32"))]),
    ("Div", [("x", X3), ("y", np.abs(X3) + 1)], {}, []),
    ("Pow", [("x", np.abs(X3))], {}, [("p", np.array(2.0, "float32"))]),
    ("Max", [("x", X3), ("y", X3[::-1].copy())], {}, []),
    ("Clip", [("x", X3)], {}, [("lo", np.array(-0.5, "float32")),
                               ("hi", np.array(0.5, "float32"))]),
    ("Softmax", [("x", X3)], {"axis": 1}, []), ("LogSoftmax", [("x", X3)], {}, []),
    ("ReduceMean", [("x", X3)], {"keepdims": 0}, [("axes", I64(1))]),
    ("ReduceSum", [("x", X3)], {}, [("axes", I64(-1))]),
    ("ReduceMax", [("x", X3)], {"keepdims": 1}, [("axes", I64(0, 2))]),
    ("ReduceL2", [("x", X3)], {}, [("axes", I64(2))]),
    ("Conv", [("x", X4)], {"pads": [1, 1, 1, 1], "strides": [2, 2]},
     [("w", R.randn(4, 3, 3, 3).astype("float32")), ("b", R.randn(4).astype("float32"))]),
    ("Conv", [("x", X4)], {"group": 3, "auto_pad": "SAME_UPPER"},
     [("w", R.randn(6, 1, 3, 3).astype("float32"))]),
    ("ConvTranspose", [("x", X4)], {"strides": [2, 2], "pads": [1, 1, 1, 1]},
     [("w", R.randn(3, 2, 3, 3).astype("float32"))]),
    ("Gemm", [("x", X2)], {"transB": 1, "alpha": 0.5, "beta": 2.0},
     [("w", R.randn(4, 5).astype("float32")), ("c", R.randn(4).astype("float32"))]),
    ("MatMul", [("x", X3)], {}, [("w", R.randn(6, 3).astype("float32"))]),
    ("BatchNormalization", [("x", X4)], {"epsilon": 1e-3},
     [("s", R.rand(3).astype("float32")), ("b", R.rand(3).astype("float32")),
      ("m", R.rand(3).astype("float32")), ("v", R.rand(3).astype("float32") + 0.5)]),
    ("LayerNormalization", [("x", X3)], {"axis": -1},
     [("g", R.rand(6).astype("float32")), ("b", R.rand(6).astype("float32"))]),
    ("InstanceNormalization", [("x", X4)], {},
     [("g", R.rand(3).astype("float32")), ("b", R.rand(3).astype("float32"))]),
    ("MaxPool", [("x", X4)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     []),
    ("AveragePool", [("x", X4)], {"kernel_shape": [2, 2], "strides": [2, 2]}, []),
    ("GlobalAveragePool", [("x", X4)], {}, []), ("GlobalMaxPool", [("x", X4)], {}, []),
    ("Pad", [("x", X4)], {"mode": "reflect"}, [("p", I64(0, 0, 1, 2, 0, 0, 2, 1))]),
    # negative pads crop (RWKV's token shift exported: one step in front, the last cut)
    ("Pad", [("x", X3)], {}, [("p", I64(0, 1, 0, 0, -1, 0))]),
    ("Pad", [("x", X4)], {"mode": "edge"}, [("p", I64(0, 0, -2, 1, 0, 0, 1, -1))]),
    ("Pad", [("x", X4)], {"mode": "reflect"}, [("p", I64(0, 0, 2, -1, 0, 0, -2, 1))]),
    ("Pad", [("x", X3)], {}, [("p", I64(0, -1, -2, 0, -1, -1))]),  # only crops
    ("Reshape", [("x", X3)], {}, [("s", I64(0, -1))]),
    ("Transpose", [("x", X3)], {"perm": [2, 0, 1]}, []),
    ("Concat", [("x", X3), ("y", X3)], {"axis": 1}, []),
    ("Slice", [("x", X3)], {}, [("st", I64(1, 0)), ("en", I64(9999, -1)), ("ax", I64(2, 1)),
                                ("sp", I64(2, 1))]),
    ("Gather", [("x", X3)], {"axis": 1}, [("i", I64(3, 0, -1))]),
    ("Unsqueeze", [("x", X3)], {}, [("a", I64(0, -1))]),
    ("Squeeze", [("x", X3[:1])], {}, [("a", I64(0))]),
    ("Flatten", [("x", X4)], {"axis": 2}, []),
    ("Expand", [("x", X3[:, :1])], {}, [("s", I64(2, 4, 6))]),
    ("Where", [("x", X3), ("y", -X3)], {}, []),  # condition prepended below
    ("Cast", [("x", X3)], {"to": TensorProto.INT32}, []),
    ("Identity", [("x", X3)], {}, []),
    ("PRelu", [("x", X3)], {}, [("s", R.rand(6).astype("float32"))]),
    ("ArgMax", [("x", X3)], {"axis": 2, "keepdims": 0}, []),
    ("Equal", [("x", np.round(X3)), ("y", np.round(X3[::-1].copy()))], {}, []),
    ("CumSum", [("x", X3)], {}, [("a", np.array(1, "int64"))]),
    ("Einsum", [("x", X3), ("y", X3)], {"equation": "bij,bkj->bik"}, []),
    ("Mean", [("x", X3), ("y", X3 * 2), ("z", X3[:1])], {}, []),
    ("Reciprocal", [("x", np.abs(X3) + 0.5)], {}, []), ("Sqrt", [("x", np.abs(X3))], {}, []),
    ("Softmax", [("x", X4)], {"axis": 1}, []),  # opset 11: coerced to 2-D at axis 1
    ("Selu", [("x", X3)], {}, []), ("Softsign", [("x", X3)], {}, []),
    ("Tile", [("x", X3)], {}, [("r", I64(2, 1, 3))]),
    ("Trilu", [("x", X3)], {"upper": 0}, [("k", I64(1))]),
    ("Resize", [("x", X4)], {"mode": "nearest"},
     [("roi", np.zeros(0, "float32")), ("sc", np.array([1, 1, 2, 2], "float32"))]),
    ("Resize", [("x", X4)], {"mode": "linear"},
     [("roi", np.zeros(0, "float32")), ("sc", np.array([1, 1, 1.5, 1.5], "float32"))]),
]


def ins_rank(inputs) -> int:
    return inputs[0][1].ndim


_OPSETS = {"Gelu": 20, "ReduceMean": 18, "ReduceMax": 18, "ReduceL2": 18}
_OUT_TYPES = {"Cast": TensorProto.INT32, "ArgMax": TensorProto.INT64, "Equal": TensorProto.BOOL}


@pytest.mark.parametrize("case", SWEEP, ids=[c[0] for c in SWEEP])
def test_op_matches_onnxruntime(case):
    op, inputs, attrs, inits = case
    inputs = list(inputs)
    out_dtype = _OUT_TYPES.get(op)
    opset = 11 if op == "Softmax" and ins_rank(inputs) == 4 else _OPSETS.get(op, 17)
    if op == "Where":
        inputs.insert(0, ("c", X3 > 0))
    proto = _single_node_model(op, inputs, attrs, inits, opset=opset,
                               out_dtype=out_dtype)
    feeds = {n: a for n, a in inputs}
    ref = ort.InferenceSession(proto.SerializeToString()).run(None, feeds)[0]
    mod = from_onnx(proto)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[a for _, a in inputs]).numpy()
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_split_outputs():
    x = X3
    node = helper.make_node("Split", ["x", "s"], ["a", "b"], axis=2)
    graph = helper.make_graph(
        [node], "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "ab"],
        initializer=[onnx.numpy_helper.from_array(I64(2, 4), "s")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    vm = relax.VirtualMachine(relax.build(from_onnx(proto), "llvm"), tvm.cpu())
    a, b = vm["main"](x)
    np.testing.assert_array_equal(a.numpy(), x[..., :2])
    np.testing.assert_array_equal(b.numpy(), x[..., 2:])


def test_constant_of_shape_with_symbolic_shape():
    """Shape -> ConstantOfShape on a dynamic input stays symbolic (R.full over batch)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["c"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])),
             helper.make_node("Add", ["x", "c"], ["out"])]
    graph = helper.make_graph(
        nodes, "cos", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(proto)
    assert "R.full(R.shape([n, 3])" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for rows in (1, 4):
        x = np.random.randn(rows, 3).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x + 2.5, rtol=1e-6)


def test_negative_pad_crops_a_symbolic_axis():
    """A crop of a symbolic axis counts from its end, so one build serves every length."""
    nodes = [helper.make_node("Pad", ["x", "p"], ["out"])]
    graph = helper.make_graph(
        nodes, "crop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        initializer=[onnx.numpy_helper.from_array(I64(-1, 1, -1, 0), "p")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(proto)
    assert "strided_slice" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for rows in (3, 6):
        x = np.random.randn(rows, 3).astype("float32")
        want = np.pad(x[1:-1], [(0, 0), (1, 0)])
        np.testing.assert_array_equal(vm["main"](x).numpy(), want)


# --------------------------------------------------------------------------- errors
def test_unsupported_ops_are_listed_at_once():
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("StringNormalizer", ["a"], ["b"]),
             helper.make_node("TfIdfVectorizer", ["a"], ["c"]),
             helper.make_node("TfIdfVectorizer", ["a"], ["e"])]
    graph = helper.make_graph(
        nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
        initializer=[onnx.numpy_helper.from_array(I64(1), "k")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OpNotImplemented, match=r"2 operator\(s\).*StringNormalizer \(x1\), "
                                               r"TfIdfVectorizer \(x2\)"):
        from_onnx(proto)


def test_malformed_model_errors():
    with pytest.raises(ONNXImportError, match="cannot read ONNX model"):
        from_onnx(b"\x08\x07garbage-not-a-protobuf\xff\xff")
    with pytest.raises(TypeError, match="expects an onnx.ModelProto"):
        from_onnx(42)
    node = helper.make_node("Relu", ["nowhere"], ["out"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ONNXImportError, match="input 'nowhere' is not defined"):
        from_onnx(proto)


def test_data_dependent_shape_is_a_clear_error():
    nodes = [helper.make_node("Reshape", ["x", "s"], ["out"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                     helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ONNXImportError, match="Reshape.*shape must be a constant"):
        from_onnx(proto)


def test_supported_ops_cover_vision_and_transformer_models():
    need = {"Conv", "Gemm", "MatMul", "Add", "Mul", "Relu", "Gelu", "Sigmoid", "Tanh", "Erf",
            "BatchNormalization", "LayerNormalization", "MaxPool", "AveragePool",
            "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather",
            "Unsqueeze", "Squeeze", "Flatten", "Expand", "Where", "Cast", "Shape",
            "ConstantOfShape", "Softmax", "ReduceMean", "ReduceSum", "ReduceMax"}
    assert need <= set(supported_ops())


def test_long_chain_imports_without_recursion():
    """A 100,000-node chain imports (the importer walks the node list in a loop)."""
    n = 100_000
    nodes = [helper.make_node("Neg", [f"t{i}" if i else "x"], [f"t{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(proto)
    block = mod["main"].body.blocks[0]
    assert len(block.bindings) == n + 1  # n negations and the output binding
