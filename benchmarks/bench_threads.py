"""Parallel kernels on an idle and on a busy machine: ResNet-18 (batch 1) built by ``relay.build``
run with 1, 2, ... threads, first alone, then next to background processes that each spin a
CPU (the "hog"), side by side in one run.

    python benchmarks/bench_threads.py [--threads 1,2] [--hogs 2] [--runs 20] [--layers 18]
                                       [--pools minitvm,gomp]

Each pool (``MINITVM_THREADPOOL``: minitvm's own, or libgomp's) runs in its own process, since
the pool is chosen when the JIT starts.

A parallel runtime that spins or waits for descheduled workers collapses on a busy machine (the
2-thread run becomes many times slower than the 1-thread one); ours should stay close to the
1-thread time there and be faster when idle. Times are the median end-to-end ``run()`` latency in
milliseconds (set input, run, read output); the load average is printed with the table since an
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


def time_all(lib, counts: list[int], data: np.ndarray, runs: int) -> dict[int, list[float]]:
    """[median, mean] latency (ms) per thread count; the counts alternate run by run, so each
    sees the same background load (the mean shows stalls that the median hides)."""
    mods = {}
    for t in counts:  # GraphModule reads the thread count when it is created
        threadpool.set_num_threads(t)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("data", data)
        m.run()
        mods[t] = m
    ref = mods[counts[0]].get_output(0).numpy()
    times: dict[int, list[float]] = {t: [] for t in counts}
    for _ in range(runs):
        for t, m in mods.items():
            t0 = time.perf_counter()
            m.set_input("data", data)
            m.run()
            out = m.get_output(0).numpy()
            times[t].append(time.perf_counter() - t0)
            np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    return {t: [float(np.median(v)) * 1e3, float(np.mean(v)) * 1e3] for t, v in times.items()}


def start_hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]


def stop_hogs(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def child(args) -> None:
    """One pool: build, then time idle and with hogs; print one JSON line."""
    counts = [int(t) for t in args.threads.split(",")]
    lib, build_s = build(args.layers)
    data = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    spin = (threadpool.spin_count() if threadpool.backend() == "minitvm"
            else os.environ.get("GOMP_SPINCOUNT") or os.environ.get("OMP_WAIT_POLICY"))
    result = {"build_s": build_s, "pool": threadpool.backend(), "spin": spin}
    for label, hogs in (("idle", 0), ("hog", args.hogs)):
        procs = start_hogs(hogs)
        try:
            time.sleep(0.3 if hogs else 0.0)
            result[label] = time_all(lib, counts, data, args.runs)
            result[label + "_load"] = os.getloadavg()[0]
        finally:
            stop_hogs(procs)
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--hogs", type=int, default=2, help="busy background processes")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--layers", type=int, default=18)
    ap.add_argument("--pools", default="minitvm,gomp",
                    help="thread pools to compare (MINITVM_THREADPOOL values)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    counts = [int(t) for t in args.threads.split(",")]
    results = {}
    for pool in args.pools.split(","):
        env = dict(os.environ, MINITVM_THREADPOOL=pool)
        cmd = [sys.executable, __file__, "--child", "--threads", args.threads, "--hogs",
               str(args.hogs), "--runs", str(args.runs), "--layers", str(args.layers)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
        results[pool] = json.loads(line[len("RESULT "):])
    print(f"ResNet-{args.layers} batch 1 (relay.build opt_level 3), {args.runs} runs, "
          f"median / mean ms; {os.cpu_count()} CPUs; hog = {args.hogs} busy processes")
    head = f"{'pool (spin)':<18}{'threads':>8}{'idle':>16}{'hog':>16}"
    print(head)
    print("-" * len(head))
    for pool, r in results.items():
        for t in counts:
            name = f"{pool} ({r['spin']})"
            cells = "".join(f"{r[k][str(t)][0]:>9.1f} /{r[k][str(t)][1]:>5.0f}"
                            for k in ("idle", "hog"))
            print(f"{name:<18}{t:>8}{cells}")
        print(f"{'  load average':<26}{r['idle_load']:>16.1f}{r['hog_load']:>16.1f}")


if __name__ == "__main__":
    main()
