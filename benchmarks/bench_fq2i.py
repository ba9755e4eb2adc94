"""Is a QDQ model's integer path faster than its float path on this host? bench_quantized's
ResNet-18- and MobileNetV2-shaped int8 ONNX models (quantize_static, QDQ format: int8 or uint8
activations) through Relay four ways, built at opt_level 3, beside ONNX Runtime:

- ``import``: ``relay.frontend.from_onnx`` as it is (QDQ pairs folded at import: float32 ops on
  integer-valued tensors, int8 weights read as such, exact float32 convs of the integers);
- ``qnn float``: ``from_onnx(convert_config={"qdq_as_qnn": True})`` (qnn.quantize /
  qnn.dequantize around float ops), built without FakeQuantizationToInteger;
- ``FQ2I``: the same, then ``FakeQuantizationToInteger`` (TVM's integer path: qnn.conv2d,
  qnn.requantize ...; the requantization in int64, TVM's default);
- ``FQ2I f32``: the same under ``requantize_config(compute_dtype="float32")``.

One thread each, thread CPU time, rounds interleaved (benchmarks/interleave.py). Prints ms per
run, each path's ratio to ORT, and its largest difference from the FQ2I path's output in
steps of the output's int8 grid.

    python benchmarks/bench_fq2i.py [--rounds 5] [--reps 20] [--models resnet18,mobilenetv2]
        [--modes qdq,qdq_u8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _module(lib):
    import minitvm as tvm
    from minitvm.contrib import graph_executor

    return graph_executor.GraphModule(lib["default"](tvm.cpu()))


def builds(proto, shape) -> dict:
    """The four Relay builds of ``proto`` (see the module docstring), as GraphModules."""
    import minitvm as tvm
    from minitvm import relay

    def build(mod, params, requantize=None):
        ctx = relay.qnn.op.requantize_config(compute_dtype=requantize) if requantize else None
        with tvm.transform.PassContext(opt_level=3):
            if ctx is None:
                return _module(relay.build(mod, target="llvm", params=params))
            with ctx:
                return _module(relay.build(mod, target="llvm", params=params))

    out = {"import": build(*relay.frontend.from_onnx(proto, shape={"x": shape}))}
    mod, params = relay.frontend.from_onnx(proto, shape={"x": shape},
                                           convert_config={"qdq_as_qnn": True})
    out["qnn float"] = build(mod, params)
    fq = relay.transform.FakeQuantizationToInteger()(relay.transform.InferType()(mod))
    out["FQ2I"] = build(fq, params)
    out["FQ2I f32"] = build(fq, params, "float32")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20, help="calls per round (median taken)")
    ap.add_argument("--models", default="resnet18,mobilenetv2")
    ap.add_argument("--modes", default="qdq,qdq_u8")
    args = ap.parse_args(argv)

    import logging

    import onnx
    import onnxruntime as ort

    logging.getLogger().setLevel(logging.ERROR)
    from bench_quantized import _models, output_step, quantized_file
    from interleave import settled_rounds

    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    models = _models()
    names = ["import", "qnn float", "FQ2I", "FQ2I f32"]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in args.models.split(","):
            make, shape = models[name]
            for mode in args.modes.split(","):
                proto = onnx.load(quantized_file(d, name, make, shape, mode))
                x = np.random.default_rng(0).standard_normal(shape).astype("float32")
                gms = builds(proto, shape)
                outs = {}
                for k, gm in gms.items():
                    gm.set_input("x", x)
                    gm.run()
                    outs[k] = gm.get_output(0).numpy()
                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                so.log_severity_level = 3
                sess = ort.InferenceSession(proto.SerializeToString(), so,
                                            providers=["CPUExecutionProvider"])
                impls = {k: gm.run for k, gm in gms.items()}
                impls["ort"] = lambda s=sess, x=x: s.run(None, {"x": x})
                times = settled_rounds(impls, args.rounds, args.reps, clock=time.thread_time)
                ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
                step = output_step(proto) or 1.0
                diffs = {k: float(np.abs(outs[k] - outs["FQ2I"]).max()) / step for k in names}
                rows.append((f"{name} {mode}", ms, diffs))
                print(f"{name} {mode}: done", file=sys.stderr, flush=True)
    print("one thread each; thread CPU time; median of rounds (interleaved); ms (ratio to ORT)"
          " [max |diff| from FQ2I, int8 steps]")
    print(f"{'model':<20}" + "".join(f"{k:>22}" for k in names) + f"{'ORT ms':>9}")
    for label, ms, diffs in rows:
        ort_ms = ms["ort"]
        cells = "".join(f"{f'{ms[k]:.3f} ({ms[k] / ort_ms:.2f}) [{diffs[k]:.0f}]':>22}"
                        for k in names)
        print(f"{label:<20}{cells}{ms['ort']:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
