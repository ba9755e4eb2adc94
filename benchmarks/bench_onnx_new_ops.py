"""One-thread latency of the ONNX ops the importers gained at stop 43 (Attention with a causal
mask and grouped heads, STFT of one second of 16 kHz audio, RoiAlign over 64 boxes), minitvm's
Relay and Relax builds against ONNX Runtime: interleaved rounds, CPU time of this thread,
medians. ``TVM_NUM_THREADS=1 python benchmarks/bench_onnx_new_ops.py``"""

from __future__ import annotations

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx_attention_cases import _case, attention_inputs, attention_model  # noqa: E402
from onnx_audio_cases import stft_inputs, stft_model  # noqa: E402
from onnx_roi_cases import roi_align_inputs, roi_align_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


def relay_runner(model, feeds):
    shapes = {k: v.shape for k, v in feeds.items()}
    mod, params = relay.frontend.from_onnx(model, shapes,
                                           {k: str(v.dtype) for k, v in feeds.items()})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        g.set_input(k, v)
    return g.run


def relax_runner(model, feeds):
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(model), "llvm"),
                              tvm.cpu())
    args = [tvm.nd.array(feeds[i.name]) for i in model.graph.input]
    return lambda: vm["main"](*args)


def ort_runner(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


def per_call(fn, n: int) -> float:
    t0 = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - t0) / n


def models():
    c = _case(b=1, hq=8, hkv=2, sq=128, skv=128, d=64, dv=64, attrs={"is_causal": 1})
    yield "attention b1 q8/kv2 s128 d64 causal", attention_model(c), attention_inputs(c)
    s = ((1, 16000, 1), 160, "hann", 400, 1)
    yield "stft 16000 samples hann 400/160", stft_model(s), stft_inputs(s)
    r = ((1, 64, 32, 32), {"output_height": 7, "output_width": 7, "sampling_ratio": 2,
                           "spatial_scale": 0.25}, 16)
    feeds = roi_align_inputs(r, 64)
    feeds["rois"] = np.abs(feeds["rois"]) * 4
    yield "roialign 64 boxes 64x32x32 -> 7x7", roi_align_model(r, 64), feeds


def main(rounds: int = 7, calls: int = 20) -> None:
    for name, model, feeds in models():
        fns = {"relay": relay_runner(model, feeds), "relax": relax_runner(model, feeds),
               "ort": ort_runner(model, feeds)}
        times = {k: [] for k in fns}
        for f in fns.values():
            f()
        for _ in range(rounds):
            for k, f in fns.items():
                times[k].append(per_call(f, calls))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name}: relay {med['relay'] * 1e3:.3f} ms ({med['relay'] / med['ort']:.2f}x "
              f"ORT), relax {med['relax'] * 1e3:.3f} ms ({med['relax'] / med['ort']:.2f}x), "
              f"ORT {med['ort'] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
