"""Slice steps and Pad axes read at run time through Relay's ONNX importer (both used to ask
for the input bound), and wrap padding of a run-time batch axis (refused), against
onnxruntime at several batches: ONNX's clamping for either step sign, negative axes, and the
values it rejects (a zero step, an axis out of range) raising naming the node."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node


def _model(nodes, inputs, inits=(), opset=18):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("y", F, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


class _Both:
    """The model compiled once for the Relay VM (strict-native) and its onnxruntime session."""

    def __init__(self, model):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.mod, params = relay.frontend.from_onnx(model)
        with tvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
            exe = relay.vm.compile(self.mod, target="llvm", params=params)
        self.vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
        self.sess = ort.InferenceSession(model.SerializeToString(),
                                         providers=["CPUExecutionProvider"])

    def _ours(self, feed):
        return self.vm.invoke("main", *[tvm.nd.array(feed[p.name_hint])
                                        for p in self.mod["main"].params]).numpy()

    def same(self, feed):
        want = self.sess.run(None, feed)[0]
        got = self._ours(feed)
        assert got.shape == want.shape, (feed, got.shape, want.shape)
        np.testing.assert_array_equal(got, want)

    def both_raise(self, feed, match: str):
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error classes
            self.sess.run(None, feed)
        with pytest.raises(RuntimeError, match=match):
            self._ours(feed)


def _x(rows: int, cols: int = 6):
    return np.arange(rows * cols, dtype="float32").reshape(rows, cols)


def test_slice_steps_starts_and_ends_read_at_run_time():
    both = _Both(_model([node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl")],
                        [("x", F, ["N", 6]), ("s", I64, [2]), ("e", I64, [2]), ("st", I64, [2])],
                        inits={"a": np.array([1, 0])}))
    big = 2**62
    cases = [  # (starts, ends, steps) over (columns, rows)
        ([0, 0], [6, big], [1, 1]), ([5, -1], [-100, -big], [-1, -1]), ([-1, 0], [0, 9], [-2, 3]),
        ([1, 2], [5, 1], [2, -1]), ([-100, 100], [-100, -100], [-1, -2]), ([4, 0], [2, 1], [1, 1]),
        ([100, -big], [-7, big], [-3, 2]), ([2, 1], [big, 2], [4, 5])]
    for n in (1, 3, 7):
        for s, e, st in cases:
            both.same({"x": _x(n), "s": np.array(s), "e": np.array(e), "st": np.array(st)})
    both.both_raise({"x": _x(3), "s": np.array([0, 0]), "e": np.array([6, 3]),
                     "st": np.array([1, 0])}, r"Slice node 'sl': the step 0 of axis 0 is zero")


def test_negative_constant_steps_with_bounds_read_at_run_time():
    # (refused before: "needs positive steps")
    both = _Both(_model([node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl")],
                        [("x", F, ["N", 6]), ("s", I64, [1]), ("e", I64, [1])],
                        inits={"a": np.array([1]), "st": np.array([-2])}))
    for n in (1, 4):
        for s, e in ((-1, -100), (4, 0), (100, 1), (-100, -100), (2, 5)):
            both.same({"x": _x(n), "s": np.array([s]), "e": np.array([e])})


def test_slice_steps_computed_from_the_batch():
    # x[:, ::-(N - 1)] over 6 columns, and x[::N - 1]: a step of 0 at batch 1 is an error
    both = _Both(_model([node("Shape", ["x"], ["n"], start=0, end=1),
                         node("Sub", ["n", "one"], ["k"]), node("Neg", ["k"], ["m"]),
                         node("Concat", ["m", "k"], ["st"], axis=0),
                         node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl")],
                        [("x", F, ["N", 6])],
                        inits={"one": np.array([1]), "s": np.array([-1, 0]),
                               "e": np.array([-2**62, 2**62]), "a": np.array([1, 0])}))
    for n in (2, 3, 7):
        both.same({"x": _x(n)})
    both.both_raise({"x": _x(1)}, r"Slice node 'sl': the step 0 of axis 1 is zero")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_axes_read_at_run_time(mode):
    both = _Both(_model([node("Pad", ["x", "p", "v", "ax"], ["y"], mode=mode, name="pd")],
                        [("x", F, ["N", 6]), ("p", I64, [2]), ("ax", I64, [1])],
                        inits={"v": np.array(-3.0, "float32")}))
    for n in (2, 3, 7):
        for p, ax in (([1, 2], [1]), ([1, 1], [-2]), ([-1, 2], [-1]), ([0, 1], [0])):
            both.same({"x": _x(n), "p": np.array(p), "ax": np.array(ax)})
    both.both_raise({"x": _x(3), "p": np.array([1, 2]), "ax": np.array([2])},
                    r"Pad node 'pd': the axes \[2\] must be distinct, each in \[-2, 2\)")


def test_pads_and_axes_of_two_axes_read_at_run_time():
    both = _Both(_model([node("Pad", ["x", "p", "", "ax"], ["y"], name="pd")],
                        [("x", F, ["N", 6]), ("p", I64, [4]), ("ax", I64, [2])]))
    for n in (1, 3):
        for p, ax in (([1, 2, 0, 3], [0, 1]), ([1, 2, 0, 3], [-1, 0]), ([0, -2, 2, 1], [1, 0])):
            both.same({"x": _x(n), "p": np.array(p), "ax": np.array(ax)})


def test_wrap_padding_of_the_run_time_batch_axis():
    both = _Both(_model([node("Pad", ["x", "p"], ["y"], mode="wrap", name="pd")],
                        [("x", F, ["N", 6])], inits={"p": np.array([2, -1, 3, 1])}))
    for n in (1, 3, 7):
        both.same({"x": _x(n)})
