"""GEMM benchmark: minitvm's TIR GEMM (llvmlite, 2 threads) against numpy's BLAS, side by side.

    python benchmarks/bench_gemm.py [--sizes 256 512 1024 2048] [--threads 2] [--dense]
    python benchmarks/bench_gemm.py --shapes 1x128x784 64x128x784 --dense   # M x N x K
    python benchmarks/bench_gemm.py --shapes 128x128x64 --batch 12 --dense  # batch_matmul

Both sides run in alternating rounds in one process and the best round of each is reported,
so a noisy machine penalizes neither side more than the other.
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


def _best(f, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def bench(n: int, dense: bool, rounds: int, shape=None, batch: int = 0
          ) -> tuple[float, float, float]:
    rng = np.random.default_rng(0)
    m, nn, k = shape or (n, n, n)
    lead = (batch,) if batch else ()
    a = rng.standard_normal((*lead, m, k), dtype=np.float32)
    b = rng.standard_normal((*lead, nn, k) if dense else (*lead, k, nn), dtype=np.float32)
    c = np.empty((*lead, m, nn), dtype=np.float32)
    if batch:
        mod = codegen.build(gemm_kernel.batch_gemm(batch, m, nn, k, transpose_b=dense))
        kernel = mod["batch_gemm"]
    else:
        kernel = codegen.build(gemm_kernel.gemm(m, nn, k, transpose_b=dense))["gemm"]
    bt = b.swapaxes(-1, -2) if dense else b
    kernel(a, b, c)
    ref = a @ bt
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        raise SystemExit(f"wrong result at {m}x{nn}x{k}: relative error {err}")

    def ours():
        kernel(a, b, c)

    def theirs():
        np.matmul(a, bt, out=c)

    flops = 2.0 * m * nn * k * max(1, batch)
    reps = max(1, int(0.2e9 / flops * 50))
    t_np, t_us = float("inf"), float("inf")
    for _ in range(rounds):
        theirs()
        t_np = min(t_np, _best(theirs, reps))
        time.sleep(0.01)
        ours()
        t_us = min(t_us, _best(ours, reps))
        time.sleep(0.01)
    return flops / t_np / 1e9, flops / t_us / 1e9, err


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--dense", action="store_true", help="B in dense's [N, K] layout")
    p.add_argument("--shapes", nargs="+", default=None, help="MxNxK shapes instead of --sizes")
    p.add_argument("--batch", type=int, default=0, help="batch_gemm with this batch size")
    args = p.parse_args(argv)
    threadpool.set_num_threads(args.threads)
    print(f"threads={args.threads} layout={'A @ W.T' if args.dense else 'A @ B'} float32"
          + (f" batch={args.batch}" if args.batch else ""))
    print(f"{'size':>14} {'numpy GFLOP/s':>14} {'ours GFLOP/s':>13} {'ratio':>6}")
    runs = [(str(n), n, None) for n in args.sizes] if not args.shapes else [
        (s, 0, tuple(int(x) for x in s.lower().split("x"))) for s in args.shapes]
    for label, n, shape in runs:
        g_np, g_us, _ = bench(n, args.dense, args.rounds, shape, args.batch)
        print(f"{label:>14} {g_np:>14.1f} {g_us:>13.1f} {g_us / g_np:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
