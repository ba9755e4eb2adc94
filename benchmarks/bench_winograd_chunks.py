"""Whole models with their Winograd convs' products computed a chunk of output channels at a
time (``conv_winograd.M_CHUNK_BYTES``, the default) beside the same models built with every
band's products at once (the budget unbounded: the schedule before chunks), and ONNX Runtime,
in one process, interleaved rounds, one thread, thread CPU time, batch 1.

    python benchmarks/bench_winograd_chunks.py [--models squeezenet,resnet18,unet] [--rounds 7]

Needs the ``torch``, ``onnx`` and ``onnxruntime`` extras. The models are
``bench_dynamic_batch``'s (exported to ONNX, imported by ``relax.frontend.onnx``, built by
``relax.build``); the disk cache is off, so each build compiles its own kernels. Prints each
build's median (ms), chunked / whole, each one's ratio to ONNX Runtime, and the largest
difference between the two builds' outputs relative to the output's largest value.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

os.environ["MINITVM_DISABLE_DISK_CACHE"] = "1"  # (the budget is not part of a cache key)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.backend import kernel_cache  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402
from minitvm.schedule import conv_winograd  # noqa: E402


def _build(onnx_model, budget: int):
    """The model's VM with the products' budget ``budget`` (kernels compiled afresh)."""
    saved = conv_winograd.M_CHUNK_BYTES
    conv_winograd.M_CHUNK_BYTES = budget
    try:
        kernel_cache.clear_cache()
        mod = relax.frontend.onnx.from_onnx(onnx_model)
        return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    finally:
        conv_winograd.M_CHUNK_BYTES = saved
        kernel_cache.clear_cache()


def measure(name: str, rounds: int) -> None:
    import bench_dynamic_batch
    import onnx
    import onnxruntime as ort

    ctor, shape = bench_dynamic_batch.model_table()[name]
    _, buf = bench_dynamic_batch.export_dynamic(ctor, shape)
    model = onnx.load_from_string(buf.getvalue())
    vms = {"whole": _build(model, 1 << 62), "chunked": _build(model, conv_winograd.M_CHUNK_BYTES)}
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
    sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    xt = tvm.nd.array(x)

    def run(vm):
        out = vm["main"](xt)
        return (out if hasattr(out, "numpy") else out[0]).numpy()

    a, b = run(vms["whole"]), run(vms["chunked"])
    diff = float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-6))
    impls = {k: (lambda vm=vm: vm["main"](xt)) for k, vm in vms.items()}
    impls["ort"] = lambda: sess.run(None, {"x": x})
    times = settled_rounds(impls, rounds, 3, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"{name:12s} {med['whole']:8.3f} {med['chunked']:8.3f} {med['ort']:8.3f} "
          f"{med['chunked'] / med['whole']:8.3f} {med['whole'] / med['ort']:8.3f} "
          f"{med['chunked'] / med['ort']:8.3f} {diff:9.1e}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="squeezenet,resnet18,unet", help="comma-separated names")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import torch
    except ImportError as e:
        print(f"skipped: needs the torch, onnx and onnxruntime extras ({e})")
        return 0
    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    print(f"one thread; ms, median of {args.rounds} interleaved rounds (thread CPU time); "
          f"chunks of at most {conv_winograd.M_CHUNK_BYTES // 1024} KB of products")
    print(f"{'model':12s} {'whole':>8s} {'chunked':>8s} {'ORT':>8s} {'ch/whole':>8s} "
          f"{'whole/ORT':>8s} {'ch/ORT':>8s} {'max diff':>9s}")
    for name in args.models.split(","):
        measure(name, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
