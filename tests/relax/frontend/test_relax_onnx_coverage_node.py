"""The ONNX node tests shipped with the ``onnx`` package, run through the Relax importer
(``relax.frontend.onnx.from_onnx``), ``relax.build`` and the Relax VM.

The CI test runs a fixed sample of the claimed operators' cases (every ``STRIDE``-th, so it
stays under a minute) and fails if their pass rate drops below the recorded floor. ``python
tests/relax/frontend/test_relax_onnx_coverage_node.py [--all] [-v] [--op NAME]`` prints the
per-operator table.
"""

from __future__ import annotations

import sys
import time

import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX node tests need the `onnx` package")

from minitvm.relax.frontend.onnx import supported_ops  # noqa: E402
from minitvm.relax.frontend.onnx.backend import RelaxBackend  # noqa: E402
from minitvm.testing.onnx_node_cases import (  # noqa: E402
    claimed_cases,
    compare_outputs,
    overall,
    print_rates,
    tally,
    to_arrays,
)

STRIDE = 6  # the CI sample: every STRIDE-th claimed case, in the onnx package's order
# pass rate of the CI sample, measured when this was written; the test fails below it
PASS_RATE_THRESHOLD = 0.97  # sample 177/177 = 100%, full set 1062/1062 = 100%, 2026-12-02;
# sample 230/236 = 97.5%, 2026-12-05, after claiming Attention, RoiAlign, STFT, the windows,
# LpPool, Det...: the new sample holds 3 failures that predate it (3-D AffineGrid, cubic and
# volumetric GridSample, failing at a251ef5 too), 2 fp16 Attention cases whose expanded
# function fails alike (Relax's fp16 kernels round 1-2 ulp off numpy's) and one expanded
# CenterCropPad (Pad's pads computed through ops that do not keep known values); 2026-12-05
# later: cubic and volumetric GridSample pass (the shared native kernel), 18/18 GridSample


def collect_cases():
    """(operator, case) for every node test whose operators all have Relax converters."""
    return claimed_cases(set(supported_ops()), order_by_name=True)


def run_case(case) -> tuple[bool, str]:
    """Run one node test through Relax; (passed, reason when it did not)."""
    try:
        rep = RelaxBackend.prepare(case.model)
        for inputs, expected in case.data_sets:
            expected = to_arrays(expected)
            got = rep.run(to_arrays(inputs))
            why = compare_outputs(list(got), expected, case.rtol, case.atol)
            if why:
                return False, why
        return True, ""
    except Exception as e:  # noqa: BLE001 - a failing case is a data point, not a crash
        msg = str(e).strip().splitlines()
        return False, f"{type(e).__name__}: {msg[0] if msg else ''}"[:200]


def pass_rates(cases):
    return tally(cases, run_case)


def test_relax_node_tests_pass_rate_sample():
    """A fixed sample of the claimed operators' node tests keeps its pass rate."""
    cases = collect_cases()
    assert len(cases) > 500, f"only {len(cases)} node tests were collected"
    rates = pass_rates(cases[::STRIDE])
    passed, total = overall(rates)
    fails = [w for r in rates.values() for w in r[2]]
    assert passed / total >= PASS_RATE_THRESHOLD, (
        f"Relax ONNX node tests (sample): {passed}/{total} passed ({passed / total:.1%}), below "
        f"the recorded {PASS_RATE_THRESHOLD:.0%}; failing: {fails}")


def main(argv: list[str]) -> int:
    cases = collect_cases()
    if "--op" in argv:
        want = argv[argv.index("--op") + 1].split(",")
        cases = [(o, c) for o, c in cases if o in want]
    elif "--all" not in argv:
        cases = cases[::STRIDE]
    t = time.time()
    rates = pass_rates(cases)
    print_rates(rates, f"relax, {time.time() - t:.0f} s", "-v" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
