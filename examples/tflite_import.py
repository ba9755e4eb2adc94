"""Import a TFLite model, convert it from NHWC to NCHW as in seed 004, compile and check it.

The model (a MobileNet-style depthwise-separable block with a classifier) is written with the
flatbuffer builder of ``minitvm.relay.frontend.tflite.builder`` (TensorFlow is not needed);
the reference output is the same network computed directly with numpy.

    pip install -e '.[tflite]'
    python examples/tflite_import.py
"""

from __future__ import annotations

import sys

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor

rng = np.random.default_rng(0)
H = W = 16
C, M, K = 3, 8, 10


def conv_nhwc(x, w_hwio, stride=1, groups=1):
    """A SAME-padded NHWC convolution in numpy (the reference)."""
    kh, kw, cin_g, cout = w_hwio.shape
    n, h, wd, c = x.shape
    oh, ow = -(-h // stride), -(-wd // stride)
    ph = max((oh - 1) * stride + kh - h, 0)
    pw = max((ow - 1) * stride + kw - wd, 0)
    xp = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    out = np.zeros((n, oh, ow, cout), np.float64)
    og = cout // groups
    for g in range(groups):
        xs = xp[..., g * cin_g:(g + 1) * cin_g]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
                out[..., g * og:(g + 1) * og] += patch @ w_hwio[i, j, :, g * og:(g + 1) * og]
    return out


def main() -> int:
    try:
        import tflite
    except ImportError:
        print("this example needs the tflite package: pip install -e '.[tflite]'")
        return 0
    from minitvm.relay.frontend.tflite.builder import ModelBuilder

    w1 = rng.standard_normal((M, 3, 3, C)).astype("float32") * 0.3   # CONV_2D: OHWI
    dw = rng.standard_normal((1, 3, 3, M)).astype("float32") * 0.3   # DEPTHWISE: 1HWC
    fc = rng.standard_normal((K, M)).astype("float32") * 0.3
    b = ModelBuilder()
    x = b.input("input", (1, H, W, C))
    t1, t2, t3, t4 = (b.tensor(n, s) for n, s in [("conv", (1, 8, 8, M)), ("dw", (1, 8, 8, M)),
                                                  ("mean", (1, M)), ("logits", (1, K))])
    out = b.tensor("probs", (1, K))
    conv = {"Padding": 0, "DilationHFactor": 1, "DilationWFactor": 1}
    b.operator("CONV_2D", [x, b.constant("w1", w1), -1], [t1], "Conv2DOptions", StrideH=2,
               StrideW=2, FusedActivationFunction=3, **conv)
    b.operator("DEPTHWISE_CONV_2D", [t1, b.constant("dw", dw), -1], [t2],
               "DepthwiseConv2DOptions", StrideH=1, StrideW=1, DepthMultiplier=1,
               FusedActivationFunction=3, **conv)
    b.operator("MEAN", [t2, b.constant("axes", np.array([1, 2], "int32"))], [t3],
               "ReducerOptions", KeepDims=False)
    b.operator("FULLY_CONNECTED", [t3, b.constant("fc", fc), -1], [t4], "FullyConnectedOptions",
               FusedActivationFunction=0)
    b.operator("SOFTMAX", [t4], [out], "SoftmaxOptions", Beta=1.0)
    b.output(out)
    tflite_model = tflite.Model.GetRootAsModel(b.finish(), 0)

    mod, params = relay.frontend.from_tflite(tflite_model, shape_dict={"input": (1, H, W, C)},
                                             dtype_dict={"input": "float32"})
    seq = tvm.transform.Sequential([relay.transform.RemoveUnusedFunctions(),
                                    relay.transform.ConvertLayout({"nn.conv2d": ["NCHW",
                                                                                 "default"]})])
    with tvm.transform.PassContext(opt_level=3):
        mod = seq(mod)
    print("after ConvertLayout:", mod.astext().count('data_layout="NHWC"'), "NHWC convolutions")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    data = rng.standard_normal((1, H, W, C)).astype("float32")
    gm.set_input("input", data)
    gm.run()
    ours = gm.get_output(0).numpy()

    y = np.clip(conv_nhwc(data, w1.transpose(1, 2, 3, 0), stride=2), 0, 6)
    y = np.clip(conv_nhwc(y, dw.transpose(1, 2, 0, 3).reshape(3, 3, 1, M), groups=M), 0, 6)
    logits = y.mean(axis=(1, 2)) @ fc.T
    ref = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    print(f"probs {ours.shape}; max |diff| = {np.abs(ours - ref).max():.2e}")
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
