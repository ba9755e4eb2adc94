"""Build time of ``relay.vm.compile`` for dynamic-batch models: cold (an empty kernel cache) and
warm (the same cache, a fresh process), serial (``MINITVM_COMPILE_JOBS=1``) and parallel (the
default: one process per core), each in a fresh process; and the time a fresh process takes to
load the executable the warm build exported (``Executable.load_exec`` of ``load_module``).

    python benchmarks/bench_relay_vm_build.py [--models resnet18,vit_tiny] [--rounds 2]

Each model is exported to ONNX with a dynamic batch (``bench_dynamic_batch.export_dynamic``) and
imported with ``relay.Any()`` for it; the columns are medians over the rounds of the wall seconds
of ``relay.vm.compile`` alone, and the CPU seconds of the compiling process (its workers not
counted). Wall time needs idle cores to show what parallel compiling gains. A load column's
symbolic kernels count is those the load lowered again (0: each read back from its record).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT = "resnet18,mobilenetv3_small,efficientnet_b0,vit_tiny"


def _child(onnx_path: str, export: str | None) -> None:
    """Compile the model once and print ``wall cpu`` seconds; ``export``: save the executable
    there (``.code`` and ``.so``)."""
    import onnx

    from minitvm import relay

    with open(onnx_path + ".shape", "rb") as f:
        shape = pickle.load(f)
    mod, params = relay.frontend.from_onnx(onnx.load(onnx_path),
                                           shape={"x": [relay.Any(), *shape[1:]]})
    t0, c0 = time.perf_counter(), time.process_time()
    exe = relay.vm.compile(mod, target="llvm", params=params)
    print(f"{time.perf_counter() - t0:.3f} {time.process_time() - c0:.3f}")
    if export:
        code, lib = exe.save()
        with open(export + ".code", "wb") as f:
            f.write(code)
        lib.export_library(export + ".so")


def _load_child(export: str) -> None:
    """Load an exported executable and print ``wall cpu`` seconds and how many symbolic
    kernels were scheduled (lowered again) on the way."""
    from minitvm.relay.backend.vm import symbolic
    from minitvm.runtime.module import load_module
    from minitvm.runtime.vm import Executable

    with open(export + ".code", "rb") as f:
        code = f.read()
    t0, c0 = time.perf_counter(), time.process_time()
    Executable.load_exec(code, load_module(export + ".so"))
    print(f"{time.perf_counter() - t0:.3f} {time.process_time() - c0:.3f} "
          f"{getattr(symbolic, 'STATS', {}).get('scheduled', -1)}")


def _export(name: str, folder: str) -> str:
    sys.path.insert(0, os.path.dirname(__file__))
    import bench_dynamic_batch

    ctor, shape = bench_dynamic_batch.model_table()[name]
    _, buf = bench_dynamic_batch.export_dynamic(ctor, shape)
    path = os.path.join(folder, f"{name}.onnx")
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    with open(path + ".shape", "wb") as f:
        pickle.dump(shape, f)
    return path


def _run(path: str, cache: str, jobs: int, export: str = "") -> tuple[float, float]:
    env = dict(os.environ, MINITVM_CACHE_DIR=cache, MINITVM_COMPILE_JOBS=str(jobs))
    extra = ["--export", export] if export else []
    out = subprocess.run([sys.executable, __file__, "--child", path, *extra], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[-2]), float(out[-1])


def _load(export: str, cache: str) -> tuple[float, float, int]:
    env = dict(os.environ, MINITVM_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, __file__, "--load", export], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[-3]), float(out[-2]), int(out[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--export", help=argparse.SUPPRESS)
    ap.add_argument("--load", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.export)
        return 0
    if args.load:
        _load_child(args.load)
        return 0
    print(f"relay.vm.compile seconds, median of {args.rounds} (wall / CPU of the compiling "
          "process); cold: empty kernel cache, warm: a second process on the same cache")
    print(f"{'model':18s} {'jobs':>6s} {'cold wall':>9s} {'cold cpu':>9s} {'warm wall':>9s} "
          f"{'warm cpu':>9s} {'load wall':>9s} {'load cpu':>9s} {'relowered':>9s}")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models.split(","):
            path = _export(name, folder)
            for jobs in (1, 0):
                cells: dict[str, list] = {"cold": [], "warm": [], "load": []}
                for r in range(args.rounds):
                    cache = os.path.join(folder, f"cache_{name}_{jobs}_{r}")
                    export = os.path.join(folder, f"exe_{name}_{jobs}_{r}")
                    cells["cold"].append(_run(path, cache, jobs))
                    cells["warm"].append(_run(path, cache, jobs, export))
                    cells["load"].append(_load(export, cache))
                med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)]
                       for k, v in cells.items()}
                relowered = max(x[2] for x in cells["load"])
                print(f"{name:18s} {'1' if jobs == 1 else 'cores':>6s} {med['cold'][0]:9.2f} "
                      f"{med['cold'][1]:9.2f} {med['warm'][0]:9.2f} {med['warm'][1]:9.2f} "
                      f"{med['load'][0]:9.2f} {med['load'][1]:9.2f} {relowered:9d}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
