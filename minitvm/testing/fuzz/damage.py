"""Damage fuzzing: valid artefacts broken on purpose; minitvm must answer with a clear error.

A *family* (``damage_inputs``, ``damage_onnx``, ``damage_text``, ``damage_ir``) lists seeded
``DamageCase`` s: a damaged run-time input, model file, text or IR, a callable that feeds it to
minitvm, and the words (an input's, a node's or an op's name, ``line:col``) a clear error must
name. ``run_cases`` runs them in worker processes, so a segfault or a hang in a native kernel is
a finding, not a crash of the caller; a worker that dies is restarted after the case it died on.

Outcomes: ``clear`` (a ValueError / TypeError / TVMError naming the place), ``accepted`` (the
damage was harmless and the answer is right), ``unclear`` (the right class, but the message does
not say where), ``lenient`` (accepted what the reference refuses: listed, not a finding),
``wrong`` (a silent wrong answer), ``error`` (any other exception: a bare
KeyError / IndexError / AttributeError / AssertionError...), ``crash`` and ``hang``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["DamageCase", "DamageReport", "Wrong", "Lenient", "classify", "run_cases", "run_in_process",
           "FAMILIES"]

FAMILIES = ("inputs", "onnx", "text", "ir", "tflite", "torch")
_BAD = (KeyError, IndexError, AttributeError, AssertionError, RecursionError, ZeroDivisionError,
        OverflowError, UnboundLocalError, NameError)


class Wrong(Exception):
    """Raised by a case's own check: the damaged artefact was accepted with a wrong answer."""

    outcome = "wrong"


class Lenient(Wrong):
    """Raised by a case's own check: accepted an artefact the reference (ONNX Runtime) refuses;
    listed, not counted as a finding (minitvm may be more forgiving than its peer)."""

    outcome = "lenient"


@dataclass
class DamageCase:
    """One damaged artefact: ``klass`` groups it in reports (``"graph_executor/rank"``)."""

    klass: str
    name: str
    run: Callable[[], object]
    expect: tuple[str, ...] = ()


def _mentions(msg: str, words) -> bool:
    low = msg.lower()
    for w in words:
        if w.startswith("re:"):
            if re.search(w[3:], msg):
                return True
        elif w.lower() in low:
            return True
    return not words


def classify(err: BaseException | None, expect=()) -> tuple[str, str]:
    """``(outcome, detail)`` for the exception a case raised (None: it was accepted)."""
    from ...runtime.error import TVMError

    if err is None:
        return "accepted", ""
    msg = f"{type(err).__name__}: {err}"
    if isinstance(err, Wrong):
        return err.outcome, str(err)
    if isinstance(err, _BAD) and not isinstance(err, TVMError):
        tb = traceback.extract_tb(err.__traceback__)
        where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        return "error", msg[:400] + where
    if isinstance(err, ValueError | TypeError | TVMError):
        return ("clear", "") if _mentions(str(err), expect) else ("unclear", msg[:400])
    tb = traceback.extract_tb(err.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return "error", msg[:400] + where


@dataclass
class DamageReport:
    """Outcome counts per class and the findings (class, case name, outcome, detail)."""

    counts: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)
    lenient: list = field(default_factory=list)

    def add(self, klass: str, name: str, outcome: str, detail: str = "") -> None:
        self.counts.setdefault(klass, Counter())[outcome] += 1
        if outcome == "lenient":
            self.lenient.append((klass, name, detail))
        elif outcome not in ("clear", "accepted"):
            self.findings.append((klass, name, outcome, detail))

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def table(self) -> str:
        """One row per class: cases run and outcomes."""
        kinds = ["clear", "accepted", "lenient", "unclear", "wrong", "error", "crash", "hang"]
        rows = [f"{'class':42} {'cases':>6} " + " ".join(f"{k:>8}" for k in kinds)]
        for klass in sorted(self.counts):
            c = self.counts[klass]
            rows.append(f"{klass:42} {sum(c.values()):6d} "
                        + " ".join(f"{c.get(k, 0):8d}" for k in kinds))
        return "\n".join(rows)


def run_in_process(cases, report: DamageReport | None = None) -> DamageReport:
    """Run ``cases`` here (no isolation: for cases that cannot crash the process)."""
    report = report or DamageReport()
    for case in cases:
        outcome, detail = _run_one(case)
        report.add(case.klass, case.name, outcome, detail)
    return report


def _run_one(case: DamageCase) -> tuple[str, str]:
    try:
        case.run()
    except BaseException as err:  # noqa: BLE001 - what the fuzzer looks for
        if isinstance(err, KeyboardInterrupt):
            raise
        return classify(err, case.expect)
    return classify(None)


def _family_cases(family: str, seed: int, n: int) -> list:
    """A family's cases: one of ``FAMILIES``, or any importable module with ``cases``."""
    name = f"{__package__}.damage_{family}" if family in FAMILIES else family
    return importlib.import_module(name).cases(seed, n)


