"""NCHW against the x86 blocked layout (NCHWc): each model built at opt_level 3 for plain
``llvm`` and for ``llvm -mcpu=<this host>`` (which turns on the x86 AlterOpLayout rules, so convs
become ``nn.contrib_conv2d_NCHWc`` with ``layout_transform``s between them), then checked
(native kernels, error against the reference) and timed with ONNX Runtime, one thread,
interleaved rounds, thread CPU time, medians.

    python benchmarks/bench_layout_nchwc.py [--models regnet_like,deeplab_head] [--rounds 7]
    python benchmarks/bench_layout_nchwc.py --per-kernel   # plus each build's time per kernel kind

``--per-kernel`` runs every graph node alone (min of repeats, wall clock) and sums the times by
kind: convs (NCHW or NCHWc), layout transforms, the rest; then lists the convs whose time moved
most between the two builds (paired in graph order).

Measured on a Rocket Lake host, one thread, thread CPU ms (NCHW / NCHWc / ORT): regnet_like
9.60 / 95.3 / 9.45, deeplab_head 16.0 / 86.0 / 16.1, det_postprocess 0.517 / 21.9 / 0.501,
resnet50 58.2 / 452 / 62.7; outputs equal (max rel err <= 3e-7). The NCHWc builds are slow
because ``nn.contrib_conv2d_NCHWc`` and ``nn.contrib_dense_pack`` have no compute (numpy
fallbacks) and global pooling is native for NCHW only; the native layout transforms cost
0.76 ms of regnet_like (34 of them: its grouped convs stay NCHW) and 1.76 ms of deeplab_head.

Since ConvertBlockedOps (relay/transform/convert_blocked_ops.py) the pipeline takes the blocked
ops its AlterOpLayout makes under an x86 -mcpu back to NCHW / NC, so the "NCHWc" build here now
compiles the NCHW build's kernels (the numbers above are from before it); a native NCHWc kernel
family would be measured by disabling that pass.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.contrib.debugger import debug_executor  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402
from minitvm.runtime.jit import host_cpu  # noqa: E402

DEFAULT_MODELS = "regnet_like,deeplab_head,det_postprocess,resnet50"


def load_torch_model(name: str) -> dict:
    """A model of the new-user tables: Relay module, params, feed, reference output, ONNX."""
    import torch
    from bench_new_user_models import (
        import_relay,
        models,
        onnx_bytes,
        prepare,
    )
    from new_user_models_fifth import fifth_models

    table = {**models(), **fifth_models()}
    if name not in table:
        raise SystemExit(f"unknown model {name!r}; choose from resnet50, {sorted(table)}")
    ctor, spec = table[name]
    model, inputs = prepare(ctor, spec)
    args = tuple(inputs.values())
    with torch.no_grad():
        ref = model(*args).numpy()
    mod, params, names, _ = import_relay(model, args, inputs)
    feed = {n: v.numpy() for n, v in zip(names, inputs.values(), strict=True)}
    ort_feed = {k: v.numpy() for k, v in inputs.items()}
    return dict(mod=mod, params=params, feed=feed, ort_feed=ort_feed, ref=ref,
                onnx=onnx_bytes(name, model, args, inputs))


def load_resnet50() -> dict:
    """ResNet-50 of ``relay.testing``; its reference is ORT's output (the same graph exported)."""
    from bench_whole_models import load

    m = load("resnet50")
    x = np.random.default_rng(0).standard_normal(m["shape"]).astype("float32")
    return dict(mod=m["mod"], params=m["params"], feed={m["input"]: x}, ort_feed=None,
                ref=None, onnx=m["onnx"])


@contextlib.contextmanager
def optimize_for(target: str):
    """relay.build optimizes for plain ``"llvm"`` whatever target it is given (graph_build
    ``_build`` calls ``optimize(mod, "llvm", params)``), so the x86 AlterOpLayout rules never
    run in it: inside this block its optimize step sees ``target`` instead."""
    from minitvm.relay.transform import pipeline

    plain = pipeline.optimize

    def optimize(mod, _target=None, params=None):
        return plain(mod, target, params)

    pipeline.optimize = optimize
    try:
        yield
    finally:
        pipeline.optimize = plain


def build(m: dict, target: str):
    """relay.build at opt_level 3 with its optimize step for ``target`` (the whole-build cache
    off for an -mcpu target: its key holds only the target kind, so the two builds would share
    one entry)."""
    t0 = time.perf_counter()
    if target == "llvm":
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(m["mod"], target=target, params=m["params"])
    else:
        with tvm.transform.PassContext(
                opt_level=3, config={"relay.backend.use_build_cache": False}), \
                optimize_for(target):
            lib = relay.build(m["mod"], target="llvm", params=m["params"])
    return lib, time.perf_counter() - t0


def op_counts(lib) -> dict[str, int]:
    """How many graph nodes call a fused kernel holding each op kind of interest."""
    names = _func_names(lib)
    return {"NCHWc conv": sum("NCHWc" in n and "conv" in n for n in names),
            "NCHW conv": sum("conv2d" in n and "NCHWc" not in n for n in names),
            "layout_transform": sum("layout_transform" in n for n in names),
            "nodes": len(names)}


