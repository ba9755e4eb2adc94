"""How a graph of many kernels runs: the Python loop over kernels, the native step loop
(runtime.step_loop, what graphs over aot.MAX_ENTRY_STEPS get) and a compiled whole-graph entry.

The graph is a chain of ``add``/``relu`` on a (2, 3) tensor built at opt_level 0, so every op is
one kernel and run time is per-step overhead. For each size the table gives the entry's compile
time (LLVM, no object cache) and the median thread CPU time of one ``run()`` each way (rounds
interleaved). Run: python benchmarks/bench_big_graph_run.py [--steps 5000,100000] [--rounds 7]

On the 2-core dev machine (Dec 2026, busy): 100,000 steps: entry compile 4.55 CPU s; run via
the Python loop 46.2 ms, the step loop 0.57 ms, the entry 1.57 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np


def _chain_build(n: int):
    import minitvm as tvm
    from minitvm import relay
    from minitvm.relay.backend import build_cache

    x = relay.var("x", shape=(2, 3))
    y, c = x, relay.const(np.float32(0.5))
    for i in range(n):
        y = relay.add(y, c) if i % 2 == 0 else relay.nn.relu(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=0, config={build_cache.CONFIG_KEY: False}):
        return relay.build(mod, target="llvm")


def measure(n: int, rounds: int) -> dict:
    """Build time, entry compile CPU time and per-way run CPU times (ms) for ``n`` steps."""
    import minitvm as tvm
    from minitvm.backend import aot
    from minitvm.contrib import graph_executor
    from minitvm.runtime.graph_executor import GraphExecutorFactoryModule
    from minitvm.runtime.module import GraphLib

    t0 = time.perf_counter()
    lib = _chain_build(n)
    build_s = time.perf_counter() - t0
    glib = lib.get_lib()
    nodes = json.loads(lib.get_graph_json())["nodes"]
    saved, aot.MAX_ENTRY_STEPS = aot.MAX_ENTRY_STEPS, 1 << 62
    cache_dir = os.environ.pop("MINITVM_CACHE_DIR", None)  # (LLVM, not the object cache)
    try:
        c0 = time.thread_time()
        entry = aot.graph_entry(nodes, glib.kernels)
        entry_s = time.thread_time() - c0
    finally:
        aot.MAX_ENTRY_STEPS = saved
        if cache_dir is not None:
            os.environ["MINITVM_CACHE_DIR"] = cache_dir

    def factory(e):
        return GraphExecutorFactoryModule(lib.get_graph_json(),
                                          GraphLib(glib.kernels, e, glib.blas),
                                          lib.get_params(), "default")

    xv = np.full((2, 3), -1.0, "float32")
    ways = {}
    for name, e in (("python loop", None), ("step loop", None), ("entry", entry)):
        m = graph_executor.GraphModule(factory(e)["default"](tvm.cpu(0)))
        if name == "python loop":
            m._step_loop = None
        m.set_input("x", xv)
        m.run()
        ways[name] = m
    times = {name: [] for name in ways}
    for _ in range(rounds):
        for name, m in ways.items():
            c0 = time.thread_time()
            m.run()
            times[name].append(time.thread_time() - c0)
    outs = [m.get_output(0).numpy() for m in ways.values()]
    assert all(np.array_equal(outs[0], o) for o in outs), "the three ways disagree"
    return {"steps": n, "build_s": build_s, "entry_compile_s": entry_s,
            **{name: statistics.median(v) * 1e3 for name, v in times.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="5000,100000")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    print(f"{'steps':>8} {'build s':>8} {'entry LLVM cpu s':>17} {'python loop ms':>15} "
          f"{'step loop ms':>13} {'entry ms':>9}")
    for n in (int(s) for s in args.steps.split(",")):
        r = measure(n, args.rounds)
        print(f"{r['steps']:8d} {r['build_s']:8.1f} {r['entry_compile_s']:17.2f} "
              f"{r['python loop']:15.2f} {r['step loop']:13.2f} {r['entry']:9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
