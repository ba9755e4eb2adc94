"""Tune bench_whole_models' models into one records file, a time budget per model, for its
``--records`` column (the issue's "tuned" latencies).

    python benchmarks/tune_whole_models.py R.jsonl resnet50=180 mobilenetv2=150 bert=120 \\
        resnet_small=60 mlp64=30 mlp1=20
    python benchmarks/bench_whole_models.py --records R.jsonl --threads 1

Each ``NAME=SECONDS`` runs ``minitvm.tune.tune_relay`` (48 candidates a task at most) on the
model exactly as ``bench_whole_models`` builds it, appending to the records file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import bench_whole_models  # noqa: E402

from minitvm import tune  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", help="records file (JSON lines), appended to")
    ap.add_argument("budgets", nargs="+", metavar="NAME=SECONDS",
                    help=f"a model of {','.join(bench_whole_models.MODELS)} and its tuning budget")
    ap.add_argument("--trials", type=int, default=48, help="candidates per task at most")
    args = ap.parse_args(argv)
    budgets = []
    for item in args.budgets:
        name, _, secs = item.partition("=")
        if name not in bench_whole_models.MODELS or not secs.replace(".", "", 1).isdigit():
            ap.error(f"{item!r}: expected NAME=SECONDS with NAME one of "
                     f"{list(bench_whole_models.MODELS)}")
        budgets.append((name, float(secs)))
    for name, secs in budgets:
        m = bench_whole_models.load(name)
        start = time.time()
        tune.tune_relay(m["mod"], m["params"], records=args.records, trials=args.trials,
                        seconds=secs)
        print(f"{name}: tuned for {time.time() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
