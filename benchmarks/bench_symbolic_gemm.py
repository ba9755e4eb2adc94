"""Compile and run time of a fused ``relu(x @ w.T + b)`` kernel over a symbolic row count ``m``
(a Relax ``Linear`` with a dynamic batch, as FuseTIR gives it): LLVM IR lines, the CPU seconds
of a cold schedule + build, and the run time at several ``m`` (one thread, thread CPU time,
median of per-round medians).

``N <= K`` (512 x 1024) takes the swapped GEMM (``gemm.SWAP_TB``) from 16 rows, ``N > K``
(1000 x 600) and a small weight (the seed MLP's 784 -> 128) the in-place / packed ones; below
16 rows all take the in-place one (``gemm_tb``). ``--ab OLD_TREE`` compares with another tree
(``mkdir /tmp/base && git archive BASE | tar -x -C /tmp/base``): each tree generates the kernel's
IR in a process of its own, then both are compiled here and timed in alternating rounds, their
outputs checked equal bit for bit.

Run: python benchmarks/bench_symbolic_gemm.py [--ab /tmp/base] [--rounds 7]

Stop 49 (AVX-512, one thread, load ~10): 512 x 1024 had 308k IR lines and a cold build of
8.2 CPU s, its index arithmetic (divisions by the symbolic panel-group count) recomputed in
every unrolled guarded store; with the loop digits let-bound and one guard per row of C:
54k lines, 3.0 s; run time the same (new/base 0.92-1.04 at m = 16, 64, 128, 301).

Stop 61 (AVX-512, one thread, load ~7): 512 x 1024 had 21.9k lines, 1.1 CPU s, 18k of the lines
the swapped tiles' 32 unrolled guarded row stores; as one rolled loop over a copy of the
accumulator (``GemmLoops.rolled_transposed_store``) and with gemm_tb's lane sums rolled as
well: 4.5k lines, 0.34 s; 1000 x 600 6.8k -> 5.5k lines, 0.42 -> 0.38 s; 784 -> 128 4.2k ->
2.9k, 0.23 -> 0.21 s. Run time new/base 0.92-1.02 over all rows and cases, outputs equal bit
for bit. What is left of a cold build (512 x 1024): IR generation 0.08, LLVM's O1 pipeline
0.17 (InstCombine, IndVarSimplify, LICM most of it), machine code 0.09 (loop strength
reduction a fifth of all LLVM time: without it, m 16-128 ran 1.46x and 784 -> 128 at m 301
1.8x slower).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [(512, 1024), (1000, 600), (128, 784)]
ROWS = (1, 7, 16, 64, 128, 301)

_SOURCE = '''@T.prim_func
def fused(p_x: T.handle, w: T.Buffer((T.int64({n}), T.int64({k})), "float32"),
          bias: T.Buffer((T.int64({n}),), "float32"), p_out: T.handle):
    T.func_attr({{"tir.noalias": T.bool(True)}})
    m = T.int64()
    x = T.match_buffer(p_x, (m, T.int64({k})))
    T_relu = T.match_buffer(p_out, (m, T.int64({n})))
    mm = T.alloc_buffer((m, T.int64({n})))
    T_add = T.alloc_buffer((m, T.int64({n})))
    for i, j, r in T.grid(m, T.int64({n}), T.int64({k})):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                mm[vi, vj] = T.float32(0.0)
            mm[vi, vj] = mm[vi, vj] + x[vi, vk] * w[vj, vk]
    for a0, a1 in T.grid(m, T.int64({n})):
        with T.block("T_add"):
            v0, v1 = T.axis.remap("SS", [a0, a1])
            T_add[v0, v1] = mm[v0, v1] + bias[v1]
    for a0, a1 in T.grid(m, T.int64({n})):
        with T.block("T_relu"):
            v0, v1 = T.axis.remap("SS", [a0, a1])
            T_relu[v0, v1] = T.max(T_add[v0, v1], T.float32(0.0))
'''


def _scheduled(n: int, k: int):
    from minitvm.schedule import optimize_prim_func
    from minitvm.script.parser import from_source

    return optimize_prim_func(from_source(_SOURCE.format(n=n, k=k)))


def dump(n: int, k: int, path: str) -> None:
    """(In a process of the tree under test.) The kernel's IR, pipeline level and build time."""
    import importlib

    build = importlib.import_module("minitvm.codegen.build")
    t0 = time.thread_time()
    g = _scheduled(n, k)
    _, ir = build.compile_prim_func(g, "fused")
    secs = time.thread_time() - t0
    from minitvm.tir.transform import parallelize_outer_loops
    from minitvm.tir.transform.lower_intrin import lower_intrin

    level = build.ir_pipeline_level(parallelize_outer_loops(lower_intrin(g, "llvm")), 3)
    symbol = next(line for line in ir.splitlines() if line.startswith("define void @"))
    symbol = symbol.split("@")[1].split("(")[0].strip('"')
    with open(path, "w") as f:
        json.dump({"ir": ir, "symbol": symbol, "level": level, "build_s": secs}, f)


