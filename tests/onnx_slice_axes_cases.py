"""ONNX Slice models whose axes (and some bounds) are graph inputs, shared by the Relay and
Relax importer tests: the model, its run-time cases, and the axes onnxruntime rejects."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

CONSTANTS = {"st": [1, -3], "en": [4, 100], "ax": [1, -1], "sp": [1, 2]}

# (graph inputs among starts / ends / axes / steps, the values fed to them)
CASES = [
    (("ax",), {"ax": [1, -1]}),
    (("ax",), {"ax": [2, 0]}),  # (the starts / ends / steps apply to axes 2 and 0 now)
    (("st", "ax"), {"st": [0, 2], "ax": [-1, 1]}),
    (("st", "en", "ax"), {"st": [-2, 5], "en": [-100, 1], "ax": [0, 2]}),
]

BAD_AXES = [[1, 1], [3, 0], [-4, 1]]


def slice_model(given: tuple, steps: list | None = None, batch="N"):
    """Slice of an (N, 6, 5) float input; ``given`` names the operands read from data, the
    rest are constants (``steps`` replaces the constant steps)."""
    const = dict(CONSTANTS, sp=steps if steps is not None else CONSTANTS["sp"])
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 6, 5])]
    inits = []
    for name in ("st", "en", "ax", "sp"):
        if name in given:
            ins.append(helper.make_tensor_value_info(name, TensorProto.INT64, [2]))
        else:
            inits.append(helper.make_tensor(name, TensorProto.INT64, [2], const[name]))
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="sl")], "g", ins,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def feeds(given: tuple, values: dict, batch: int = 3) -> dict:
    """The run-time inputs of ``slice_model(given)``: x, then the given operands in order."""
    x = np.random.default_rng(batch).standard_normal((batch, 6, 5)).astype("float32")
    out = {"x": x}
    out.update({n: np.array(values[n], "int64") for n in ("st", "en", "ax", "sp") if n in given})
    return out
