"""ONNX ops whose sizes are read at run time, against onnxruntime: sizes it accepts give its
answer, sizes it rejects (Split sizes not adding up, a depth <= 0, pads past the input, a
negative shape, a size or scale <= 0, K past the axis, a zero delta) raise an error naming the
node and the values instead of a clipped or repeated answer. Range / Slice / TopK bounds read
from graph inputs in a model with a run-time batch are taken at run time (no input to bind)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="these ONNX models need the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node


def _model(nodes, inputs, outputs, opset=18):
    """A model of ``nodes``; ``inputs`` / ``outputs``: (name, element type, shape or None)."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


class _Both:
    """A model compiled once for the Relay VM (strict-native) and its onnxruntime session."""

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
        got = self.vm.invoke("main", *[tvm.nd.array(feed[p.name_hint])
                                       for p in self.mod["main"].params])
        return [got] if isinstance(got, tvm.nd.NDArray) else list(got)

    def same(self, feed):
        want = self.sess.run(None, feed)
        got = self._ours(feed)
        for g, w in zip(got, want, strict=True):
            assert g.numpy().shape == w.shape
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)

    def both_raise(self, feed, match: str):
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error classes
            self.sess.run(None, feed)
        with pytest.raises(RuntimeError, match=match):
            self._ours(feed)


def _x(rows: int, cols: int = 3):
    return np.arange(rows * cols, dtype="float32").reshape(rows, cols)


def test_split_sizes_from_an_input_must_add_up_to_the_axis():
    both = _Both(_model([node("Split", ["x", "s"], ["a", "b"], axis=0, name="sp")],
                        [("x", F, ["N", 3]), ("s", I64, [2])],
                        [("a", F, None), ("b", F, None)]))
    both.same({"x": _x(5), "s": np.array([2, 3])})
    both.same({"x": _x(4), "s": np.array([0, 4])})
    both.both_raise({"x": _x(5), "s": np.array([2, 2])},
                    r"Split node 'sp': the split sizes \[2, 2\] must be 2 values >= 0 adding up "
                    r"to 5, the size of axis 0")
    both.both_raise({"x": _x(5), "s": np.array([6, -1])}, r"split sizes \[6, -1\]")


def test_constant_split_sizes_of_a_run_time_axis_are_checked():
    model = _model([node("Split", ["x", "s"], ["a", "b"], axis=0)],
                   [("x", F, ["N", 3])], [("a", F, None), ("b", F, None)])
    model.graph.initializer.append(helper.make_tensor("s", I64, [2], [1, 2]))
    both = _Both(model)
    assert "Tensor[(1, 3), float32]" in both.mod.astext()  # (the parts stay static)
    both.same({"x": _x(3)})
    both.both_raise({"x": _x(4)}, r"the split sizes \[1, 2\] add up to 3, not to 4")


def test_one_hot_depth_must_be_positive():
    model = _model([node("OneHot", ["i", "d", "v"], ["y"])],
                   [("i", I64, ["N"]), ("d", I64, [1])], [("y", F, None)])
    model.graph.initializer.append(helper.make_tensor("v", F, [2], [0.0, 1.0]))
    both = _Both(model)
    both.same({"i": np.array([0, 2, -1]), "d": np.array([3])})
    for d in (0, -2):
        both.both_raise({"i": np.array([0, 1]), "d": np.array([d])},
                        rf"OneHot: depth {d} must be positive")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pads_from_an_input(mode):
    """Crops reaching into the padding (constant: pad, then crop), and pads onnxruntime
    rejects: a negative output size, an axis cropped empty (not constant), a reflect pad at
    or past the size."""
    both = _Both(_model([node("Pad", ["x", "p"], ["y"], mode=mode)],
                        [("x", F, ["N", 3]), ("p", I64, [4])], [("y", F, None)]))
    ok = [[-1, 0, 2, 1], [1, 1, 2, 0], [-4, 0, 0, 0]]
    bad = [[-3, 0, -3, 0], [0, -4, 0, 0]]
    if mode == "constant":
        ok += [[-6, 0, 2, 0], [-5, 0, 0, 0]]
    else:
        bad += [[-5, 0, 0, 0], [-6, 0, 2, 0]]
    if mode == "reflect":
        bad += [[5, 0, 0, 0]]
    for p in ok:
        both.same({"x": _x(5), "p": np.array(p)})
    for p in bad:
        both.both_raise({"x": _x(5), "p": np.array(p)},
                        rf"Pad: {mode} pads \[.*\] \(begin, end per axis\) do not fit the input "
                        r"of shape \[5, 3\]")


