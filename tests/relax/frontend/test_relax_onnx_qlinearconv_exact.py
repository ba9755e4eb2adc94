"""A grouped QLinearConv of int8 weights (a float32 conv of exact integer sums, requantized)
equals the exact integer reference in both importers: the build must not fold the requantize
scale into the weights (FoldConvScale), which moved one output across a rounding midpoint."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the model is an ONNX QLinearConv")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402
from minitvm.runtime import vm as relay_vm  # noqa: E402

C, O, GROUPS = 8, 12, 4


def _model(w):
    inits = [numpy_helper.from_array(np.array(v, dt), name) for name, v, dt in (
        ("xs", 0.02, "float32"), ("xz", 128, "uint8"), ("ws", 0.01, "float32"),
        ("wz", 0, "int8"), ("ys", 0.05, "float32"), ("yz", 120, "uint8"))]
    inits.append(numpy_helper.from_array(w, "w"))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                            group=GROUPS, pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, C, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _reference(x, w):
    """ONNX's QLinearConv in integers: int32 sums, then round-half-even of sum * multiplier
    (float32, as ONNX Runtime), plus the zero point, saturated."""
    xp = np.pad(x.astype(np.int64) - 128, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((1, O, 6, 6), np.int64)
    cg, og = C // GROUPS, O // GROUPS
    for o in range(O):
        g = o // og
        for i in range(6):
            for j in range(6):
                acc[0, o, i, j] = np.sum(xp[0, g * cg:(g + 1) * cg, i:i + 3, j:j + 3] *
                                         w[o].astype(np.int64))
    mult = np.float32(np.float32(0.02) * np.float32(0.01)) / np.float32(0.05)
    return np.clip(np.round(acc.astype(np.float32) * mult) + 120, 0, 255).astype("uint8")


def test_grouped_int8_qlinearconv_is_exact_in_both_dialects():
    rng = np.random.default_rng(1)  # (an output the folded scale put one step off)
    w = rng.integers(-60, 60, (O, C // GROUPS, 3, 3)).astype(np.int8)
    x = rng.integers(0, 255, (1, C, 6, 6)).astype(np.uint8)
    want = _reference(x, w)
    model = _model(w)
    ex = relax.build(from_onnx(model), target="llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_array_equal(got, want)
    mod, params = relay.frontend.from_onnx(model)
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    np.testing.assert_array_equal(relay_vm.VirtualMachine(exe, tvm.cpu()).run(x).numpy(), want)
