"""Sizes computed from a dynamic batch through Relax's ONNX importer, against onnxruntime at
several batches: a Range whose delta is the batch (it used to fail at build), TopK's K and
OneHot's depth from it, Pad's pads from it in every mode and wrap padding of the batch axis
(all used to be refused). Sizes onnxruntime rejects raise at run time naming the node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node
BATCH = helper.make_node("Shape", ["x"], ["n1"], start=0, end=1)  # (n1 = [N])


def _model(nodes, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph(
        [BATCH, *nodes], "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


class _Both:
    """One Relax build of the model (the batch symbolic) and its onnxruntime session."""

    def __init__(self, model):
        self.mod = from_onnx(model)
        self.vm = relax.VirtualMachine(relax.build(self.mod, "llvm"), tvm.cpu())
        self.sess = ort.InferenceSession(model.SerializeToString(),
                                         providers=["CPUExecutionProvider"])

    def _ours(self, feed):
        got = self.vm["main"](*[tvm.nd.array(feed[p.name_hint]) for p in self.mod["main"].params])
        return [g.numpy() for g in ([got] if isinstance(got, tvm.nd.NDArray) else got)]

    def same(self, feed):
        want = self.sess.run(None, feed)
        for g, w in zip(self._ours(feed), want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)

    def both_raise(self, feed, match: str):
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error classes
            self.sess.run(None, feed)
        with pytest.raises(AssertionError, match=match):
            self._ours(feed)


def _x(rows: int, cols: int = 6, ties: bool = False):
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype("float32")
    return np.round(x) if ties else x


def test_range_whose_delta_is_the_batch():
    both = _Both(_model([node("Squeeze", ["n1"], ["n"]),
                         node("Range", ["zero", "limit", "n"], ["up"]),
                         node("Sub", ["zero", "n"], ["m"]),
                         node("Range", ["limit", "zero", "m"], ["down"])],
                        [("x", F, ["N", 6])], [("up", I64, None), ("down", I64, None)],
                        inits={"zero": np.array(0), "limit": np.array(20)}))
    assert "R.Tensor((" in both.mod.script()  # (the lengths are symbolic, not unknown)
    for n in (1, 3, 7, 20, 25):
        both.same({"x": _x(n)})


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_k_is_the_batch(largest):
    both = _Both(_model([node("TopK", ["x", "n1"], ["v", "i"], axis=1, largest=largest,
                              name="tk")],
                        [("x", F, ["N", 6])], [("v", F, None), ("i", I64, None)]))
    for n in (1, 3, 6):
        both.same({"x": _x(n, ties=True)})  # (ties: the lower index first)
    both.both_raise({"x": _x(7)}, r"TopK node 'tk': K=7 is outside \[0, 6\], the size of axis 1")


def test_one_hot_depth_from_the_batch():
    both = _Both(_model([node("Sub", ["n1", "three"], ["d"]),
                         node("OneHot", ["i", "d", "vals"], ["y"], axis=0, name="oh")],
                        [("x", F, ["N", 2]), ("i", I64, [5])], [("y", F, None)],
                        inits={"three": np.array([3]), "vals": np.array([-1.0, 2.0], "float32")}))
    idx = np.array([0, 2, -1, 3, -9])  # (-9 and 3 past a depth of 3 or 4: no hot element)
    for n in (4, 7, 9):
        both.same({"x": _x(n, 2), "i": idx})
    both.both_raise({"x": _x(3, 2), "i": idx}, r"OneHot node 'oh': depth 0 must be positive")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pads_from_the_batch(mode):
    # pads [0, N - 3, 0, 2 - N]: the columns padded (or cropped, below 3) at the front by N - 3
    # and cropped (or padded) at the back by N - 2
    both = _Both(_model([node("Sub", ["n1", "three"], ["b"]), node("Sub", ["two", "n1"], ["e"]),
                         node("Concat", ["zero", "b", "zero", "e"], ["p"], axis=0),
                         node("Pad", ["x", "p", "v"], ["y"], mode=mode, name="pd")],
                        [("x", F, ["N", 6])], [("y", F, None)],
                        inits={"three": np.array([3]), "two": np.array([2]),
                               "zero": np.array([0]), "v": np.array(7.5, "float32")}))
    for n in (1, 3, 5) if mode == "reflect" else (1, 3, 5, 7):  # (reflect: 1 column kept at 7)
        both.same({"x": _x(n)})
    if mode != "constant":  # (N = 8: 5 padded at the front, 6 cropped at the back)
        both.both_raise({"x": _x(8)}, rf"Pad node 'pd': {mode} pads")


def test_wrap_pads_on_the_batch_axis():
    both = _Both(_model([node("Pad", ["x", "p"], ["y"], mode="wrap", name="pd")],
                        [("x", F, ["N", 6])], [("y", F, None)],
                        inits={"p": np.array([2, -1, 3, 1])}))
    for n in (1, 3, 7):
        both.same({"x": _x(n)})


@pytest.mark.parametrize("attrs", [
    {"mode": "cubic", "axes": [2, 3]},
    {"mode": "linear", "axes": [3, 2], "keep_aspect_ratio_policy": "not_larger"},
    {"mode": "nearest", "axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}])
def test_resize_over_axes_of_a_symbolic_batch(attrs):
    both = _Both(_model([node("Resize", ["x", "", "", "sz"], ["y"], name="rs", **attrs)],
                        [("x", F, ["N", 2, 4, 5])], [("y", F, None)],
                        inits={"sz": np.array([7, 9])}))
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 2, 4, 5)).astype("float32")
        want = both.sess.run(None, {"x": x})[0]
        got = both._ours({"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_of_the_symbolic_batch_is_refused_naming_the_input():
    model = _model([node("Resize", ["x", "", "", "sz"], ["y"], name="rs")],
                   [("x", F, ["N", 2, 4, 5])], [("y", F, None)],
                   inits={"sz": np.array([3, 2, 8, 10])})
    with pytest.raises(ValueError, match=r"Resize node 'rs': this Resize resizes a symbolic "
                       r"axis of the input 'x' \(dims \[N, 2, 4, 5\]\) by its sizes 'sz'.*shape_dict"):
        from_onnx(model)


def test_slice_steps_from_the_batch():
    # x[::N - 1, -1::-(N - 1)]: steps of either sign from the batch (it was a TypeError); a
    # step of 0 at batch 1 raises naming the node
    both = _Both(_model([node("Sub", ["n1", "one"], ["k"]), node("Sub", ["zero", "k"], ["m"]),
                         node("Concat", ["k", "m"], ["st"], axis=0),
                         node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl")],
                        [("x", F, ["N", 6])], [("y", F, None)],
                        inits={"one": np.array([1]), "zero": np.array([0]),
                               "s": np.array([0, -1]), "e": np.array([2**62, -2**62]),
                               "a": np.array([0, 1])}))
    for n in (2, 3, 7):
        both.same({"x": _x(n)})
    both.both_raise({"x": _x(1)}, r"Slice node 'sl': the step 0 of axis 0 is zero")