def test_constant_of_shape_rejects_a_negative_size():
    value = helper.make_tensor("v", F, [1], [1.5])
    both = _Both(_model([node("ConstantOfShape", ["s"], ["y"], value=value),
                         node("Shape", ["x"], ["sx"])],
                        [("x", F, ["N"]), ("s", I64, [2])],
                        [("y", F, None), ("sx", I64, None)]))
    both.same({"x": np.zeros(2, "float32"), "s": np.array([2, 0])})
    both.both_raise({"x": np.zeros(2, "float32"), "s": np.array([2, -1])},
                    r"ConstantOfShape: the shape \[2, -1\] has a negative size")


def test_constant_of_shape_of_a_computed_negative_size():
    """shape [batch - 3]: a negative size at batch 2."""
    value = helper.make_tensor("v", F, [1], [1.0])
    nodes = [node("Shape", ["x"], ["s"]), node("Sub", ["s", "three"], ["n"]),
             node("ConstantOfShape", ["n"], ["y"], value=value)]
    model = _model(nodes, [("x", F, ["N"])], [("y", F, None)])
    model.graph.initializer.append(helper.make_tensor("three", I64, [1], [3]))
    both = _Both(model)
    both.same({"x": np.zeros(5, "float32")})
    both.both_raise({"x": np.zeros(2, "float32")}, r"ConstantOfShape: the shape \[-1\]")


def test_resize_sizes_and_scales_must_be_positive():
    """Sizes / scales of the height and width (``axes``) read from an input."""
    x = np.arange(24, dtype="float32").reshape(2, 1, 3, 4)
    for name, t, good, bad in (("sizes", np.int64, [6, 2], [0, 4]),
                               ("scales", np.float32, [2, 0.5], [-1, 1])):
        ins = ["x", "", "", "s"] if name == "sizes" else ["x", "", "s"]
        both = _Both(_model([node("Resize", ins, ["y"], mode="nearest", axes=[2, 3])],
                            [("x", F, ["N", 1, 3, 4]), ("s", I64 if name == "sizes" else F, [2])],
                            [("y", F, None)]))
        both.same({"x": x, "s": np.array(good, t)})
        both.both_raise({"x": x, "s": np.array(bad, t)},
                        r"Resize: the spatial (output sizes|scales) \[.*\].* must be positive")


def test_top_k_of_an_input_k_in_a_model_with_a_run_time_batch():
    both = _Both(_model([node("TopK", ["x", "k"], ["v", "i"], axis=0)],
                        [("x", F, ["N", 3]), ("k", I64, [1])],
                        [("v", F, None), ("i", I64, None)]))
    for k in (0, 2, 5):
        both.same({"x": _x(5)[::-1].copy(), "k": np.array([k])})
    both.both_raise({"x": _x(5), "k": np.array([6])}, r"TopK: K=6 is outside \[0, 5\]")
    both.both_raise({"x": _x(5), "k": np.array([-1])}, r"TopK: K=-1 is outside")


def test_range_of_inputs_in_a_model_with_a_run_time_batch():
    nodes = [node("Range", ["a", "b", "d"], ["r"]), node("Shape", ["x"], ["sx"])]
    both = _Both(_model(nodes, [("x", F, ["N"]), ("a", I64, []), ("b", I64, []),
                                ("d", I64, [])], [("r", I64, None), ("sx", I64, None)]))
    x = np.zeros(2, "float32")
    for a, b, d in ((0, 5, 1), (7, 1, -2), (5, 0, 1)):
        both.same({"x": x, "a": np.array(a), "b": np.array(b), "d": np.array(d)})
    both.both_raise({"x": x, "a": np.array(0), "b": np.array(5), "d": np.array(0)},
                    r"Range: delta 0 must not be zero")


def test_range_to_a_data_dependent_limit():
    """limit = max(ids) + 1, read from data in a model with a run-time batch."""
    nodes = [node("ReduceMax", ["ids"], ["m"], keepdims=0), node("Range", ["z", "m", "one"],
                                                                   ["r"])]
    model = _model(nodes, [("ids", I64, ["N"])], [("r", I64, None)])
    model.graph.initializer.extend([helper.make_tensor("z", I64, [], [0]),
                                    helper.make_tensor("one", I64, [], [1])])
    both = _Both(model)
    for ids in ([3, 1], [0], [6, 2, 2]):
        both.same({"ids": np.array(ids, "int64")})


