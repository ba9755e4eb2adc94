"""int8 models as a new user makes them, minitvm beside ONNX Runtime on the same quantized
file: small PyTorch models (ResNet-18- and MobileNetV2-shaped conv nets: MobileNetV2 at width 0.5,
64x64, and at full width, ``mobilenetv2_w1`` at 112x112 and ``mobilenetv2_w1_224``; a
transformer MLP block, a BERT-like encoder layer of 128 tokens x 256) exported to ONNX and quantized with onnxruntime.quantization three ways:

- ``qdq``: quantize_static, QDQ format (QuantizeLinear / DequantizeLinear pairs), int8
  activations and weights, calibrated on a few random batches;
- ``qop``: quantize_static, QOperator format (QLinearConv, com.microsoft QGemm / QLinearAdd...),
  uint8 activations and int8 weights (what ORT asks for on x86: its U8S8 kernels);
- ``qdq_u8``: QDQ format with uint8 activations;
- ``dynamic``: quantize_dynamic (DynamicQuantizeLinear + ConvInteger / MatMulInteger).

Each is imported with relay.frontend.from_onnx (and with Relax's importer: the Relax column,
unless --no-relax), built at opt_level 3 and timed at one thread beside ORT (one intra-op
thread), rounds interleaved (benchmarks/interleave.py), thread CPU time. Prints a table: model,
minitvm (Relay) ms, Relax ms, ORT ms, Relay / ORT ratio, the largest difference from ORT's
output (and in steps of the output's int8 grid where a DequantizeLinear makes the output;
Relay's, and Relax's where it differs more).

On a host whose ORT saturates its uint8 x int8 products (no VNNI: ``tests/ort_int8_reference``),
ORT also runs the same model with its int8 weights moved to uint8 (``exact_weights``: its exact
uint8 x uint8 kernels; the ``ORT u8u8`` column, where the model has such weights), and the
differences are taken from that exact run.

    python benchmarks/bench_quantized.py [--rounds 5] [--models resnet18,mlp] [--modes qdq,qop]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "relay", "frontend"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def _mlp():
    from torch import nn

    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))


def _encoder(hidden: int = 256, heads: int = 4, ffn: int = 1024):
    """A BERT-like encoder layer: QKV and output projections, scaled dot-product attention,
    a GELU MLP, residual adds and post-LayerNorms (what a transformer a new user quantizes
    is made of)."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.up, self.down = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.act = nn.GELU()

        def forward(self, x):
            b, s, _ = x.shape
            d = hidden // heads
            q, k, v = self.qkv(x).reshape(b, s, 3, heads, d).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5, dim=-1)
            y = self.ln1(x + self.out((att @ v).transpose(1, 2).reshape(b, s, hidden)))
            return self.ln2(y + self.down(self.act(self.up(y))))

    return Layer()


def _models():
    import frontend_models as fm

    return {
        "resnet18": (lambda: fm.randomize_batchnorm(fm.resnet18(16, 10)), (1, 3, 64, 64)),
        "mobilenetv2": (lambda: fm.randomize_batchnorm(fm.mobilenet_v2(0.5, 10)),
                        (1, 3, 64, 64)),
        # (full width: the MobileNetV2 a new user quantizes; 112x112 keeps the rounds short)
        "mobilenetv2_w1": (lambda: fm.randomize_batchnorm(fm.mobilenet_v2(1.0, 1000)),
                           (1, 3, 112, 112)),
        "mobilenetv2_w1_224": (lambda: fm.randomize_batchnorm(fm.mobilenet_v2(1.0, 1000)),
                               (1, 3, 224, 224)),
        "mlp": (_mlp, (16, 64)),
        "encoder": (_encoder, (1, 128, 256)),
    }


def float_file(d: str, name: str, make, shape) -> str:
    """The float32 ONNX export of model ``name`` (``make()``, input ``x`` of ``shape``), written
    once in ``d``."""
    import torch

    f32 = os.path.join(d, f"{name}.onnx")
    if not os.path.exists(f32):
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(make().eval(), (torch.randn(*shape),), f32, opset_version=17,
                              input_names=["x"], dynamo=False)
    return f32


