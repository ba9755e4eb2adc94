"""Parallel kernels on an idle and on a busy machine: ResNet-18 (batch 1) built by ``relay.build``
run with 1, 2, ... threads, first alone, then next to background processes that each spin a
CPU (the "hog"), side by side in one run.

    python benchmarks/bench_threads.py [--threads 1,2] [--hogs 2] [--runs 30] [--layers 18]
                                       [--pools minitvm,gomp]

Each pool (``MINITVM_THREADPOOL``: minitvm's own, or libgomp's) lives in its own process, since
the pool is chosen when the JIT starts; the processes run in lockstep (one round of every thread
count in one, then in the next, and so on), so a change in the machine's load hits all of them.

A parallel runtime that spins or waits for descheduled workers collapses on a busy machine (the
2-thread run becomes many times slower than the 1-thread one); ours should stay close to the
1-thread time there and be faster when idle. Times are the median and mean end-to-end latency in
milliseconds (set input, run, read output; the mean shows stalls the median hides); the load average is printed with the table since an
"idle" shared machine is rarely idle.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay import testing  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402

HOG = "while True:\n    pass\n"


def build(num_layers: int):
    mod, params = testing.resnet.get_workload(num_layers=num_layers, batch_size=1)
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    return lib, time.perf_counter() - t0


def modules(lib, counts: list[int], data: np.ndarray) -> dict:
    """One GraphModule per thread count (a GraphModule reads the count when it is created)."""
    mods = {}
    for t in counts:
        threadpool.set_num_threads(t)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("data", data)
        m.run()
        mods[t] = m
    return mods


def one_round(mods: dict, data: np.ndarray, ref: np.ndarray) -> dict[int, float]:
    """Seconds of one end-to-end run (set input, run, read output) per thread count."""
    out = {}
    for t, m in mods.items():
        t0 = time.perf_counter()
        m.set_input("data", data)
        m.run()
        y = m.get_output(0).numpy()
        out[t] = time.perf_counter() - t0
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    return out


def start_hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]


def stop_hogs(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def child(args) -> None:
    """One pool: build, say READY, then time one round per line read from stdin."""
    counts = [int(t) for t in args.threads.split(",")]
    lib, build_s = build(args.layers)
    data = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    mods = modules(lib, counts, data)
    ref = mods[counts[0]].get_output(0).numpy()
    for m in mods.values():  # warm up every module
        m.run()
    spin = (threadpool.spin_count() if threadpool.backend() == "minitvm"
            else os.environ.get("GOMP_SPINCOUNT") or os.environ.get("OMP_WAIT_POLICY"))
    print("READY " + json.dumps({"build_s": build_s, "spin": spin}), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        print("ROUND " + json.dumps(one_round(mods, data, ref)), flush=True)


def _expect(proc: subprocess.Popen, tag: str) -> dict:
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark process exited: {proc.stderr.read()[-2000:]}")
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])


def _split_pools(text: str) -> list[str]:
    """Pool specs separated by ';' (or by ',' when no spec has settings)."""
    sep = ";" if ";" in text or ":" in text else ","
    return [p for p in text.split(sep) if p]


def pool_env(spec: str) -> dict:
    """The environment of one pool's process: ``NAME`` or ``NAME:KEY=VAL,...`` (e.g.
    ``minitvm:MINITVM_SPIN_COUNT=0`` for minitvm's pool with a passive wait)."""
    name, _, extra = spec.partition(":")
    env = dict(os.environ, MINITVM_THREADPOOL=name)
    for item in filter(None, extra.split(",")):
        key, sep, val = item.partition("=")
        if not sep:
            raise SystemExit(f"--pools: {item!r} in {spec!r} is not KEY=VALUE")
        env[key] = val
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--hogs", type=int, default=2, help="busy background processes")
    ap.add_argument("--runs", type=int, default=30, help="rounds per condition")
    ap.add_argument("--layers", type=int, default=18)
    ap.add_argument("--pools", default="minitvm,gomp",
                    help="thread pools to compare, separated by ';' or ',': MINITVM_THREADPOOL "
                         "values, each optionally with ':KEY=VAL' environment settings")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    counts = [int(t) for t in args.threads.split(",")]
    pools = _split_pools(args.pools)
    procs = {}
    for pool in pools:
        cmd = [sys.executable, __file__, "--child", "--threads", args.threads,
               "--layers", str(args.layers)]
        procs[pool] = subprocess.Popen(cmd, env=pool_env(pool),
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    info = {pool: _expect(p, "READY") for pool, p in procs.items()}
    times = {(pool, cond): {t: [] for t in counts} for pool in pools for cond in ("idle", "hog")}
    loads = {}
    try:
        for cond, hogs in (("idle", 0), ("hog", args.hogs)):
            background = start_hogs(hogs)
            try:
                time.sleep(0.3 if hogs else 0.0)
                for _ in range(args.runs):  # pools in lockstep
                    for pool, p in procs.items():
                        p.stdin.write("round\n")
                        p.stdin.flush()
                        for t, sec in _expect(p, "ROUND").items():
                            times[(pool, cond)][int(t)].append(sec * 1e3)
                loads[cond] = os.getloadavg()[0]
            finally:
                stop_hogs(background)
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait()
    print(f"ResNet-{args.layers} batch 1 (relay.build opt_level 3, {info[pools[0]]['build_s']:.1f}"
          f" s): median / mean ms of {args.runs} runs, pools in lockstep; {os.cpu_count()} "
          f"CPUs; hog = {args.hogs} busy processes")
    head = f"{'pool (spin)':<18}{'threads':>8}{'idle':>16}{'hog':>16}"
    print(head)
    print("-" * len(head))
    for pool in pools:
        for t in counts:
            cells = "".join(f"{np.median(times[(pool, c)][t]):>9.1f} /"
                            f"{np.mean(times[(pool, c)][t]):>5.0f}" for c in ("idle", "hog"))
            print(f"{pool + ' (' + str(info[pool]['spin']) + ')':<18}{t:>8}{cells}")
    print(f"{'load average (1 min)':<26}{loads['idle']:>16.1f}{loads['hog']:>16.1f}")


if __name__ == "__main__":
    main()
