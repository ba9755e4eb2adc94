"""Small ONNX graphs for tests: value infos (tensor and sequence), a model from nodes, a run
through ONNX Runtime, and an output comparison that also walks sequence outputs (lists)."""

from __future__ import annotations

import numpy as np


def vi(name: str, elem_type: int, shape):
    """A tensor value info."""
    from onnx import helper

    return helper.make_tensor_value_info(name, elem_type, shape)


def seq_vi(name: str, elem_type: int | None = None):
    """A sequence-of-tensors value info (float32 elements unless ``elem_type``)."""
    from onnx import TensorProto, helper

    return helper.make_tensor_sequence_value_info(
        name, TensorProto.FLOAT if elem_type is None else elem_type, None)


def model(nodes, inputs, outputs, inits: dict | None = None, opset: int = 18):
    """A model of ``nodes``; an output given by name only gets an empty value info."""
    from onnx import helper, numpy_helper

    outs = [o if not isinstance(o, str) else helper.make_empty_tensor_value_info(o)
            for o in outputs]
    g = helper.make_graph(nodes, "g", inputs, outs,
                          initializer=[numpy_helper.from_array(v, k)
                                       for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def ort_run(m, feeds: dict) -> list:
    """``m``'s outputs from ONNX Runtime (CPU)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_same(got, ref, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Outputs equal to the reference: same count, sequences (lists) element by element, each
    tensor of the same shape and close in value."""
    assert len(got) == len(ref), (len(got), len(ref))
    for g, r in zip(got, ref):
        if isinstance(r, list):
            assert isinstance(g, list) and len(g) == len(r)
            assert_same(g, r, rtol, atol)
        else:
            assert g.shape == np.asarray(r).shape, (g.shape, np.asarray(r).shape)
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