def _child(family: str, seed: int, n: int, start: int, path: str) -> None:
    """Worker: run cases ``start:`` of the family, one JSON line per case (a ``start`` line
    first, so the parent knows which case a crash or hang belongs to). A crash here is a
    finding the parent records, so the interpreter's fault handler (pytest enables it, and a
    forked worker inherits it) is off: no traceback of an expected crash on the shared stderr."""
    import faulthandler

    faulthandler.disable()
    cases = _family_cases(family, seed, n)
    with open(path, "a") as f:
        for i in range(start, len(cases)):
            c = cases[i]
            f.write(json.dumps({"i": i, "start": True}) + "\n")
            f.flush()
            outcome, detail = _run_one(c)
            f.write(json.dumps({"i": i, "klass": c.klass, "name": c.name, "outcome": outcome,
                                "detail": detail}) + "\n")
            f.flush()
        f.write(json.dumps({"done": len(cases)}) + "\n")


def run_cases(family: str, seed: int, n: int, timeout: float = 60.0,
              report: DamageReport | None = None, start_method: str = "spawn") -> DamageReport:
    """Run ``n`` cases of ``family`` (seeded) in worker processes; a worker that dies (a
    segfault) or spends ``timeout`` seconds on one case records a ``crash`` / ``hang`` and a
    fresh worker goes on with the next case. ``start_method``: "spawn" (a clean interpreter:
    the campaign) or "fork" (no import cost: for self-contained cases in tests)."""
    import multiprocessing

    report = report or DamageReport()
    mp = multiprocessing.get_context(start_method)
    start = 0
    fd, path = tempfile.mkstemp(suffix=".jsonl", prefix="damage_")
    os.close(fd)
    try:
        while True:
            open(path, "w").close()
            proc = mp.Process(target=_child, args=(family, seed, n, start, path), daemon=True)
            proc.start()
            last_size, last_change, status = -1, time.monotonic(), None
            while status is None:
                proc.join(0.1)
                if proc.exitcode is not None:
                    status = proc.exitcode
                    break
                size = os.path.getsize(path)
                if size != last_size:
                    last_size, last_change = size, time.monotonic()
                # (a worker's start, its imports and case list, may take longer than a case)
                elif time.monotonic() - last_change > (timeout if size else 10 * timeout):
                    proc.kill()
                    proc.join()
                    status = "hang"
            started, done = None, False
            with open(path) as f:
                for line in f:
                    rec = json.loads(line)
                    if "done" in rec:
                        done = True
                    elif rec.get("start"):
                        started = rec["i"]
                    else:
                        report.add(rec["klass"], rec["name"], rec["outcome"], rec["detail"])
                        started = None
            if done:
                return report
            if started is None:  # the worker died before its first case (an import error)
                report.add(f"{family}/worker", "start", "error", f"worker exited with {status}")
                return report
            outcome = "hang" if status == "hang" else "crash"
            klass, name = _describe(family, seed, n, started)
            what = f"no answer in {timeout:g} s" if status == "hang" else (
                f"killed by signal {-status}" if status < 0 else f"exited with status {status}")
            report.add(klass, name, outcome, f"worker {what}")
            start = started + 1
    finally:
        os.unlink(path)


def _describe(family: str, seed: int, n: int, i: int) -> tuple[str, str]:
    """The class and name of case ``i`` (rebuilt here: the worker that knew them is gone)."""
    try:
        c = _family_cases(family, seed, n)[i]
        return c.klass, c.name
    except Exception as err:  # noqa: BLE001
        return f"{family}/?", f"case {i} ({err})"


def run_cli(argv: list[str], timeout: float = 600.0) -> tuple[int, str]:
    """``python -m minitvm ARGV`` as a user runs it (this package sits below the command
    line and does not import it): the exit status and stderr."""
    import subprocess

    p = subprocess.run([sys.executable, "-m", "minitvm", *argv], capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stderr


def main(argv=None) -> int:
    """``python -m minitvm.testing.fuzz.damage [--family F] [--n N] [--seed S]``: a campaign."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--family", action="append", choices=FAMILIES)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args(argv)
    report = DamageReport()
    for fam in args.family or FAMILIES:
        t = time.time()
        run_cases(fam, args.seed, args.n, args.timeout, report)
        print(f"{fam}: {time.time() - t:.0f} s", file=sys.stderr)
    print(report.table())
    for f in report.findings:
        print(" | ".join(str(x) for x in f)[:700])
    for f in report.lenient[:40]:
        print("lenient | " + " | ".join(str(x) for x in f)[:300])
    return 1 if report.findings else 0


if __name__ == "__main__":
    # (through the package's module: a worker unpickles ``_child`` from there, and the
    # outcome classes it raises must be the ones ``classify`` checks)
    from minitvm.testing.fuzz.damage import main as _main

    sys.exit(_main())
