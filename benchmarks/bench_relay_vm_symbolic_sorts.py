"""Steady time of a Relay VM sort / top-k along a dynamic axis: the one symbolic kernel that
serves every length against the per-shape kernel compiled for that length, side by side.

    python benchmarks/bench_relay_vm_symbolic_sorts.py [--op argsort|sort|topk] [--k 10]
        [--dtype float32] [--sizes 1000,10000,100000,1000000] [--rounds 3]

One symbolic executable (the axis ``relay.Any()``) and, at each length, a static one; each
round times both (best of five calls after two warm-up calls) one after the other, so the
machine's load hits both alike. The columns: medians over the rounds, in milliseconds, the
ratio symbolic / per-shape (below 1: the symbolic kernel is faster) and whether their
outputs are bitwise equal.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from interleave import best_vm_time


def _body(relay, x, op: str, k: int):
    if op == "argsort":
        return relay.argsort(x, axis=0)
    if op == "sort":
        return relay.sort(x, axis=0, is_ascend=False)
    return relay.topk(x, k=k, axis=0, ret_type="indices")


def _vm(shape, dtype: str, op: str, k: int):
    import minitvm as tvm
    from minitvm import relay
    from minitvm.runtime.vm import VirtualMachine

    x = relay.var("x", shape=shape, dtype=dtype)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], _body(relay, x, op, k))),
                           target="llvm")
    return VirtualMachine(exe, tvm.cpu())


def main() -> int:
    from minitvm import relay

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--op", choices=("argsort", "sort", "topk"), default="argsort")
    ap.add_argument("--k", type=int, default=10, help="top-k's k (--op topk)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    symbolic = _vm((relay.Any(),), args.dtype, args.op, args.k)
    print(f"{args.op} {args.dtype} along a dynamic axis: steady ms, median of {args.rounds}")
    print(f"{'length':>9s} {'symbolic':>9s} {'per-shape':>9s} {'ratio':>6s}  bitwise")
    for n in sizes:
        a = np.random.default_rng(n).standard_normal(n).astype(args.dtype)
        static = _vm((n,), args.dtype, args.op, args.k)
        sym, per = [], []
        for _ in range(args.rounds):  # (interleaved)
            sym.append(best_vm_time(symbolic, a))
            per.append(best_vm_time(static, a))
        same = symbolic.run(a).numpy().tobytes() == static.run(a).numpy().tobytes()
        s, p = statistics.median(sym), statistics.median(per)
        print(f"{n:9d} {s * 1e3:9.3f} {p * 1e3:9.3f} {s / p:6.2f}  {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
