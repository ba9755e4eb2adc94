"""Build and kernel time of sort / argsort / top-k kernels: LLVM's O3 pipeline as the selection
kernels get it (``jit.NO_SLP_PIPELINE``: no SLP vectorizer, whose trees through the networks'
and insertion chains' compare-selects vectorize nothing) against full O3 (with SLP).

Each case is built both ways in one process (no kernel or object cache: LLVM runs each time);
the table gives the thread CPU seconds of ``relay.build`` and the median thread CPU time of one
run (rounds interleaved, one row: the kernel runs on the calling thread).
Run: python benchmarks/bench_selection_compile.py [--rounds 9]

On the 2-core dev machine (Dec 2026, busy), build CPU s O3 -> no SLP, run us O3 / no SLP:
int64 argsort of 1000 2.17 -> 0.96 (23.6 / 23.5), of 100,000 2.25 -> 1.01 (3861 / 3882);
float64 argsort of 1000 2.23 -> 1.09 (22.4 / 22.3); float32 argsort of 1000 0.33 -> 0.26
(16.0 / 16.0); float32 top 64 of 24552 6.30 -> 0.76 (32.1 / 33.4; 35.5 / 35.2 in another
run); int64 top 64 of 24552 8.00 -> 0.73 (17.8 / 17.8); float64 top 50 of 5000 4.03 -> 0.46.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time

import numpy as np

CASES = [("argsort", "float32", 1000, 0), ("argsort", "int64", 1000, 0),
         ("argsort", "float64", 1000, 0), ("argsort", "float32", 100000, 0),
         ("argsort", "int64", 100000, 0), ("argsort", "float64", 100000, 0),
         ("topk", "float32", 24552, 64), ("topk", "int64", 24552, 64),
         ("topk", "float64", 5000, 50)]


def _builder(with_slp: bool):
    """A function building ``(op, dtype, n, k)`` the one way: (build CPU s, run())."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.backend import kernel_cache
    from minitvm.contrib import graph_executor
    from minitvm.runtime import jit

    cg = importlib.import_module("minitvm.codegen.build")
    own_level = cg.ir_pipeline_level

    def full_o3(func, opt_level):
        level = own_level(func, opt_level)
        return 3 if level == jit.NO_SLP_PIPELINE else level

    def build(op, dtype, n, k, xv):
        kernel_cache.clear_cache()
        cg.clear_cache()
        x = relay.var("x", shape=(1, n), dtype=dtype)
        y = relay.argsort(x, axis=1) if op == "argsort" else relay.topk(
            x, k=k, ret_type="indices")
        cg.ir_pipeline_level = full_o3 if with_slp else own_level
        try:
            t = time.thread_time()
            with tvm.transform.PassContext(opt_level=3):
                lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
            seconds = time.thread_time() - t
        finally:
            cg.ir_pipeline_level = own_level
        g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        g.set_input("x", xv)

        def run():
            g.run()
            return g.get_output(0).numpy()

        return seconds, run

    return build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    os.environ["MINITVM_DISABLE_DISK_CACHE"] = "1"
    os.environ["MINITVM_DISABLE_BUILD_CACHE"] = "1"
    ways = {"O3": _builder(True), "no SLP": _builder(False)}
    print(f"{'case':28s} {'build O3 s':>10s} {'no SLP s':>9s} {'run O3 us':>10s} "
          f"{'no SLP us':>10s}")
    for op, dtype, n, k in CASES:
        xv = (np.random.default_rng(1).standard_normal((1, n)) * 1000).astype(dtype)
        want = np.argsort(xv if op == "argsort" else -xv, axis=1, kind="stable")
        want = want if op == "argsort" else want[:, :k]
        built = {}
        for name, build in ways.items():
            built[name] = build(op, dtype, n, k, xv)
            np.testing.assert_array_equal(built[name][1](), want)
        reps = max(1, 200_000 // n)
        times = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, (_, run) in built.items():
                t = time.thread_time()
                for _ in range(reps):
                    run()
                times[name].append((time.thread_time() - t) / reps * 1e6)
        case = f"{op} {dtype} n={n}" + (f" k={k}" if k else "")
        print(f"{case:28s} {built['O3'][0]:10.2f} {built['no SLP'][0]:9.2f} "
              f"{statistics.median(times['O3']):10.1f} "
              f"{statistics.median(times['no SLP']):10.1f}", flush=True)


if __name__ == "__main__":
    main()