def _func_names(lib) -> list[str]:
    import json

    g = json.loads(lib.get_graph_json())
    return [(n.get("attrs") or {}).get("func_name", "") for n in g["nodes"]
            if n.get("op") == "tvm_op"]


def kind_of(func_name: str) -> str:
    if "conv2d" in func_name:
        return "conv NCHWc" if "NCHWc" in func_name else "conv NCHW"
    if "layout_transform" in func_name:
        return "layout_transform"
    return "other"


def per_kernel(lib, feed) -> list[tuple[str, str, float]]:
    """(node name, func name, seconds: min of repeats) per graph node, in graph order."""
    g = debug_executor.GraphModuleDebug(lib["debug_create"]("default", tvm.cpu(0)))
    for k, v in feed.items():
        g.set_input(k, v)
    g._run_timed()  # one pass to allocate and warm every kernel
    names = [s[0] for s in g._plan["steps"]]
    ops = debug_executor._node_ops(g.graph)
    out = []
    for i, n in enumerate(names):
        r = g.run_individual_node(i, number=3, repeat=5)
        out.append((n, ops.get(n, n), r.min))
    return out


def ort_session(blob: bytes):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])


def bench(name: str, args, host: str) -> None:
    m = load_resnet50() if name == "resnet50" else load_torch_model(name)
    targets = {"NCHW": "llvm", "NCHWc": f"llvm -mcpu={host}"}
    runners, outs, libs = {}, {}, {}
    for label, target in targets.items():
        lib, secs = build(m, target)
        libs[label] = lib
        gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        for k, v in m["feed"].items():
            gm.set_input_zero_copy(k, v)
        gm.run()
        outs[label] = gm.get_output(0).numpy()
        runners[label] = gm.run
        native = lib.get_lib()
        counts = op_counts(lib)
        print(f"  {name} {label:6s} target={target!r}: build {secs:5.1f} s, kernels native "
              f"{len(native.native_functions)} fallback {len(native.fallback_functions)}"
              f" {sorted(native.fallback_functions)[:3]}; graph {counts}", flush=True)
    sess = ort_session(m["onnx"])
    feed = m["ort_feed"] or {sess.get_inputs()[0].name: next(iter(m["feed"].values()))}
    ort_out = sess.run(None, feed)[0]
    runners["ort"] = lambda: sess.run(None, feed)
    ref = m["ref"] if m["ref"] is not None else ort_out
    scale = max(float(np.abs(ref).max()), 1e-6)
    err = {k: float(np.abs(v - ref).max()) / scale for k, v in outs.items()}
    times = settled_rounds(runners, args.rounds, 5, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"{name:16s} {med['NCHW']:9.3f} {med['NCHWc']:9.3f} {med['ort']:9.3f} "
          f"{med['NCHW'] / med['ort']:7.2f}x {med['NCHWc'] / med['ort']:7.2f}x "
          f"{err['NCHW']:9.1e} {err['NCHWc']:9.1e}", flush=True)
    if args.per_kernel:
        report_per_kernel(name, libs, m["feed"])


def report_per_kernel(name: str, libs: dict, feed: dict) -> None:
    rows = {label: per_kernel(lib, feed) for label, lib in libs.items()}
    for label, r in rows.items():
        by_kind: dict[str, list[float]] = {}
        for _, fn, t in r:
            by_kind.setdefault(kind_of(fn), []).append(t)
        parts = ", ".join(f"{k} {len(v)} nodes {sum(v) * 1e3:.3f} ms"
                          for k, v in sorted(by_kind.items()))
        print(f"    {name} {label:6s} sum {sum(t for *_, t in r) * 1e3:8.3f} ms: {parts}")
    convs = {label: [(fn, t) for _, fn, t in r if "conv2d" in fn] for label, r in rows.items()}
    a, b = convs["NCHW"], convs["NCHWc"]
    if len(a) != len(b):
        print(f"    ({len(a)} NCHW convs vs {len(b)} NCHWc: not paired)")
        return
    pairs = sorted(zip(a, b, strict=True), key=lambda p: p[1][1] - p[0][1])
    faster = sum(pb[1] < pa[1] for pa, pb in pairs)
    print(f"    convs paired: NCHWc faster on {faster} of {len(pairs)}; largest moves (us):")
    for pa, pb in (pairs if len(pairs) <= 8 else pairs[:4] + pairs[-4:]):
        print(f"      {pa[1] * 1e6:8.1f} -> {pb[1] * 1e6:8.1f}  {pa[0][:60]} | {pb[0][:60]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--per-kernel", action="store_true")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    warnings.filterwarnings("ignore")
    host = host_cpu()[0]
    print(f"host cpu {host}; one thread; ms medians of interleaved rounds (thread CPU time)")
    print(f"{'model':16s} {'NCHW':>9s} {'NCHWc':>9s} {'ort':>9s} {'NCHW/ort':>8s} "
          f"{'NCHWc/ort':>8s} {'err NCHW':>9s} {'err NCHWc':>9s}")
    for name in args.models.split(","):
        bench(name.strip(), args, host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
