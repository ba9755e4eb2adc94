"""GEMM benchmark: minitvm's TIR GEMM (llvmlite, 2 threads) against numpy's BLAS, side by side.

    python benchmarks/bench_gemm.py [--sizes 256 512 1024 2048] [--threads 2] [--dense]

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

from minitvm import codegen, tir  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402


def _best(f, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def bench(n: int, dense: bool, rounds: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    mod = codegen.build(tir.gemm(n, n, n, transpose_b=dense))
    kernel = mod["gemm"]
    kernel(a, b, c)
    ref = a @ (b.T if dense else b)
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        raise SystemExit(f"wrong result at n={n}: relative error {err}")

    def ours():
        kernel(a, b, c)

    def theirs():
        np.matmul(a, b.T if dense else b, out=c)

    flops = 2.0 * n**3
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
    args = p.parse_args(argv)
    threadpool.set_num_threads(args.threads)
    print(f"threads={args.threads} layout={'A @ W.T' if args.dense else 'A @ B'} float32")
    print(f"{'size':>6} {'numpy GFLOP/s':>14} {'ours GFLOP/s':>13} {'ratio':>6}")
    for n in args.sizes:
        g_np, g_us, _ = bench(n, args.dense, args.rounds)
        print(f"{n:>6} {g_np:>14.1f} {g_us:>13.1f} {g_us / g_np:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
