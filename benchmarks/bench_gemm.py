"""GEMM benchmark: minitvm's TIR GEMM (llvmlite, 2 threads) against numpy's BLAS, side by side.

    python benchmarks/bench_gemm.py [--sizes 256 512 1024 2048] [--threads 2] [--dense]
    python benchmarks/bench_gemm.py --shapes 1x128x784 64x128x784 --dense   # M x N x K
    python benchmarks/bench_gemm.py --shapes 128x128x64 --batch 12 --dense  # batch_matmul
    python benchmarks/bench_gemm.py --threads 1 --cpu-time --prepacked --symbolic --ort \
        --shapes 64x128x784 128x3072x768 512x768x3072   # weights packed at build, rows symbolic

Both sides run in alternating rounds in one process and the best round of each is reported,
so a noisy machine penalizes neither side more than the other. ``--cpu-time`` times with the
calling thread's CPU time (fair at one thread on a loaded machine: every side computes on the
calling thread; set OPENBLAS_NUM_THREADS=1 for numpy). ``--ort`` adds ONNX Runtime's MatMul (B
an initializer, one intra-op thread per ``--threads``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from minitvm import codegen  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402
from minitvm.schedule import gemm_kernel  # noqa: E402
from minitvm.tir.expr import Var  # noqa: E402

CLOCK = time.perf_counter  # --cpu-time: time.thread_time


def _best(f, reps: int) -> float:
    t0 = CLOCK()
    for _ in range(reps):
        f()
    return (CLOCK() - t0) / reps


def _ort_matmul(b: np.ndarray, threads: int):
    """An ONNX Runtime session computing ``x @ b`` (b an initializer), or None without ORT."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    k, n = b.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "b"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])],
        [numpy_helper.from_array(np.ascontiguousarray(b), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def bench(n: int, dense: bool, rounds: int, shape=None, batch: int = 0, prepacked=False,
          symbolic=False, ort_threads: int = 0) -> tuple[float, float, float, float | None]:
    rng = np.random.default_rng(0)
    m, nn, k = shape or (n, n, n)
    lead = (batch,) if batch else ()
    a = rng.standard_normal((*lead, m, k), dtype=np.float32)
    b = rng.standard_normal((*lead, nn, k) if dense else (*lead, k, nn), dtype=np.float32)
    c = np.empty((*lead, m, nn), dtype=np.float32)
    mr, nr = gemm_kernel.default_tile()
    rows = Var("m", "int64") if symbolic else m
    tile = dict(mr=mr, nr=nr, mc=gemm_kernel.default_mc(), prepacked_b=prepacked)
    if batch:
        mod = codegen.build(gemm_kernel.batch_gemm(batch, rows, nn, k, transpose_b=dense,
                                                   **tile))
        kernel = mod["batch_gemm"]
    else:
        kernel = codegen.build(gemm_kernel.gemm(rows, nn, k, transpose_b=dense, **tile))["gemm"]
    bt = b.swapaxes(-1, -2) if dense else b
    b_arg = gemm_kernel.pack_b(b, nr, transpose_b=dense) if prepacked else b
    kernel(a, b_arg, c)
    ref = a @ bt
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        raise SystemExit(f"wrong result at {m}x{nn}x{k}: relative error {err}")

    def ours():
        kernel(a, b_arg, c)

    def theirs():
        np.matmul(a, bt, out=c)

    sess = _ort_matmul(np.ascontiguousarray(bt), ort_threads) if ort_threads and not batch \
        else None

    def ort_run():
        sess.run(None, {"x": a})

    flops = 2.0 * m * nn * k * max(1, batch)
    reps = max(1, int(0.2e9 / flops * 50))
    t_np, t_us, t_ort = float("inf"), float("inf"), float("inf")
    for _ in range(rounds):
        theirs()
        t_np = min(t_np, _best(theirs, reps))
        time.sleep(0.01)
        ours()
        t_us = min(t_us, _best(ours, reps))
        time.sleep(0.01)
        if sess is not None:
            ort_run()
            t_ort = min(t_ort, _best(ort_run, reps))
    g_ort = flops / t_ort / 1e9 if sess is not None else None
    return flops / t_np / 1e9, flops / t_us / 1e9, err, g_ort


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--dense", action="store_true", help="B in dense's [N, K] layout")
    p.add_argument("--shapes", nargs="+", default=None, help="MxNxK shapes instead of --sizes")
    p.add_argument("--batch", type=int, default=0, help="batch_gemm with this batch size")
    p.add_argument("--prepacked", action="store_true",
                   help="B packed once beforehand (a weight bound at build time)")
    p.add_argument("--symbolic", action="store_true", help="the row count a symbolic Var")
    p.add_argument("--cpu-time", action="store_true", help="time with thread CPU time")
    p.add_argument("--ort", action="store_true", help="also ONNX Runtime's MatMul")
    args = p.parse_args(argv)
    global CLOCK
    if args.cpu_time:
        CLOCK = time.thread_time
    threadpool.set_num_threads(args.threads)
    print(f"threads={args.threads} layout={'A @ W.T' if args.dense else 'A @ B'} float32"
          + (f" batch={args.batch}" if args.batch else "")
          + (" B prepacked" if args.prepacked else "") + (" rows symbolic" if args.symbolic
                                                          else ""))
    print(f"{'size':>14} {'numpy GFLOP/s':>14} {'ours GFLOP/s':>13} {'ratio':>6}"
          + (f" {'ORT GFLOP/s':>12} {'ours/ORT':>8}" if args.ort else ""))
    runs = [(str(n), n, None) for n in args.sizes] if not args.shapes else [
        (s, 0, tuple(int(x) for x in s.lower().split("x"))) for s in args.shapes]
    for label, n, shape in runs:
        g_np, g_us, _, g_ort = bench(n, args.dense, args.rounds, shape, args.batch,
                                     args.prepacked, args.symbolic,
                                     args.threads if args.ort else 0)
        extra = f" {g_ort:>12.1f} {g_us / g_ort:>8.2f}" if g_ort else ""
        print(f"{label:>14} {g_np:>14.1f} {g_us:>13.1f} {g_us / g_np:>6.2f}{extra}", flush=True)


if __name__ == "__main__":
    main()
