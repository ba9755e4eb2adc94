"""The quantized-options sweep's summary: the rows near ONNX Runtime's time, worst first, from
rows as ``--jsonl`` writes them (benchmarks/sweep_quantized_options.py)."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import sweep_quantized_options as sweep  # noqa: E402

ROWS = [
    {"model": "audio", "option": "qdq", "relay_ms": 0.042, "relax_ms": 0.045, "ort_ms": 0.047},
    {"model": "mlp", "option": "qop", "relay_ms": 0.010, "relax_ms": 0.011, "ort_ms": 0.050},
    {"model": "gpt", "option": "dyn", "relay_ms": 0.50, "relax_ms": 0.40, "ort_ms": 0.45},
    {"model": "lstm", "option": "qdq", "relay_error": "ValueError: no", "ort_ms": 0.2},
    {"model": "mlp", "option": "qdq"},  # (untimed: no ratios)
]


def test_near_ort_keeps_rows_at_the_ratio_or_above_worst_first():
    near = sweep.near_ort(ROWS, 0.85)
    assert [(m, o, k) for _, m, o, k, _, _ in near] == [
        ("gpt", "dyn", "relay"), ("audio", "qdq", "relax"), ("audio", "qdq", "relay"),
        ("gpt", "dyn", "relax")]
    ratios = [r for r, *_ in near]
    assert ratios == sorted(ratios, reverse=True)
    assert ratios[0] == pytest.approx(0.50 / 0.45)
    assert near[2][4:] == (0.042, 0.047)


def test_near_ort_threshold_and_empty():
    assert sweep.near_ort(ROWS, 1.05) == [(pytest.approx(0.50 / 0.45), "gpt", "dyn", "relay",
                                          0.50, 0.45)]
    assert sweep.near_ort(ROWS, 2.0) == []
    assert sweep.near_ort([], 0.0) == []


def test_summary_reads_split_jsonl_files(tmp_path, capsys):
    paths = []
    for i, part in enumerate((ROWS[:2], ROWS[2:])):
        p = tmp_path / f"part{i}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in part) + "\n")
        paths.append(str(p))
    assert sweep.read_rows(",".join(paths)) == ROWS
    assert sweep.main(["--summary", ",".join(paths), "--near", "0.9"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 importer rows at 0.90x ORT or above, worst first"
    assert out[2].split() == ["1.11", "gpt", "dyn", "relay", "0.500", "0.450"]
    assert out[3].split() == ["0.96", "audio", "qdq", "relax", "0.045", "0.047"]
    assert len(out) == 4
