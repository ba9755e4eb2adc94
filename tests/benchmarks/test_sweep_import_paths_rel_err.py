"""benchmarks/sweep_import_paths.rel_err: the sweep's verdict on one output. NaN and infinities
match only the same value in eager's output (a model whose eager output holds NaN, protonet's
empty classes, is not WRONG when minitvm gives the same NaN); anything else non-finite is."""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import sweep_import_paths as sweep  # noqa: E402

NAN, INF = float("nan"), float("inf")


def test_matching_non_finite_values_agree():
    assert sweep.rel_err(np.array([NAN, 1.0]), np.array([NAN, 1.0])) == 0.0
    assert sweep.rel_err(np.array([INF, -INF]), np.array([INF, -INF])) == 0.0
    # the finite rest is compared relative to eager's finite values
    assert math.isclose(sweep.rel_err(np.array([NAN, 1.1, 2.0]), np.array([NAN, 1.0, 2.0])),
                        0.05)


def test_other_non_finite_values_disagree():
    for out, ref in (([0.0, 1.0], [NAN, 1.0]), ([NAN, 1.0], [0.0, 1.0]),
                     ([-INF], [INF]), ([INF], [1.0]), ([NAN], [INF])):
        assert sweep.rel_err(np.array(out), np.array(ref)) == INF, (out, ref)


def test_finite_and_integer_outputs():
    assert sweep.rel_err(np.array([1.0, 2.0]), np.array([1.0, 2.5])) == 0.2
    assert sweep.rel_err(np.zeros(0), np.zeros(0)) == 0.0
    assert sweep.rel_err(np.array([1, 2, 3]), np.array([1, 0, 3])) == 1 / 3