def calibration_reader(shape):
    """quantize_static's calibration data: four random batches of input ``x``."""
    from onnxruntime.quantization import CalibrationDataReader

    class Batches(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.it = iter([{"x": rng.standard_normal(shape).astype("float32")}
                            for _ in range(4)])

        def get_next(self):
            return next(self.it, None)

    return Batches()


def quantized_file(d: str, name: str, make, shape, mode: str) -> str:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    f32, q = float_file(d, name, make, shape), os.path.join(d, f"{name}_{mode}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "dynamic":
            quantize_dynamic(f32, q, weight_type=QuantType.QInt8)
        else:
            fmt = QuantFormat.QOperator if mode == "qop" else QuantFormat.QDQ
            act = QuantType.QInt8 if mode == "qdq" else QuantType.QUInt8
            quantize_static(f32, q, calibration_reader(shape), quant_format=fmt,
                            activation_type=act, weight_type=QuantType.QInt8)
    return q


def output_step(proto) -> float:
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    for node in proto.graph.node:
        if node.output[0] == proto.graph.output[0].name and node.op_type == "DequantizeLinear":
            return float(np.max(inits[node.input[1]]))
    return 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20, help="calls per round (median taken)")
    ap.add_argument("--models", default="resnet18,mobilenetv2,mlp,encoder")
    ap.add_argument("--modes", default="qdq,qdq_u8,qop,dynamic")
    ap.add_argument("--no-relax", action="store_true", help="leave out the Relax column")
    args = ap.parse_args(argv)

    import logging

    import onnx
    import onnxruntime as ort

    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's advice on preprocessing
    from interleave import settled_rounds
    from ort_int8_reference import exact_weights, ort_saturates

    import minitvm as tvm
    from minitvm import relax, relay
    from minitvm.contrib import graph_executor
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    models = _models()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in args.models.split(","):
            make, shape = models[name]
            for mode in args.modes.split(","):
                path = quantized_file(d, name, make, shape, mode)
                proto = onnx.load(path)
                mod, params = relay.frontend.from_onnx(proto, shape={"x": shape})
                with tvm.transform.PassContext(opt_level=3):
                    lib = relay.build(mod, target="llvm", params=params)
                gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
                x = np.random.default_rng(0).standard_normal(shape).astype("float32")
                gm.set_input("x", x)
                gm.run()
                ours = gm.get_output(0).numpy()
                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                so.log_severity_level = 3
                sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                ref = sess.run(None, {"x": x})[0]
                impls = {"minitvm": gm.run, "ort": lambda s=sess, x=x: s.run(None, {"x": x})}
                if ort_saturates():
                    exact, feeds = exact_weights(proto, {"x": x})
                    if exact.SerializeToString() != proto.SerializeToString():
                        xs = ort.InferenceSession(exact.SerializeToString(), so,
                                                  providers=["CPUExecutionProvider"])
                        ref = xs.run(None, feeds)[0]
                        impls["ort_u8u8"] = lambda s=xs, f=feeds: s.run(None, f)
                err = float(np.abs(ours - ref).max())
                step = output_step(proto)
                if not args.no_relax:
                    from minitvm.relax.frontend.onnx import from_onnx as relax_from_onnx

                    with tvm.transform.PassContext(opt_level=3):
                        ex = relax.build(relax_from_onnx(proto, shape_dict={"x": shape}),
                                         "llvm")
                    fn, xnd = relax.VirtualMachine(ex, tvm.cpu())["main"], tvm.nd.array(x)
                    err = max(err, float(np.abs(fn(xnd).numpy() - ref).max()))
                    impls["relax"] = lambda fn=fn, xnd=xnd: fn(xnd)
                times = settled_rounds(impls, args.rounds, args.reps, clock=time.thread_time)
                t_ours = statistics.median(times["minitvm"]) * 1e3
                t_ort = statistics.median(times["ort"]) * 1e3
                t_rx = statistics.median(times["relax"]) * 1e3 if "relax" in times else None
                t_ex = statistics.median(times["ort_u8u8"]) * 1e3 if "ort_u8u8" in times \
                    else None
                rows.append((f"{name} {mode}", t_ours, t_rx, t_ort, t_ex, err, step))
                print(f"{name} {mode}: done", file=sys.stderr, flush=True)
    print("one thread each; thread CPU time; median of rounds (interleaved)")
    print(f"{'model':<22}{'Relay ms':>9}{'Relax ms':>9}{'ORT ms':>9}{'ratio':>7}"
          f"{'ORT u8u8':>9}{'ratio':>7}  max |diff| (int8 steps)")
    for label, a, rx, b, ex, err, step in rows:
        steps = f" ({err / step:.2f})" if step else ""
        rxs = f"{rx:>9.3f}" if rx is not None else f"{'-':>9}"
        exs = f"{ex:>9.3f}{a / ex:>7.2f}" if ex is not None else f"{'-':>9}{'-':>7}"
        print(f"{label:<22}{a:>9.3f}{rxs}{b:>9.3f}{a / b:>7.2f}{exs}  {err:.3g}{steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
