"""One-thread latency of the ONNX ops the importers gained at stops 43 and 44 (Attention with a
causal mask and grouped heads, STFT of one second of 16 kHz audio, RoiAlign over 64 boxes with a
fixed and an adaptive grid, MaxRoiPool, NonMaxSuppression of 1000 boxes x 20 classes, Unique
of 100000 values and of rows, NonZero of 1000 to 150528 values (Relax; Relay's importer needs its
input known at import), GridSample's cubic / reflection / volumetric forms), minitvm's Relay and Relax
builds against ONNX Runtime: interleaved rounds, CPU time of this thread, medians. Relay runs NonMaxSuppression and Unique (data-dependent
result lengths) on its VM, the rest on the graph executor.
``TVM_NUM_THREADS=1 python benchmarks/bench_onnx_new_ops.py [--numpy-share] [name prefix ...]``;
``--numpy-share`` also prints, per Relay VM model, the time per call its primitive functions
spent in the ops' numpy references (the slices after NonMaxSuppression / Unique, whose result
lengths depend on the data, run there by design)."""

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
from onnx_nms_cases import nms_model  # noqa: E402
from onnx_roi_cases import (  # noqa: E402
    max_roi_pool_inputs,
    max_roi_pool_model,
    roi_align_inputs,
    roi_align_model,
)
from onnx_unique_cases import unique_model  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


def relay_runner(model, feeds):
    shapes = {k: v.shape for k, v in feeds.items()}
    mod, params = relay.frontend.from_onnx(model, shapes,
                                           {k: str(v.dtype) for k, v in feeds.items()})
    if any(n.op_type in ("NonMaxSuppression", "Unique") for n in model.graph.node):  # dynamic
        with tvm.transform.PassContext(opt_level=3):
            run = relay.create_executor("vm", mod=mod, target="llvm").evaluate()
        args = [feeds[i.name] for i in model.graph.input]
        return lambda: run(*args)
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
    r = ((1, 64, 32, 32), {"output_height": 7, "output_width": 7, "spatial_scale": 0.25}, 16)
    yield "roialign adaptive 64 boxes 64x32x32 -> 7x7", roi_align_model(r, 64), feeds
    p = ((1, 64, 32, 32), {"pooled_shape": [7, 7], "spatial_scale": 0.25})
    feeds = max_roi_pool_inputs(p, 64)
    feeds["rois"][:, 1:] = np.abs(feeds["rois"][:, 1:]) * 4
    yield "maxroipool 64 boxes 64x32x32 -> 7x7", max_roi_pool_model(p, 64), feeds
    yield "nms 1000 boxes x 20 classes", nms_model((0, (100, 0.5, 0.3)), 1, 1000, 20), \
        nms_bench_inputs(1000, 20)
    x = np.random.default_rng(0).integers(0, 1000, 100000).astype("float32")
    yield "unique 100000 floats of 1000 values", unique_model((x, {})), {"x": x}
    x = np.random.default_rng(0).integers(0, 4, (20000, 6)).astype("float32")
    yield "unique rows 20000x6 axis 0", unique_model((x, {"axis": 0})), {"x": x}
    for dims, density in (((1000,), 0.5), ((64, 64), 0.1), ((8, 64, 64), 0.5),
                          ((1, 3, 224, 224), 0.05)):
        yield (f"nonzero {'x'.join(map(str, dims))} {density:.0%} non-zero",
               *nonzero_case(dims, density))
    for mode, padding, dims in (("cubic", "reflection", (1, 16, 64, 64)),
                                ("linear", "reflection", (1, 16, 64, 64)),
                                ("linear", "zeros", (1, 8, 16, 32, 32))):
        yield (f"gridsample {mode} {padding} {'x'.join(map(str, dims))}",
               *grid_sample_case(mode, padding, dims))


def grid_sample_case(mode: str, padding: str, dims: tuple) -> tuple:
    """GridSample (opset 20) of a random image at a grid as large as its spatial dims."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    x = rng.standard_normal(dims).astype("float32")
    grid = (rng.random((dims[0], *dims[2:], len(dims) - 2)) * 2.2 - 1.1).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding)],
        "gs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
               helper.make_tensor_value_info("grid", TensorProto.FLOAT, grid.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    return model, {"x": x, "grid": grid}


def nonzero_case(dims: tuple, density: float) -> tuple:
    """NonZero (its output length the data's) of a random float input."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    x = np.where(rng.random(dims) < density, rng.standard_normal(dims), 0).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"])], "nz",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": x}


def nms_bench_inputs(boxes: int, classes: int) -> dict:
    """Detector-like boxes: corners in a 512 x 512 image, sides 16 to 128, uniform scores."""
    rng = np.random.default_rng(0)
    lo = rng.uniform(0, 448, (1, boxes, 2))
    hi = lo + rng.uniform(16, 128, (1, boxes, 2))
    return {"boxes": np.concatenate([lo, hi], 2).astype("float32"),
            "scores": rng.random((1, classes, boxes)).astype("float32")}


def selected(names: list[str]):
    """The models whose names start with one of ``names`` (all when none is given)."""
    return [m for m in models() if not names or m[0].startswith(tuple(names))]


class NumpyShare:
    """Thread CPU time the Relay VM spends in ``run_fallback`` (the numpy references), by the
    ops of the primitive function, while installed."""

    def __init__(self):
        from minitvm.relay.backend.te_compiler import func_ops
        from minitvm.relay.backend.vm import kernels

        self.kernels, self.func_ops, self.orig = kernels, func_ops, kernels.run_fallback
        self.seconds: dict[str, float] = {}
        kernels.run_fallback = self._timed

    def _timed(self, func, args):
        t0 = time.thread_time()
        out = self.orig(func, args)
        key = ",".join(self.func_ops(func))
        self.seconds[key] = self.seconds.get(key, 0.0) + time.thread_time() - t0
        return out

    def report(self, name: str, run, calls: int = 20) -> None:
        run()
        self.seconds.clear()
        t0 = time.thread_time()
        for _ in range(calls):
            run()
        total = (time.thread_time() - t0) / calls
        parts = ", ".join(f"{k} {v / calls * 1e3:.3f} ms" for k, v in self.seconds.items())
        print(f"  {name}: relay VM {total * 1e3:.3f} ms per call, numpy: {parts or 'none'}")


def main(rounds: int = 7, calls: int = 20) -> None:
    args = sys.argv[1:]
    share = NumpyShare() if "--numpy-share" in args else None
    args = [a for a in args if a != "--numpy-share"]
    for name, model, feeds in selected(args):
        fns, missing = {}, {}
        for k, make in (("relay", relay_runner), ("relax", relax_runner), ("ort", ort_runner)):
            try:
                fns[k] = make(model, feeds)
            except Exception as e:  # noqa: BLE001 - an importer without the op: a table entry
                missing[k] = f"{type(e).__name__}: {str(e).splitlines()[0][:60]}"
        times = {k: [] for k in fns}
        for f in fns.values():
            f()
        for _ in range(rounds):
            for k, f in fns.items():
                times[k].append(per_call(f, calls))
        med = {k: statistics.median(v) for k, v in times.items()}

        def cell(k, med=med, missing=missing):
            if k in missing:
                return f"{k} n/a ({missing[k]})"
            return f"{k} {med[k] * 1e3:.3f} ms ({med[k] / med['ort']:.2f}x ORT)"

        print(f"{name}: {cell('relay')}, {cell('relax')}, ORT {med['ort'] * 1e3:.3f} ms")
        if share is not None and "relay" in fns:
            share.report(name, fns["relay"])


if __name__ == "__main__":
    main()
