"""``minitvm tune MODEL --trials N -o records.jsonl``: tune a model file's workloads."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="tune a model's schedules; write a records file")
    t.add_argument("model", help="a model file (.onnx, .tflite, .pt2) or Relay text")
    t.add_argument("--trials", type=int, default=32, help="candidates per task (default 32)")
    t.add_argument("--seconds", type=float, default=None, help="time budget in all")
    t.add_argument("-o", "--output", default="records.jsonl",
                   help="records file, appended to (default records.jsonl)")
    t.add_argument("--timeout", type=float, default=60.0, help="seconds per candidate")
    t.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="measure candidates on a Ray cluster ('auto', 'ray://host:10001')")
    t.add_argument("--strategy", choices=["evolutionary", "random"], default="evolutionary")
    t.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    t.add_argument("-v", "--verbose", action="store_true", help="a line per candidate")


def run_tune(args, mod, params) -> int:
    """Extract ``mod``'s tasks, tune them into ``args.output``, print the best per task."""
    from . import extract_tasks, tune_tasks

    tasks = extract_tasks(mod, params)
    if not tasks:
        print(f"minitvm tune: {args.model} has no tunable workloads", file=sys.stderr)
        return 0
    print(f"{len(tasks)} tasks: " + ", ".join(t.name for t in tasks))
    runner = f"ray:{args.ray}" if args.ray else None
    db = tune_tasks(tasks, args.output, trials=args.trials, seconds=args.seconds,
                    runner=runner, timeout=args.timeout, strategy=args.strategy,
                    progress="lines" if not args.quiet else "none", verbose=args.verbose)
    for t in tasks:
        best = db.best(t.workload)
        cost = f"{best.cost * 1e3:.4f} ms {best.knobs}" if best else "no successful candidate"
        print(f"{t.name}: {cost}")
    print(f"records: {args.output} (build with minitvm.tune.apply_history_best)")
    return 0
