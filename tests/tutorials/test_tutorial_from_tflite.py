"""TVM's "Compile TFLite Models" tutorial with ``import minitvm as tvm``: read the flatbuffer
with ``tflite.Model.GetRootAsModel(buf, 0)``, import with ``relay.frontend.from_tflite(model,
shape_dict=..., dtype_dict=...)``, build, run with the graph executor. The model (conv with a
fused ReLU, average pool, fully connected, softmax) is written here with minitvm's flatbuffer
builder instead of downloaded; the reference is the same network in numpy."""

from __future__ import annotations

import numpy as np
import pytest

tflite = pytest.importorskip("tflite", reason="the TFLite tutorial needs the tflite package")

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402


def small_tflite_model(rng):
    """Bytes of a .tflite file (NHWC conv 3x3 SAME + ReLU, 2x2 avg pool, FC, softmax) and a
    numpy function computing the same network."""
    b = ModelBuilder()
    x = b.input("input", (1, 8, 8, 3))
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.5).astype("float32")  # OHWI
    bias = rng.standard_normal(4).astype("float32")
    fc_w = rng.standard_normal((5, 64)).astype("float32")
    fc_b = rng.standard_normal(5).astype("float32")
    conv = b.tensor("conv", (1, 8, 8, 4))
    b.operator("CONV_2D", [x, b.constant("w", w), b.constant("b", bias)], [conv],
               "Conv2DOptions", Padding=0, StrideH=1, StrideW=1, DilationHFactor=1,
               DilationWFactor=1, FusedActivationFunction=1)
    pool = b.tensor("pool", (1, 4, 4, 4))
    b.operator("AVERAGE_POOL_2D", [conv], [pool], "Pool2DOptions", Padding=1, StrideH=2,
               StrideW=2, FilterHeight=2, FilterWidth=2, FusedActivationFunction=0)
    flat = b.tensor("flat", (1, 64))
    b.operator("RESHAPE", [pool, b.constant("shape", np.array([1, 64], "int32"))], [flat])
    fc = b.tensor("fc", (1, 5))
    b.operator("FULLY_CONNECTED", [flat, b.constant("fc_w", fc_w), b.constant("fc_b", fc_b)],
               [fc], "FullyConnectedOptions", FusedActivationFunction=0)
    prob = b.tensor("prob", (1, 5))
    b.operator("SOFTMAX", [fc], [prob], "SoftmaxOptions", Beta=1.0)
    b.output(prob)

    def reference(data):
        padded = np.pad(data, ((0, 0), (1, 1), (1, 1), (0, 0)))
        out = np.zeros((1, 8, 8, 4), "float64")
        for i in range(8):
            for j in range(8):
                patch = padded[0, i:i + 3, j:j + 3, :]
                out[0, i, j] = np.tensordot(w, patch, axes=([1, 2, 3], [0, 1, 2])) + bias
        out = np.maximum(out, 0)
        pooled = out.reshape(1, 4, 2, 4, 2, 4).mean(axis=(2, 4))
        logits = pooled.reshape(1, 64) @ fc_w.T + fc_b
        e = np.exp(logits - logits.max())
        return e / e.sum()

    return b.finish(), reference


def test_compile_tflite_model(tmp_path):
    rng = np.random.default_rng(0)
    data, reference = small_tflite_model(rng)
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    tflite_model_buf = open(path, "rb").read()
    tflite_model = tflite.Model.GetRootAsModel(tflite_model_buf, 0)

    input_tensor, input_shape, input_dtype = "input", (1, 8, 8, 3), "float32"
    mod, params = relay.frontend.from_tflite(
        tflite_model, shape_dict={input_tensor: input_shape},
        dtype_dict={input_tensor: input_dtype})
    text = mod.astext(show_meta_data=False)
    assert 'data_layout="NHWC"' in text and "nn.softmax" in text

    target = "llvm"
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target, params=params)
    image_data = rng.standard_normal(input_shape).astype("float32")
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    module.set_input(input_tensor, tvm.nd.array(image_data))
    module.run()
    tvm_output = module.get_output(0).numpy()
    np.testing.assert_allclose(tvm_output, reference(image_data), rtol=1e-4, atol=1e-6)
    assert np.argsort(tvm_output[0])[-1] == np.argmax(reference(image_data)[0])