def test_slice_bounds_of_inputs_in_a_model_with_a_run_time_batch():
    model = _model([node("Slice", ["x", "st", "en", "ax"], ["y"])],
                   [("x", F, ["N", 4]), ("st", I64, [2]), ("en", I64, [2])], [("y", F, None)])
    model.graph.initializer.append(helper.make_tensor("ax", I64, [2], [0, 1]))
    both = _Both(model)
    x = _x(5, 4)
    for st, en in (([1, 0], [4, 3]), ([-2, 1], [100, -1]), ([3, 2], [1, 4])):
        both.same({"x": x, "st": np.array(st), "en": np.array(en)})


def test_top_k_and_slice_of_bounds_computed_from_data():
    """K = max(ids) and a slice to max(ids), read from data in a model with a run-time batch."""
    nodes = [node("ReduceMax", ["ids"], ["m"], keepdims=1),
             node("TopK", ["x", "m"], ["v", "i"], axis=0),
             node("Slice", ["x", "z", "m", "z"], ["s"])]
    model = _model(nodes, [("x", F, ["N", 3]), ("ids", I64, [2])],
                   [("v", F, None), ("i", I64, None), ("s", F, None)])
    model.graph.initializer.append(helper.make_tensor("z", I64, [1], [0]))
    both = _Both(model)
    for rows, ids in ((5, [1, 3]), (4, [4, 0])):
        both.same({"x": _x(rows)[::-1].copy(), "ids": np.array(ids)})
    both.both_raise({"x": _x(2), "ids": np.array([3, 1])}, r"TopK: K=3 is outside \[0, 2\]")


def test_equal_split_of_a_run_time_axis_must_divide_evenly_without_num_outputs():
    """Opset 13 (no num_outputs): the batch must split evenly; opset 18's num_outputs makes
    the last part smaller (a batch of 4 into 3: 2, 2, 0)."""
    outs = [(o, F, None) for o in "abc"]
    even = _Both(_model([node("Split", ["x"], ["a", "b", "c"], axis=0)],
                        [("x", F, ["N", 2])], outs, opset=13))
    even.same({"x": _x(6, 2)})
    even.both_raise({"x": _x(7, 2)}, r"Split: the size 7 of axis 0 does not split evenly into 3")
    last = _Both(_model([node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)],
                        [("x", F, ["N", 2])], outs))
    for rows in (7, 4, 2):
        last.same({"x": _x(rows, 2)})


def test_constant_sizes_onnxruntime_rejects_fail_at_import():
    from minitvm.relay.frontend.common import ImportError_

    cases = [
        ([node("OneHot", ["i", "d", "v"], ["y"])], {"d": [0], "v": [0.0, 1.0]},
         [("i", I64, [2])], r"OneHot: depth 0 must be positive"),
        ([node("ConstantOfShape", ["s"], ["y"])], {"s": [2, -1]}, [],
         r"ConstantOfShape: the shape \[2, -1\] has a negative size"),
        ([node("Split", ["x"], ["a", "b", "c"], axis=0)], {}, [("x", F, [4, 2])],
         r"Split: axis 0 of size 4 does not split evenly into 3 outputs")]
    for nodes, inits, inputs, match in cases:
        model = _model(nodes, inputs, [(o, F, None) for o in nodes[0].output], opset=13)
        for name, v in inits.items():
            dt = F if isinstance(v[0], float) else I64
            model.graph.initializer.append(helper.make_tensor(name, dt, [len(v)], v))
        with warnings.catch_warnings(), pytest.raises(ImportError_, match=match):
            warnings.simplefilter("ignore")
            relay.frontend.from_onnx(model)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_constant_pads_as_onnxruntime(mode):
    """Constant pads of a static input: the answer onnxruntime gives (constant: a crop into
    the padding keeps it), or an import error where it rejects them."""
    from minitvm.relay.frontend.common import ImportError_

    x = _x(5)
    for p in ([-6, 0, 2, 0], [-3, 0, -3, 0], [5, 0, 0, 0], [-5, 0, 0, 0], [-1, 0, 2, 1]):
        model = _model([node("Pad", ["x", "p"], ["y"], mode=mode)], [("x", F, [5, 3])],
                       [("y", F, None)])
        model.graph.initializer.append(helper.make_tensor("p", I64, [4], p))
        try:
            want = ort.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, {"x": x})
        except Exception:  # noqa: BLE001 - onnxruntime's own error classes
            with warnings.catch_warnings(), pytest.raises(ImportError_, match="Pad: .*pads"):
                warnings.simplefilter("ignore")
                relay.frontend.from_onnx(model)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod, _ = relay.frontend.from_onnx(model)
        got = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
        np.testing.assert_array_equal(got, want[0])