def _generate(tree: str, n: int, k: int, tmp: str) -> dict:
    path = os.path.join(tmp, f"{abs(hash(tree))}_{n}_{k}.json")
    env = dict(os.environ, PYTHONPATH=tree, MINITVM_CACHE_DIR="")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--dump", str(n), str(k), path],
                   env=env, check=True, cwd=tree)
    with open(path) as f:
        return json.load(f)


def _kernel(g, d: dict):
    from minitvm.codegen.llvm.codegen import KernelSignature
    from minitvm.codegen.module import KernelFunction
    from minitvm.runtime import jit

    c = jit.compile_ir(d["ir"], d["symbol"], d["level"], 1)
    return KernelFunction("fused", KernelSignature(g, "fused"), c.address, c)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ab", metavar="OLD_TREE", help="compare with the package in this tree")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dump", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        return dump(int(args.dump[0]), int(args.dump[1]), args.dump[2])
    import numpy as np

    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"new": here} if not args.ab else {"base": os.path.abspath(args.ab), "new": here}
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for n, k in CASES:
            g = _scheduled(n, k)
            data = {t: _generate(p, n, k, tmp) for t, p in trees.items()}
            fns = {t: _kernel(g, d) for t, d in data.items()}
            print(f"\nrelu(x @ w.T + b), w {n} x {k}, x m x {k}")
            for t, d in data.items():
                print(f"  {t:4s}: {len(d['ir'].splitlines()):7d} IR lines, cold schedule + build "
                      f"{d['build_s']:.2f} CPU s")
            print(f"  {'m':>5s} " + " ".join(f"{t + ' ms':>9s}" for t in fns) +
                  ("   new/base" if len(fns) > 1 else ""))
            for m in ROWS:
                x = rng.standard_normal((m, k)).astype("float32")
                w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype("float32")
                b = rng.standard_normal(n).astype("float32")
                outs = {t: np.zeros((m, n), "float32") for t in fns}
                for t, f in fns.items():
                    f(x, w, b, outs[t])
                want = np.maximum(x.astype("float64") @ w.T.astype("float64") + b, 0)
                for t in fns:
                    np.testing.assert_allclose(outs[t], want, rtol=1e-4, atol=1e-4)
                if len(fns) > 1:  # (the trees' kernels: the same results bit for bit)
                    np.testing.assert_array_equal(outs["new"], outs["base"])
                reps = max(5, 640 // m)
                res: dict = {t: [] for t in fns}
                for _ in range(args.rounds):
                    for t, f in fns.items():
                        f(x, w, b, outs[t])
                        ts = []
                        for _ in range(reps):
                            t0 = time.thread_time()
                            f(x, w, b, outs[t])
                            ts.append(time.thread_time() - t0)
                        res[t].append(statistics.median(ts))
                med = {t: statistics.median(v) * 1e3 for t, v in res.items()}
                ratio = f"   {med['new'] / med['base']:.3f}" if len(med) > 1 else ""
                print(f"  {m:5d} " + " ".join(f"{v:9.3f}" for v in med.values()) + ratio)


if __name__ == "__main__":
    main()
