"""Long fuzzing run (issue 15): random programs through every registered Relay pass,
relay.optimize at opt levels 0-3 and relay.build; parser mutations; damaged library files.

    python scripts/fuzz_long.py --programs 5000 --parser 20000 --library 500 --seed 0

Prints a summary (and writes it with every finding to --out as JSON). Exit status 1 when any
check failed. Findings in passes listed with --known are counted separately (known bugs whose
fix belongs to another part) and do not fail the run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
import warnings


def run_programs(args, report):
    from minitvm.testing.fuzz import generate_program
    from minitvm.testing.fuzz.differential import (
        NOT_APPLICABLE,
        check_pass,
        check_pipeline,
        relay_pass_names,
    )

    names = [n for n in relay_pass_names() if n not in NOT_APPLICABLE]
    counts = collections.Counter()
    findings = []
    runs = builds = 0
    t0 = time.time()
    done = 0
    for k in range(args.programs):
        if args.time_budget and time.time() - t0 > args.time_budget:
            print(f"  time budget reached after {k} programs", flush=True)
            break
        done = k + 1
        seed = args.seed + k
        prog = generate_program(seed, bounded=True)
        for name in names:
            runs += 1
            for f in check_pass(prog, name):
                counts[(f.kind, f.pass_name)] += 1
                findings.append(f)
        pipe = check_pipeline(prog, special=False)
        builds += 1 if prog.graph_compatible else 0
        # the same seed without control flow / closures / ADTs / let: relay.build can run it
        flat = dict(control_flow=False, closures=False, adts=False, lets=False)
        dataflow = generate_program(seed, **flat)
        if not prog.graph_compatible and dataflow.graph_compatible:
            builds += 1
            pipe += check_pipeline(dataflow, opt_levels=())
        for f in pipe:
            counts[(f.kind, f.pass_name)] += 1
            findings.append(f)
        if args.ieee:  # unbounded operators, inf/nan/huge inputs, through relay.build
            from minitvm.testing.fuzz.differential import check_build

            raw = generate_program(seed, bounded=False, **flat)
            if raw.graph_compatible:
                builds += 1
                for f in check_build(raw, raw.inputs(special=True)):
                    f.pass_name += " [ieee]"
                    counts[(f.kind, f.pass_name)] += 1
                    findings.append(f)
        if (k + 1) % 25 == 0:
            print(f"  {k + 1} programs, {time.time() - t0:.0f} s, findings "
                  f"{sum(counts.values())}", flush=True)
    report["programs"] = {"count": done, "passes": len(names), "pass_runs": runs,
                          "builds": builds, "seconds": round(time.time() - t0, 1),
                          "findings": {f"{k[0]} / {k[1]}": v for k, v in counts.items()}}
    return findings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--parser", type=int, default=20000)
    ap.add_argument("--library", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ieee", action="store_true",
                    help="also build each program with unbounded values and inf/nan inputs")
    ap.add_argument("--known", action="append", default=[],
                    help="a pass whose findings are known bugs (repeatable)")
    ap.add_argument("--out", default="fuzz_long_report.json")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="stop generating programs after this many seconds (0: no limit)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    report: dict = {"command": " ".join([os.path.basename(sys.argv[0])] + (argv or sys.argv[1:]))}
    failed = False
    findings = run_programs(args, report) if args.programs else []
    unknown = [f for f in findings if f.pass_name.split(" ")[0] not in args.known]
    failed |= bool(unknown)
    if args.parser:
        from minitvm.testing.fuzz.parser_fuzz import fuzz_parser

        t0 = time.time()
        r = fuzz_parser(args.parser, seed=args.seed)
        report["parser"] = {"summary": str(r), "seconds": round(time.time() - t0, 1),
                            "failures": [m for _, m in r.failures[:50]]}
        failed |= bool(r.failures)
        print(r, flush=True)
    if args.library:
        from minitvm.testing.fuzz.library_fuzz import fuzz_library

        t0 = time.time()
        with tempfile.TemporaryDirectory() as d:
            r = fuzz_library(args.library, d, seed=args.seed)
        report["library"] = {"summary": str(r), "seconds": round(time.time() - t0, 1),
                             "failures": r.failures}
        failed |= bool(r.failures)
        print(r, flush=True)
    report["program_findings"] = [
        {"kind": f.kind, "pass": f.pass_name, "seed": f.seed, "detail": f.detail[:500],
         "program": f.program[:4000]} for f in findings[:300]]
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    if "programs" in report:
        p = report["programs"]
        print(f"{p['count']} programs x {p['passes']} passes = {p['pass_runs']} pass runs, "
              f"relay.optimize 0-3 on each, {p['builds']} relay.build runs, {p['seconds']} s")
        for key, v in sorted(p["findings"].items(), key=lambda kv: -kv[1]):
            print(f"  {v:6d}  {key}")
        print(f"  unexpected (not --known): {len(unknown)}")
    print(f"report written to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
