"""relay.frontend.from_tflite on models written with the flatbuffer builder, then (as in seed
004) ConvertLayout to NCHW, relay.build at opt_level 3, compared with the same network computed
by PyTorch; malformed files and unsupported ops."""

from __future__ import annotations

import numpy as np
import pytest

tflite = pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")
pytest.importorskip("torch", reason="the reference outputs are computed with PyTorch")

import tflite_twin  # noqa: E402
from frontend_models import build_and_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_, OpNotImplemented  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402


def import_convert(data, twin):
    model = tflite.Model.GetRootAsModel(data, 0)
    shapes = {k: v.shape for k, v in twin.inputs().items()}
    dtypes = {k: "float32" for k in shapes}
    mod, params = relay.frontend.from_tflite(model, shape_dict=shapes, dtype_dict=dtypes)
    seq = tvm.transform.Sequential([relay.transform.RemoveUnusedFunctions(),
                                    relay.transform.ConvertLayout({"nn.conv2d": ["NCHW",
                                                                                 "default"]})])
    with tvm.transform.PassContext(opt_level=3):
        converted = seq(mod)
    return mod, converted, params


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_vision_models_nhwc_to_nchw(name):
    twin, (data, refs) = getattr(tflite_twin, name)()
    mod, converted, params = import_convert(data, twin)
    assert 'data_layout="NHWC"' in mod.astext()
    text = converted.astext()
    assert 'data_layout="NHWC"' not in text and "layout_transform" in text
    feeds = twin.inputs()
    for m in (mod, converted):
        out = build_and_run(m, params, feeds)[0]
        np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)


def test_bert_layer():
    twin, (data, refs) = tflite_twin.bert_layer()
    mod, _, params = import_convert(data, twin)
    out = build_and_run(mod, params, twin.inputs())[0]
    np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)


def test_file_path_and_bytes(tmp_path):
    twin, (data, refs) = tflite_twin.mobilenet_v2()
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    mod_a, _ = relay.frontend.from_tflite(str(path))
    mod_b, _ = relay.frontend.from_tflite(data)
    assert tvm.ir.structural_equal(mod_a, mod_b)


def test_conv_structure():
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 2))
    w = b.constant("w", np.ones((3, 3, 3, 2), "float32"))
    y = b.tensor("y", (1, 3, 3, 3))
    b.operator("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=1, StrideH=2, StrideW=2,
               DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=1)
    b.output(y)
    mod, _ = relay.frontend.from_tflite(b.finish())
    xv = relay.var("x", shape=(1, 6, 6, 2))
    body = relay.nn.relu(relay.nn.conv2d(xv, relay.const(np.ones((3, 3, 2, 3), "float32")),
                                         strides=(2, 2), channels=3, kernel_size=(3, 3),
                                         data_layout="NHWC", kernel_layout="HWIO"))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([xv], body)))
    assert tvm.ir.structural_equal(mod["main"], expected["main"])


def test_unsupported_ops_listed():
    b = ModelBuilder()
    x = b.input("x", (1, 4))
    y, z, u = b.tensor("y", (1, 4)), b.tensor("z", (1, 4)), b.tensor("u", (1, 4))
    b.operator("RFFT2D", [x], [y])
    b.operator("HASHTABLE_LOOKUP", [y], [z])
    b.operator("RFFT2D", [z], [u])
    b.output(u)
    with pytest.raises(OpNotImplemented, match=r"TFLite operators.*HASHTABLE_LOOKUP, RFFT2D "
                                               r"\(x2\)"):
        relay.frontend.from_tflite(b.finish())


def test_malformed_files(tmp_path):
    with pytest.raises(ImportError_, match="not a TFLite flatbuffer"):
        relay.frontend.from_tflite(b"\x00\x01\x02 definitely not tflite")
    bad = tmp_path / "trunc.tflite"
    twin, (data, _) = tflite_twin.mobilenet_v2()
    bad.write_bytes(data[:40])
    with pytest.raises(ImportError_, match="malformed TFLite flatbuffer|no subgraph"):
        relay.frontend.from_tflite(str(bad))
    with pytest.raises(TypeError, match="tflite.Model, bytes or a file path"):
        relay.frontend.from_tflite(3.5)
