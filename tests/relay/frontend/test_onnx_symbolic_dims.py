"""ONNX models whose inputs have symbolic dims (dim_param "batch", "seq", ...) imported with no
``shape=``: the dims become relay.Any() (as TVM imports them), one identity per name, and one
``relay.vm.compile`` serves every size. Each model runs at two sizes against onnxruntime; the
Relax importer reads the same files as tir vars named after the dim_params."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F = TensorProto.FLOAT
node = helper.make_node


def _ints(*v):
    return np.array(v, "int64")


def _model(nodes, inputs, outputs, inits):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, F, s) for n, s in outputs],
        initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_classifier():
    """Only the batch is symbolic: Conv, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(1)
    inits = {"w": rng.standard_normal((2, 3, 3, 3)).astype("float32"),
             "fc": rng.standard_normal((5, 32)).astype("float32")}
    nodes = [node("Conv", ["x", "w"], ["c"]), node("Relu", ["c"], ["r"]),
             node("Flatten", ["r"], ["f"]), node("Gemm", ["f", "fc"], ["g"], transB=1),
             node("Softmax", ["g"], ["y"], axis=-1)]
    return _model(nodes, [("x", ["batch", 3, 6, 6])], [("y", ["batch", 5])], inits)


def attention_block(hidden=16, heads=2):
    """A BERT-style self-attention layer with batch and seq both symbolic, shapes computed as a
    PyTorch export computes them (Shape -> Gather -> Concat -> Reshape): heads split and merged,
    scores masked by an additive (batch, seq) mask, the output projection over (batch*seq,
    hidden) rows reshaped back to the input's shape, and a residual add."""
    rng = np.random.default_rng(0)
    inits = {n: (0.3 * rng.standard_normal((hidden, hidden))).astype("float32")
             for n in ("wq", "wk", "wv", "wo")}
    inits.update(zero=np.array(0, "int64"), one=np.array(1, "int64"), ax0=_ints(0),
                 ax12=_ints(1, 2), per_head=_ints(heads, hidden // heads), hid=_ints(hidden),
                 rows=_ints(-1, hidden), scale=np.array(np.sqrt(hidden // heads), "float32"))
    nodes = [node("Shape", ["x"], ["s"]),
             node("Gather", ["s", "zero"], ["b"], axis=0),
             node("Gather", ["s", "one"], ["t"], axis=0),
             node("Unsqueeze", ["b", "ax0"], ["b1"]), node("Unsqueeze", ["t", "ax0"], ["t1"]),
             node("Concat", ["b1", "t1", "per_head"], ["split_to"], axis=0),
             node("Concat", ["b1", "t1", "hid"], ["merge_to"], axis=0)]
    for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [node("MatMul", ["x", "w" + name], [name + "0"]),
                  node("Reshape", [name + "0", "split_to"], [name + "1"]),
                  node("Transpose", [name + "1"], [name], perm=perm)]
    nodes += [node("MatMul", ["q", "k"], ["qk"]), node("Div", ["qk", "scale"], ["qk1"]),
              node("Unsqueeze", ["mask", "ax12"], ["m4"]), node("Add", ["qk1", "m4"], ["sc"]),
              node("Softmax", ["sc"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["c0"]),
              node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
              node("Reshape", ["c1", "merge_to"], ["c"]),
              node("Reshape", ["c", "rows"], ["c2"]),       # (batch*seq, hidden)
              node("MatMul", ["c2", "wo"], ["o2"]),
              node("Reshape", ["o2", "s"], ["o"]),          # back to (batch, seq, hidden)
              node("Add", ["o", "x"], ["y"])]
    return _model(nodes, [("x", ["batch", "seq", hidden]), ("mask", ["batch", "seq"])],
                  [("y", ["batch", "seq", hidden])], inits)


def concat_on_symbolic_axes():
    """Concats along a symbolic axis (n + m rows; a (n,) vector twice) and beside one (n, 8)."""
    nodes = [node("Concat", ["a", "b"], ["ab"], axis=0), node("Relu", ["ab"], ["r"]),
             node("Concat", ["a", "a"], ["aa"], axis=1),
             node("ReduceSum", ["aa", "ax1"], ["s"], keepdims=0),
             node("Concat", ["s", "s"], ["ss"], axis=0)]
    return _model(nodes, [("a", ["n", 4]), ("b", ["m", 4])], [("r", ["nm", 4]), ("ss", [None])],
                  {"ax1": _ints(1)})


def positions_to_seq():
    """Position embeddings up to a symbolic seq length: a Range to it gathered from a table, and
    the table sliced to it (``table[:, :seq]``), added to the (batch, seq, 4) input."""
    rng = np.random.default_rng(2)
    table = rng.standard_normal((1, 16, 4)).astype("float32")
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["t"], axis=0),
             node("Range", ["zero", "t", "one"], ["pos"]),
             node("Gather", ["rows", "pos"], ["emb"], axis=0),               # (seq, 4)
             node("Unsqueeze", ["t", "ax0"], ["t1"]),
             node("Slice", ["table", "start0", "t1", "ax1"], ["part"]),     # (1, seq, 4)
             node("Add", ["x", "emb"], ["xe"]), node("Add", ["xe", "part"], ["y"])]
    inits = {"zero": np.array(0, "int64"), "one": np.array(1, "int64"), "ax0": _ints(0),
             "ax1": _ints(1), "start0": _ints(0), "table": table, "rows": table[0]}
    return _model(nodes, [("x", ["batch", "seq", 4])], [("y", ["batch", "seq", 4])], inits)


def expand_beside_batch():
    """``x[:, None].expand(b, 2, k)`` as PyTorch exports it: a size-1 axis grows to 2 beside the
    symbolic batch the target shape reads at run time (then a gather along the last axis)."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["b"], axis=0),
             node("Unsqueeze", ["b", "ax0"], ["b1"]),
             node("Concat", ["b1", "two_k"], ["to"], axis=0),
             node("Unsqueeze", ["x", "ax1"], ["x1"]),                # (batch, 1, 3)
             node("Expand", ["x1", "to"], ["e"]),                    # (batch, 2, 3)
             node("Mul", ["e", "scale"], ["y"])]
    inits = {"zero": np.array(0, "int64"), "ax0": _ints(0), "ax1": _ints(1),
             "two_k": _ints(2, 3), "scale": np.array([1.0, -2.0, 0.5], "float32")}
    return _model(nodes, [("x", ["batch", 3])], [("y", ["batch", 2, 3])], inits)


def _feeds(model, sizes: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value or sizes[d.dim_param] for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype("float32")
    return feeds


def _as_list(out):
    return [out] if hasattr(out, "numpy") else list(out)


CASES = [(conv_classifier, [{"batch": 1}, {"batch": 4}]),
         (attention_block, [{"batch": 2, "seq": 5}, {"batch": 3, "seq": 7}]),
         (concat_on_symbolic_axes, [{"n": 2, "m": 3}, {"n": 5, "m": 1}]),
         (positions_to_seq, [{"batch": 2, "seq": 5}, {"batch": 1, "seq": 9}]),
         (expand_beside_batch, [{"batch": 3}, {"batch": 1}])]


@pytest.mark.parametrize("build, sizes", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_symbolic_dims_import_as_any_and_run_at_two_sizes(build, sizes):
    model = build()
    with pytest.warns(UserWarning, match="dynamic dimensions at axes 0"):
        mod, params = relay.frontend.from_onnx(model)
    for p in mod["main"].params:  # every symbolic dim is relay.Any(), the static ones kept
        declared = [d.dim_value or None for d in
                    next(i for i in model.graph.input if i.name == p.name_hint)
                    .type.tensor_type.shape.dim]
        dims = p.type_annotation.shape
        assert [None if isinstance(d, tvm.tir.Any) else int(d) for d in dims] == declared
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed, size in enumerate(sizes):
        feeds = _feeds(model, size, seed)
        outs = _as_list(vm.run(*feeds.values()))
        for got, want in zip(outs, sess.run(None, feeds), strict=True):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_one_dim_param_is_one_size_in_the_relay_types():
    """"batch" and "seq" shared by both inputs are the same relay.Any() objects; the attention's
    reshapes keep them, so the output type is the input's (no dyn.reshape, which knows none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, _ = relay.frontend.from_onnx(attention_block())
    x, mask = mod["main"].params
    xs, ms = x.type_annotation.shape, mask.type_annotation.shape
    assert xs[0] is ms[0] and xs[1] is ms[1] and xs[0] is not xs[1]
    assert str(mod["main"].ret_type) == "Tensor[(?, ?, 16), float32]"
    assert "dyn.reshape" not in mod.astext()
    # relay.Any() in shape= at an axis the model names takes that name's identity
    mod2, _ = relay.frontend.from_onnx(attention_block(), shape={
        "x": [relay.Any(), relay.Any(), 16], "mask": [relay.Any(), relay.Any()]})
    x2, mask2 = mod2["main"].params
    assert x2.type_annotation.shape[1] is mask2.type_annotation.shape[1]
    static, _ = relay.frontend.from_onnx(attention_block(), shape={"x": (2, 5, 16),
                                                                   "mask": (2, 5)})
    assert str(static["main"].ret_type) == "Tensor[(2, 5, 16), float32]"


@pytest.mark.parametrize("build, sizes", CASES[1:3], ids=lambda c: getattr(c, "__name__", ""))
def test_relax_imports_the_same_files_with_named_tir_vars(build, sizes):
    model = build()
    mod = relax.frontend.onnx.from_onnx(model)
    names = {str(d) for p in mod["main"].params for d in p.struct_info.shape.values
             if not isinstance(d, tvm.tir.IntImm | int)}
    assert names == {k for s in sizes for k in s}
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed, size in enumerate(sizes):
        feeds = _feeds(model, size, seed)
        outs = _as_list(vm["main"](*[tvm.nd.array(v) for v in feeds.values()]))
        for got, want in zip(outs, sess.run(None, feeds), strict=True):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_freeze_params_false_keeps_the_weights_as_parameters():
    with pytest.warns(UserWarning, match="dynamic dimensions"):
        mod, params = relay.frontend.from_onnx(conv_classifier(), freeze_params=False)
    assert sorted(params) == ["fc", "w"]
    names = [p.name_hint for p in mod["main"].params]
    assert names[0] == "x" and sorted(names[1:]) == ["fc", "w"]
    assert str(mod["main"].params[0].type_annotation) == "Tensor[(?, 3, 6, 6), float32]"
