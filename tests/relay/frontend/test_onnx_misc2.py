"""relay.frontend.from_onnx on LpPool, GlobalLpPool, CenterCropPad, Det, Compress and
MaxUnpool (and CumProd, ReverseSequence, Upsample, which the Relax importer gained beside
them): built strict-native and compared with onnx's reference implementation (numpy or ONNX
Runtime where that one has no implementation); and the errors for what cannot be imported."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
from frontend_models import build_and_run  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_misc2_cases import _x, cases, one_node  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402

CASES = {name: (model, feeds, expected) for name, model, feeds, expected in cases()}


def _expected(model, feeds, expected):
    if expected is None:
        return ReferenceEvaluator(model).run(None, feeds)[0]
    if isinstance(expected, str):
        ort = pytest.importorskip("onnxruntime", reason="only ONNX Runtime implements this case")
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    return expected


def _run(model, feeds):
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()},
                                           {k: str(v.dtype) for k, v in feeds.items()})
    return mod, build_and_run(mod, params, feeds)[0]


@pytest.mark.parametrize("name", list(CASES))
def test_op(name):
    model, feeds, expected = CASES[name]
    want = _expected(model, feeds, expected)
    got = _run(model, feeds)[1]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", [n for n in CASES if n.split("_")[0] in
                                  ("lppool", "globallppool", "det", "maxunpool",
                                   "centercroppad", "compress")])
def test_op_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    model, feeds, _ = CASES[name]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(_run(model, feeds)[1], sess.run(None, feeds)[0], rtol=1e-4,
                               atol=1e-4)


def test_det_is_a_gather_product_and_sum():
    text = relay.frontend.from_onnx(one_node("Det", [_x((2, 3, 3))]), {"x": (2, 3, 3)})[0]
    text = text.astext()
    assert "take(" in text and "prod(" in text and "sum(" in text


def test_errors_name_the_problem():
    with pytest.raises(ImportError_, match="Det of 7 x 7 matrices is not supported"):
        relay.frontend.from_onnx(one_node("Det", [_x((7, 7))]), {"x": (7, 7)})
    with pytest.raises(ImportError_, match="must be .\\.\\.\\., n, n."):
        relay.frontend.from_onnx(one_node("Det", [_x((2, 3))]), {"x": (2, 3)})
    model = one_node("Compress", [_x((4, 3)), ("c", (4,), onnx.TensorProto.BOOL)],
                     {"axis": 0})
    with pytest.raises(ImportError_, match="condition .the output's length depends on it. "
                                           "must be a constant"):
        relay.frontend.from_onnx(model, {"x": (4, 3), "c": (4,)}, {"c": "bool"})
    model = one_node("LpPool", [_x((1, 1, 2, 2))], {"kernel_shape": [3, 3]})
    with pytest.raises(ImportError_, match="window .3. is larger than the padded input .2."):
        relay.frontend.from_onnx(model, {"x": (1, 1, 2, 2)})
