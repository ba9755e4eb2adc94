"""Process memory of ResNet-50, MobileNetV2 and BERT-base built by minitvm beside ONNX Runtime:
what a deployed model costs in resident memory, and the peak while building.

    python benchmarks/bench_memory.py [--models resnet50,mobilenetv2,bert] [--runs 10]
        [--attribute] [--tree OTHER_CHECKOUT]

Each (runtime, model) runs in a fresh subprocess (the models of ``bench_whole_models``, one
thread). minitvm: ``relay.build`` at opt_level 3 with an empty on-disk kernel cache ("cold") and
again in a second process over the filled cache ("warm"); for each, the peak RSS up to the end of
the build (VmHWM reset just before ``relay.build``: the build's own peak), the RSS once the module is ready to run
(graph executor created, the Relay module, params and import-time objects dropped, the build
cache's writer thread joined — it holds the factory until written —, after ``gc.collect``) and after ``--runs`` runs. ONNX Runtime: the RSS after creating the
InferenceSession (the ONNX bytes and model dropped) and after the runs. A "base" row is the RSS
of the same process with the model's inputs loaded and freed, before building: the columns
"model" subtract it (what the built model itself keeps). ``--attribute`` prints, for minitvm
warm builds, the largest live Python allocations by file:line (tracemalloc) after the build.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

# ``--tree DIR``: measure the minitvm of another checkout (an A/B of a change)
TREE = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv[:-1] else None
sys.path.insert(0, TREE or os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

MB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> float:
    """Current resident set size of this process, MB (/proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / MB


def reset_peak() -> bool:
    """Restart the kernel's peak-RSS count (VmHWM) from the current RSS (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak() -> float:
    """Peak resident set size since ``reset_peak`` (VmHWM), MB; else ``ru_maxrss``, the peak
    since the process started."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def settle() -> float:
    """RSS after a full collection and returning freed heap to the OS where glibc allows."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return rss()


def child(runtime: str, name: str, runs: int, attribute: bool) -> dict:
    """Measure one (runtime, model) in this process; a dict of MB figures."""
    from bench_whole_models import load

    if TREE:  # (bench_whole_models puts this checkout first on the path)
        sys.path.insert(0, TREE)

    if attribute:
        import tracemalloc

        tracemalloc.start(1)
    m = load(name)
    import minitvm

    assert TREE is None or minitvm.__file__.startswith(TREE), minitvm.__file__
    x = np.random.default_rng(0).standard_normal(m["shape"]).astype("float32")
    out: dict = {"loaded": rss()}
    if runtime == "ort":
        import onnxruntime as ort
        from bench_whole_models import ort_runner

        blob, inp = m["onnx"], m["input"]
        del m
        base = settle()
        reset_peak()
        run = ort_runner(blob, inp, x, 1)
        del blob
        out.update(base=base, ready=settle(), peak_build=peak())
        del ort
    else:
        import minitvm as tvm
        from minitvm import relay
        from minitvm.contrib import graph_executor
        from minitvm.runtime import threadpool

        threadpool.set_num_threads(1)
        inp = m["input"]
        mod, params = m["mod"], m["params"]
        del m
        base = settle()
        reset_peak()
        t0 = time.perf_counter()
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        out["build_s"] = time.perf_counter() - t0
        out["peak_build"] = peak()
        del mod, params
        import threading

        for t in threading.enumerate():  # the build cache's writer holds the factory until done
            if t.name == "minitvm-build-cache-write":
                t.join()
        g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        del lib

        def run():
            g.set_input_zero_copy(inp, x)
            g.run()
            return g.get_output(0).numpy()

        out.update(base=base, ready=settle())
        if attribute:
            import tracemalloc

            snap = tracemalloc.take_snapshot()
            stats = snap.statistics("lineno")
            out["top"] = [(str(s.traceback[0]), s.size / MB) for s in stats[:25]]
            out["traced"] = sum(s.size for s in stats) / MB
            tracemalloc.stop()
    for _ in range(runs):
        run()
    out["after_runs"] = settle()
    out["peak_total"] = peak()
    return out


def spawn(runtime: str, name: str, runs: int, cache: str, attribute: bool = False) -> dict:
    root = TREE or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, MINITVM_CACHE_DIR=cache, PYTHONPATH=path, OMP_NUM_THREADS="1")
    for var in ("MINITVM_DISABLE_DISK_CACHE", "MINITVM_DISABLE_BUILD_CACHE"):
        env.pop(var, None)
    cmd = [sys.executable, __file__, "--child", runtime, name, "--runs", str(runs),
           "--tree", root] + \
        (["--attribute"] if attribute else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{runtime} {name} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr.strip()[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--attribute", action="store_true",
                    help="print the largest live allocations after a warm minitvm build")
    ap.add_argument("--tree", default=None, help="the checkout whose minitvm is measured")
    ap.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.runs, args.attribute)))
        return 0
    from bench_whole_models import MODELS

    rows = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="minitvm-bench-mem-") as d:
            cold = spawn("minitvm", name, args.runs, d)
            warm = spawn("minitvm", name, args.runs, d)
            if args.attribute:  # a third process: tracemalloc's own memory skews the figures
                traced = spawn("minitvm", name, 0, d, True)
        ort = spawn("ort", name, args.runs, "/nonexistent")
        rows.append((name, cold, warm, ort))
        if args.attribute:
            print(f"\n{MODELS[name]}: largest live allocations after a warm build "
                  f"({traced['traced']:.1f} MB traced)")
            for where, size in traced["top"]:
                print(f"  {size:8.2f} MB  {where}")
    print("\nMB of resident memory, one thread; 'model' = RSS minus the process before building "
          "(inputs loaded, then freed)")
    hdr = (f"{'model':22s} {'runtime':13s} {'base':>6s} {'peak':>7s} {'ready':>7s} "
           f"{'runs':>7s} {'model':>7s} {'build s':>8s}")
    print(hdr)
    print("-" * len(hdr))
    for name, cold, warm, ort in rows:
        for label, r in (("minitvm cold", cold), ("minitvm warm", warm), ("onnxruntime", ort)):
            bs = f"{r['build_s']:8.1f}" if "build_s" in r else f"{'':8s}"
            print(f"{MODELS[name]:22s} {label:13s} {r['base']:6.0f} {r['peak_build']:7.0f} "
                  f"{r['ready']:7.0f} {r['after_runs']:7.0f} "
                  f"{r['after_runs'] - r['base']:7.0f} {bs}")
        ratio = (warm["after_runs"] - warm["base"]) / max(ort["after_runs"] - ort["base"], 1e-9)
        print(f"{'':22s} {'ratio':13s} model after runs, minitvm warm / onnxruntime: "
              f"{ratio:.2f}; RSS after runs {warm['after_runs'] / ort['after_runs']:.2f}")
    print("peak: VmHWM from just before the build to its end (ORT: session created); ready: after "
          "gc with the executor ready; runs: after the runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
