"""``python -m minitvm.tune.builtin RECORDS.jsonl...``: re-measure each workload's best tuned
knobs against the defaults side by side, and add the clear wins to the built-in table."""

from __future__ import annotations

import argparse
import sys

from . import CPUS, ISAS, gains, promote, verify


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minitvm.tune.builtin",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", help="records files of tuning runs")
    ap.add_argument("--isa", choices=ISAS, default=None, help="table to add to (default: host)")
    ap.add_argument("--cpu", choices=sorted(CPUS), default=None,
                    help="add to this CPU's own table instead (measure on that CPU)")
    ap.add_argument("--min-gain", type=float, default=0.05,
                    help="least relative time saved at some thread count (default 0.05)")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds per thread count")
    ap.add_argument("--runs", type=int, default=20, help="runs per round (their median)")
    ap.add_argument("--threads", default="1,2",
                    help="thread counts to measure at (default 1,2; 1: the thread's CPU time, "
                         "more: wall clock, which a loaded machine makes noise: there give 1)")
    ap.add_argument("--how", default="", help="how the records were made (kept on each line)")
    ap.add_argument("--dry-run", action="store_true", help="measure and print; write nothing")
    ap.add_argument("--warm", action="store_true",
                    help="time runs with warm caches (default: caches evicted before each run)")
    args = ap.parse_args(argv)
    from ...schedule.common import vector_isa
    from ..records import load_records

    try:
        threads = tuple(int(t) for t in args.threads.split(","))
    except ValueError:
        ap.error(f"--threads {args.threads!r}: expected thread counts like 1,2")
    if not threads or min(threads) < 1:
        ap.error(f"--threads {args.threads!r}: thread counts must be positive")
    isa = args.cpu or args.isa or vector_isa()
    recs = [r for path in args.records for r in load_records(path)]
    pairs = verify(recs, rounds=args.rounds, threads=threads, runs=args.runs,
                   cold=not args.warm)
    for best, default in pairs:
        g = ", ".join(f"{x:+.1%}" for x in gains(best, default))
        print(f"{best.key}: {best.knobs}\n  ms best {[round(c * 1e3, 4) for c in best.costs]} "
              f"default {[round(c * 1e3, 4) for c in default.costs]} "
              f"({', '.join(map(str, threads))} threads); "
              f"saved {g}")
    if args.dry_run:
        return 0
    how = args.how or "tuned: " + " ".join(args.records)
    added = promote(pairs, isa, args.min_gain, how + f"; verified: rounds={args.rounds} "
                    f"runs={args.runs} threads={','.join(map(str, threads))} "
                    f"min_gain={args.min_gain}"
                    f"{' warm' if args.warm else ' cold'}")
    print(f"added to the {isa} table: {[r.key for r in added] or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
