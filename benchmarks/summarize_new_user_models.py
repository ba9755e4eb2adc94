"""One table of every new-user model from saved ``bench_new_user_models.py`` outputs: each
model's minitvm and ONNX Runtime times and their ratio, then how many models fall below 0.9x,
in 0.9-1.0x and above 1.0x of ONNX Runtime, and which are above. The groups are timed apart
(one process each, as they were added round by round); a later file (``--confirm``, e.g. a
``--models M --rounds 7`` re-timing) overrides a model's ratio.

    for g in first second ... seventeenth; do
        python benchmarks/bench_new_user_models.py --group $g --rounds 3 > out/$g.txt
    done
    python benchmarks/summarize_new_user_models.py out/*.txt [--confirm out/confirm.txt]
        [--at 0.95]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

# a result row of bench_new_user_models.py: model, minitvm ms, ORT ms (or n/a), torch ms,
# vs ORT (or n/a), ...
ROW = re.compile(r"^(\S+)\s+([\d.]+)\s+([\d.]+|n/a)\s+([\d.]+)\s+([\d.]+x|n/a)\s")
FAILED = re.compile(r"^(\S+)\s+FAILED:")


@dataclass
class Result:
    model: str
    source: str
    minitvm_ms: float | None
    ort_ms: float | None
    ratio: float | None  # minitvm / ORT
    confirmed: float | None = None

    @property
    def final(self) -> float | None:
        return self.confirmed if self.confirmed is not None else self.ratio


def parse(path: str) -> list[Result]:
    """The result rows of one saved output (failures kept with no times)."""
    rows = []
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                ort = None if m.group(3) == "n/a" else float(m.group(3))
                ratio = None if m.group(5) == "n/a" else float(m.group(5)[:-1])
                rows.append(Result(m.group(1), path, float(m.group(2)), ort, ratio))
                continue
            m = FAILED.match(line)
            if m:
                rows.append(Result(m.group(1), path, None, None, None))
    return rows


def band(ratio: float) -> str:
    return "below 0.9x" if ratio < 0.9 else "0.9-1.0x" if ratio <= 1.0 else "above 1.0x"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outputs", nargs="+", help="saved outputs, one per group")
    ap.add_argument("--confirm", action="append", default=[],
                    help="re-timings whose ratios override the groups' (repeatable)")
    ap.add_argument("--at", type=float, default=0.95,
                    help="list the models at or above this ratio to re-time")
    args = ap.parse_args(argv)
    table: dict[str, Result] = {}
    for path in args.outputs:
        for r in parse(path):
            table[r.model] = r
    for path in args.confirm:
        for r in parse(path):
            if r.model in table and r.ratio is not None:
                table[r.model].confirmed = r.ratio
    if not table:
        print("no result rows found")
        return 1

    def fmt(v, spec):
        return f"{v:{spec}}" if v is not None else f"{'n/a':>{spec.split('.')[0]}}"

    print(f"{'model':22s} {'minitvm':>9s} {'ORT':>9s} {'vs ORT':>7s} {'confirm':>7s}  output")
    for r in table.values():
        print(f"{r.model:22s} {fmt(r.minitvm_ms, '9.3f')} {fmt(r.ort_ms, '9.3f')} "
              f"{fmt(r.ratio, '7.2f')} {fmt(r.confirmed, '7.2f')}  {r.source}")
    rated = {n: r.final for n, r in table.items() if r.final is not None}
    failed = [n for n, r in table.items() if r.minitvm_ms is None]
    no_ort = [n for n, r in table.items() if r.minitvm_ms is not None and r.final is None]
    counts = {b: 0 for b in ("below 0.9x", "0.9-1.0x", "above 1.0x")}
    for v in rated.values():
        counts[band(v)] += 1
    print(f"\n{len(table)} models: {len(rated)} against ORT, {len(no_ort)} without an ORT "
          f"baseline {no_ort}, {len(failed)} failed {failed}")
    print("; ".join(f"{b}: {n}" for b, n in counts.items()))
    ranked = sorted(rated.items(), key=lambda kv: -kv[1])
    print("above 1.0x:", ", ".join(f"{n} {v:.2f}x" for n, v in ranked if v > 1.0) or "none")
    print(f"at or above {args.at}x:",
          ",".join(n for n, v in ranked if v >= args.at) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
