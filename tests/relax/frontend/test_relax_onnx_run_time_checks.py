"""Sizes onnxruntime rejects, through Relax's ONNX importer: Split sizes not adding up to the
axis, TopK's K past it, pads that do not fit, negative shapes, a zero Range delta. Each raises
naming the node and the values (at import, or from an ``R.assert_op`` at run time where a
size is a symbolic batch) instead of a clipped or repeated answer; sizes it accepts give its
answer. Also float64 models whose constants used to be built as float32."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import (  # noqa: E402
    NeedsConstantInput,
    ONNXImportError,
    from_onnx,
)

F, D, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64
node = helper.make_node


def _model(nodes, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


class _Both:
    """The model through Relax (dims kept symbolic; an input it needs as a known value bound
    per call, as the ONNX backend binds it) and through onnxruntime."""

    def __init__(self, model):
        self.model = model
        self.sess = ort.InferenceSession(model.SerializeToString(),
                                         providers=["CPUExecutionProvider"])

    def _ours(self, feed):
        bound: dict = {}
        while True:
            try:
                mod = from_onnx(self.model, const_inputs=bound)
                break
            except NeedsConstantInput as e:
                bound[e.input_name] = feed[e.input_name]
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
        got = vm["main"](*[tvm.nd.array(feed[p.name_hint]) for p in mod["main"].params])
        return [g.numpy() for g in ([got] if isinstance(got, tvm.nd.NDArray) else got)]

    def same(self, feed):
        want = self.sess.run(None, feed)
        for g, w in zip(self._ours(feed), want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-7 if w.dtype == "float64" else 1e-6)

    def both_raise(self, feed, match: str, error=AssertionError):
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error classes
            self.sess.run(None, feed)
        with pytest.raises(error, match=match):
            self._ours(feed)


def _x(rows: int, cols: int = 3):
    return np.arange(rows * cols, dtype="float32").reshape(rows, cols)


def test_split_sizes_must_add_up_to_a_run_time_axis():
    both = _Both(_model([node("Split", ["x", "s"], ["a", "b"], axis=0, name="sp")],
                        [("x", F, ["N", 3]), ("s", I64, [2])], [("a", F, None), ("b", F, None)]))
    both.same({"x": _x(5), "s": np.array([2, 3])})
    both.same({"x": _x(4), "s": np.array([0, 4])})
    both.both_raise({"x": _x(5), "s": np.array([2, 2])}, r"Split node 'sp': the split sizes "
                    r"\[2, 2\] add up to 4, not to 5, the size of axis 0")
    both.both_raise({"x": _x(5), "s": np.array([6, -1])},
                    r"Split node 'sp': the split sizes \[6, -1\] must be values >= 0",
                    ONNXImportError)


def test_constant_split_of_a_run_time_axis_is_checked_first_and_keeps_static_parts():
    model = _model([node("Split", ["x", "s"], ["a", "b"], axis=0)], [("x", F, ["N", 3])],
                   [("a", F, None), ("b", F, None)], {"s": np.array([1, 2])})
    text = from_onnx(model).script()
    assert "R.assert_op(R.prim_value(N == 3)" in text and "pure=False" in text
    assert text.index("R.assert_op") < text.index("R.dataflow")  # (before any kernel)
    assert 'R.Tensor((2, 3), dtype="float32") = lv' in text
    both = _Both(model)
    both.same({"x": _x(3)})
    for rows in (4, 2):
        both.both_raise({"x": _x(rows)}, rf"the split sizes \[1, 2\] add up to 3, not to {rows}")


def test_split_sizes_from_shape_arithmetic():
    """sizes [batch - 2, 2]: they add up to the batch (folded at import), the first is
    negative at batch 1."""
    nodes = [node("Shape", ["x"], ["sh"]), node("Slice", ["sh", "z", "o"], ["n"]),
             node("Sub", ["n", "two"], ["n2"]), node("Concat", ["n2", "two"], ["s"], axis=0),
             node("Split", ["x", "s"], ["a", "b"], axis=0)]
    model = _model(nodes, [("x", F, ["N", 3])], [("a", F, None), ("b", F, None)],
                   {"z": np.array([0]), "o": np.array([1]), "two": np.array([2])})
    assert from_onnx(model).script().count("R.assert_op") == 1
    both = _Both(model)
    for rows in (5, 2):
        both.same({"x": _x(rows)})
    both.both_raise({"x": _x(1)}, r"Split: the split sizes \[\(N - .*\), 2\] must be values "
                    r">= 0 \(-1 here\)")


def test_even_split_of_a_run_time_axis_without_num_outputs():
    outs = [(o, F, None) for o in "abc"]
    even = _Both(_model([node("Split", ["x"], ["a", "b", "c"], axis=0)], [("x", F, ["N", 2])],
                        outs, opset=13))
    even.same({"x": _x(6, 2)})
    even.both_raise({"x": _x(7, 2)}, r"Split: the size 7 of axis 0 does not split evenly into 3")
    last = _Both(_model([node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)],
                        [("x", F, ["N", 2])], outs))
    last.same({"x": _x(4, 2)})


def test_top_k_must_not_pass_a_run_time_axis():
    both = _Both(_model([node("TopK", ["x", "k"], ["v", "i"], axis=0)],
                        [("x", F, ["N", 3]), ("k", I64, [1])], [("v", F, None), ("i", I64, None)]))
    for k in (0, 5):  # (K = 0: empty outputs)
        both.same({"x": _x(5)[::-1].copy(), "k": np.array([k])})
    both.both_raise({"x": _x(5), "k": np.array([6])}, r"TopK: K=6 is outside \[0, 5\]")
    const_k = _Both(_model([node("TopK", ["x", "k"], ["v", "i"], axis=0)], [("x", F, ["N", 3])],
                           [("v", F, None), ("i", I64, None)], {"k": np.array([3])}))
    const_k.same({"x": _x(3)[::-1].copy()})
    const_k.both_raise({"x": _x(2)}, r"TopK: K=3 is outside \[0, 2\]")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pads_of_a_run_time_axis(mode):
    """Constant: pad, then crop (a crop into the padding keeps it); the others reject an axis
    cropped to nothing, reflect a pad at or past the size."""
    both = _Both(_model([node("Pad", ["x", "p"], ["y"], mode=mode)],
                        [("x", F, ["N", 3]), ("p", I64, [4])], [("y", F, None)]))
    ok, bad = [[-1, 0, 2, 1]], [[-3, 0, -3, 0]]
    if mode == "constant":
        ok += [[-6, 0, 2, 0]]
    else:
        bad += [[-5, 0, 0, 0]]
    if mode == "reflect":
        bad += [[5, 0, 0, 0]]
    for p in ok:
        both.same({"x": _x(5), "p": np.array(p)})
    for p in bad:
        both.both_raise({"x": _x(5), "p": np.array(p)}, rf"Pad: {mode} pads \[.*\] \(begin, end "
                        r"per axis\) do not fit the input of shape \[5, 3\]")
    both.both_raise({"x": _x(5), "p": np.array([0, -4, 0, 0])},
                    r"do not fit the input of shape \[N, 3\]", ONNXImportError)


@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand", "Tile"])
def test_a_size_computed_from_the_batch_must_not_be_negative(op):
    """size = batch - 3: negative at batch 2."""
    inits = {"three": np.array([3])}
    if op == "ConstantOfShape":
        last = node(op, ["n"], ["y"], value=numpy_helper.from_array(np.array([1.5], "float32")))
    elif op == "Expand":
        last, inits["one"] = node(op, ["one", "n"], ["y"]), np.array([1.5], "float32")
    else:
        last = node(op, ["x", "n"], ["y"])
    both = _Both(_model([node("Shape", ["x"], ["s"]), node("Sub", ["s", "three"], ["n"]), last],
                        [("x", F, ["N"])], [("y", F, None)], inits))
    both.same({"x": np.arange(5, dtype="float32")})
    both.both_raise({"x": np.zeros(2, "float32")}, rf"{op}: the .*\[\(N - .*\)\] ha.* negative"
                    r".* \(-1 here\)")


def test_constant_sizes_onnxruntime_rejects_fail_at_import():
    cases = [
        (node("ConstantOfShape", ["s"], ["y"]), {"s": np.array([2, -1])}, [],
         r"ConstantOfShape: the shape \[2, -1\] has a negative size"),
        (node("Range", ["a", "b", "d"], ["y"]),
         {"a": np.array(0), "b": np.array(5), "d": np.array(0)}, [],
         r"Range: delta 0 must not be zero"),
        (node("Split", ["x"], ["y", "z", "w"], axis=0), {}, [("x", F, [4, 2])],
         r"Split: the size 4 of axis 0 does not split evenly into 3 outputs")]
    for n, inits, inputs, match in cases:
        model = _model([n], inputs, [(o, F, None) for o in n.output], inits, opset=13)
        with pytest.raises(ONNXImportError, match=match):
            from_onnx(model)


_F64 = {
    "Elu": {"alpha": 0.3}, "Selu": {}, "HardSigmoid": {}, "HardSwish": {}, "Softplus": {},
    "ThresholdedRelu": {"alpha": 0.1}, "Shrink": {"lambd": 0.1, "bias": 0.05}, "Mish": {},
    "LpNormalization": {},
}


def test_float64_activations_keep_double_constants():
    x = np.random.default_rng(0).standard_normal((2, 3)) + 1e-9
    for op, attrs in _F64.items():
        _Both(_model([node(op, ["x"], ["y"], **attrs)], [("x", D, [2, 3])],
                     [("y", D, None)])).same({"x": x})


def test_float64_gemm_and_prelu_keep_double_weights():
    rng = np.random.default_rng(1)
    w, b = rng.standard_normal((3, 3)), np.full(3, 0.1 + 1e-12)
    x = rng.standard_normal((2, 3))
    nodes = [node("Gemm", ["x", "w", "b"], ["g"], alpha=0.3, beta=0.7, transB=1),
             node("PRelu", ["g", "b"], ["y"])]
    _Both(_model(nodes, [("x", D, [2, 3])], [("y", D, None)], {"w": w, "b": b})).same({"x": x})


def test_a_top_k_computed_from_the_batch_is_checked_at_run_time():
    """K = batch - 2 (a symbolic K): a sort's head (it was refused at import); a negative K
    raises naming the node, as onnxruntime rejects it."""
    nodes = [node("Shape", ["x"], ["sh"]), node("Slice", ["sh", "z", "o"], ["n"]),
             node("Sub", ["n", "two"], ["k"]), node("TopK", ["x", "k"], ["v", "i"], axis=0)]
    both = _Both(_model(nodes, [("x", F, ["N", 3])], [("v", F, None), ("i", I64, None)],
                        {"z": np.array([0]), "o": np.array([1]), "two": np.array([2])}))
    for n in (2, 3, 6):
        both.same({"x": _x(n)})
    both.both_raise({"x": _x(1)}, r"TopK: K=-1 is outside \[0, 1\], the size of axis 0")
