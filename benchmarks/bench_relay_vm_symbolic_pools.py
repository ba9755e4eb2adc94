"""Steady time of a Relay VM 2-D window pool (max / average, ceil mode) over run-time sizes:
the one symbolic kernel that serves every shape against the static kernel of the same shape,
side by side.

    python benchmarks/bench_relay_vm_symbolic_pools.py [--shapes 1x64x56x56,8x32x28x28]
        [--rounds 5] [--cases "max 9x9/1 pad4,avg 7x7/7 ceil"]

Per case one symbolic executable (every input dimension ``relay.Any()``) and one static one;
each round times both (best of five calls after two warm-up calls) one after the other, so the
machine's load hits both alike. The columns: medians over the rounds in milliseconds, the ratio
symbolic / static (above 1: the symbolic kernel is slower) and the largest difference of their
outputs.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from interleave import best_vm_time

# (name, relay.nn builder arguments): ceil-mode pools, whose last window crosses the border
CASES = {
    "max 3x3/2 ceil": ("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), ceil_mode=True)),
    "avg 3x3/2 ceil": ("avg_pool2d", dict(pool_size=(3, 3), strides=(2, 2), ceil_mode=True)),
    "max 3x3/2 pad1": ("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1))),
    "avg 2x2/2": ("avg_pool2d", dict(pool_size=(2, 2), strides=(2, 2))),
    # windows of more than 25 taps (YOLO's SPP, a final 7x7 mean) and a column stride past 4
    "max 5x5/1 pad2": ("max_pool2d", dict(pool_size=(5, 5), strides=(1, 1), padding=(2, 2))),
    "max 9x9/1 pad4": ("max_pool2d", dict(pool_size=(9, 9), strides=(1, 1), padding=(4, 4))),
    "max 13x13/1 pad6": ("max_pool2d", dict(pool_size=(13, 13), strides=(1, 1),
                                             padding=(6, 6))),
    "avg 7x7/7 ceil": ("avg_pool2d", dict(pool_size=(7, 7), strides=(7, 7), ceil_mode=True)),
    "max 3x3/5 pad1": ("max_pool2d", dict(pool_size=(3, 3), strides=(5, 5), padding=(1, 1))),
}


def _vm(shape, op: str, attrs: dict):
    import minitvm as tvm
    from minitvm import relay
    from minitvm.runtime.vm import VirtualMachine

    x = relay.var("x", shape=shape, dtype="float32")
    body = getattr(relay.nn, op)(x, **attrs)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], body)), target="llvm")
    return VirtualMachine(exe, tvm.cpu())


def main() -> int:
    from minitvm import relay

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="1x64x56x56,8x32x28x28")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated case names (default: all)")
    args = ap.parse_args()
    names = [n.strip() for n in args.cases.split(",")]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    print(f"{'case':18s} {'shape':16s} {'symbolic ms':>12s} {'static ms':>10s} {'ratio':>6s} "
          f"{'max diff':>9s}")
    for name in names:
        op, attrs = CASES[name]
        sym = _vm((relay.Any(), relay.Any(), relay.Any(), relay.Any()), op, attrs)
        for shape in shapes:
            static = _vm(shape, op, attrs)
            a = np.random.default_rng(0).standard_normal(shape).astype("float32")
            diff = float(np.abs(sym.run(a).numpy() - static.run(a).numpy()).max())
            ts, tt = [], []
            for _ in range(args.rounds):
                ts.append(best_vm_time(sym, a))
                tt.append(best_vm_time(static, a))
            s, t = statistics.median(ts) * 1e3, statistics.median(tt) * 1e3
            print(f"{name:18s} {'x'.join(map(str, shape)):16s} {s:12.3f} {t:10.3f} "
                  f"{s / t:6.2f} {diff:9.2g}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
