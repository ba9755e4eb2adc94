"""Build seconds of ``relay.build`` and ``relax.build`` for ResNet-50, MobileNetV2 and BERT-base:
cold (an empty on-disk cache), warm (the whole-build cache filled: the build is loaded) and
kernels-only (the whole-build cache off, every kernel in the on-disk cache: the passes, the
scheduling and the cache look-ups all run), each in a fresh process over one cache directory.

    python benchmarks/bench_build_cache.py [--models resnet50,mobilenetv2,bert] [--rounds 2]

The models and builds are bench_whole_models.py's (TorchScript -> Relay at opt_level 3;
torch.export -> ``from_exported_program`` -> Relax with the default pipeline); the seconds are
each build call's wall time alone (not the import), medians over the rounds, the dialects
interleaved within each round; the ratio columns are relax / relay.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "bench_whole_models.py")
KINDS = ("cold", "warm", "kernels")


def _build(name: str, dialect: str, cache_dir: str, whole: bool) -> float:
    """One build of ``name`` in a fresh process over ``cache_dir`` (whole-build cache on or
    off); its wall seconds."""
    root = os.path.dirname(HERE)
    env = dict(os.environ, MINITVM_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", ""))
                                          if p))
    env.pop("MINITVM_DISABLE_DISK_CACHE", None)
    env.pop("MINITVM_DISABLE_BUILD_CACHE", None)
    if not whole:
        env["MINITVM_DISABLE_BUILD_CACHE"] = "1"
    proc = subprocess.run([sys.executable, BENCH, "--compile-child", name, "--dialects", dialect],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building {name} ({dialect}) failed:\n{proc.stderr.strip()[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["wall"]


def measure(name: str, dialect: str) -> dict[str, float]:
    """Cold, warm (whole build loaded) and kernels-only seconds over one fresh cache."""
    with tempfile.TemporaryDirectory(prefix="minitvm-bench-build-") as d:
        cold = _build(name, dialect, d, True)
        warm = _build(name, dialect, d, True)
        kernels = _build(name, dialect, d, False)
    return {"cold": cold, "warm": warm, "kernels": kernels}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    dialects = ("relay", "relax")
    head = "".join(f"{d + ' ' + k:>15s}" for d in dialects for k in KINDS)
    print(f"{'model':12s}{head}{'warm x':>9s}{'kern x':>9s}{'cold x':>9s}")
    for name in args.models.split(","):
        runs = {d: {k: [] for k in KINDS} for d in dialects}
        for r in range(args.rounds):
            for d in dialects if r % 2 == 0 else dialects[::-1]:
                for k, v in measure(name, d).items():
                    runs[d][k].append(v)
        med = {d: {k: statistics.median(v) for k, v in runs[d].items()} for d in dialects}
        cells = "".join(f"{med[d][k]:15.2f}" for d in dialects for k in KINDS)
        ratios = "".join(f"{med['relax'][k] / med['relay'][k]:9.2f}"
                         for k in ("warm", "kernels", "cold"))
        print(f"{name:12s}{cells}{ratios}", flush=True)
    print(f"seconds of the build call, median of {args.rounds} rounds, each build in a fresh "
          "process; x: relax / relay")


if __name__ == "__main__":
    main()
