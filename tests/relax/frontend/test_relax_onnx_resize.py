"""The Relax ONNX importer brings Resize in as one ``image.resize2d`` wherever it samples as the
ONNX taps do (the decision Relay's importer shares), else as per-axis ``take`` taps; both match
ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")

from onnx_resize_cases import RESIZES  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _called_ops(mod) -> set[str]:
    names = set()
    relax.analysis.post_order_visit(
        mod["main"], lambda e: names.add(e.op.name) if isinstance(e, relax.Call)
        and hasattr(e.op, "name") else None)
    return names


@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize_imports_as_resize2d_where_it_samples_the_same(name):
    (model, x), as_resize2d = RESIZES[name]
    mod = from_onnx(model)
    ops = _called_ops(mod)
    assert ("relax.image.resize2d" in ops) == as_resize2d
    assert ("relax.take" in ops) != as_resize2d
    (ref,) = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, {"x": x})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](x).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
