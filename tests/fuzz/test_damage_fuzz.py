"""The damage fuzzer, CI-sized: its worker-process runner records a crash, a hang and a bare
error and goes on; small samples of each family find nothing (the campaign itself:
``python -m minitvm.testing.fuzz.damage --n 2000``)."""

import os
import random
import tempfile

import pytest

from minitvm.testing.fuzz import damage_inputs, damage_ir, damage_text
from minitvm.testing.fuzz.damage import DamageReport, classify, run_cases, run_in_process


@pytest.fixture(autouse=True, scope="module")
def _no_disk_cache():
    mp = pytest.MonkeyPatch()
    mp.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    yield
    mp.undo()


def _no_findings(report: DamageReport):
    assert not report.findings, "\n".join(" | ".join(map(str, f))[:500]
                                          for f in report.findings[:5])


def test_runner_records_crash_hang_and_bare_error(monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    r = run_cases("damage_selftest_family", 0, 5, timeout=0.5, start_method="fork")
    outcomes = {k: dict(c) for k, c in r.counts.items()}
    assert outcomes == {"self/clear": {"clear": 1}, "self/crash": {"crash": 1},
                        "self/error": {"error": 1}, "self/hang": {"hang": 1},
                        "self/accepted": {"accepted": 1}}
    crash = next(f for f in r.findings if f[2] == "crash")
    assert crash[1] == "segfault" and "signal 11" in crash[3]
    error = next(f for f in r.findings if f[2] == "error")
    assert error[3].startswith("KeyError: 'missing' at ")


def test_classify_wants_the_place_named():
    assert classify(ValueError("input 'x' has rank 3"), ("'x'",)) == ("clear", "")
    assert classify(ValueError("bad rank"), ("'x'",))[0] == "unclear"
    assert classify(ValueError("t.txt:3:7: parse error"), (r"re::\d+:\d+",)) == ("clear", "")
    assert classify(IndexError("list index out of range"))[0] == "error"
    assert classify(None) == ("accepted", "")


def test_damaged_inputs_sample():
    """A few damaged calls of each executor (in this process: the campaign isolates them)."""
    cases = [c for c in damage_inputs.cases(7, 40) if "/cli_run/" not in c.klass]
    _no_findings(run_in_process(cases[:20]))  # (minitvm run: a process each, campaign only)


def test_damaged_text_sample():
    _no_findings(run_in_process(damage_text.cases(5, 40)))


def test_damaged_ir_sample():
    """Ill-typed op calls in both dialects (the sample skips the cases that build)."""
    cases = [c for c in damage_ir.cases(9, 80) if not c.name.endswith(" build")]
    _no_findings(run_in_process(cases))


def test_damaged_onnx_sample(tmp_path, monkeypatch):
    """... and leave no damaged model file behind in the temporary directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pytest.importorskip("onnx", reason="the damaged artefacts are ONNX models")
    pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle of accepted models")
    from minitvm.testing.fuzz import damage_onnx

    refused = ("drop_input", "drop_initializer", "dangling_edge", "cycle", "unknown_op",
               "duplicate_output", "bad_output", "truncated", "initializer_shape")
    cases = [c for c in damage_onnx.cases(11, 60) if c.klass.split("/")[1] in refused
             and not c.klass.endswith("/cli")]  # (refusals only: nothing is built)
    _no_findings(run_in_process(cases[:10]))
    assert not os.listdir(tmp_path)


def test_token_edits_are_deterministic_and_join_back():
    text = "def @main(%x: Tensor[(2, 3), float32]) {\n  nn.relu(%x)\n}\n"
    assert "".join(damage_text.tokens(text)) == text
    a = damage_text.edit_tokens(text, random.Random(3))
    assert a == damage_text.edit_tokens(text, random.Random(3)) and a[0] != text


def test_damaged_tflite_sample():
    """Damaged TFLite flatbuffers the importer must refuse (import only: no builds)."""
    pytest.importorskip("tflite", reason="the damaged artefacts are TFLite flatbuffers")
    from minitvm.testing.fuzz import damage_tflite

    refused = ("buffer_size", "graph_index", "op_index", "opcode_index", "truncate",
               "unknown_opcode", "identifier")
    cases = [c for c in damage_tflite.cases(13, 30) if c.klass.split("/")[1] in refused]
    assert len(cases) >= 10
    _no_findings(run_in_process(cases))


def test_damaged_torch_input_infos_sample():
    """Malformed ``input_infos`` of a traced function: refused naming the entry, before
    anything is built."""
    pytest.importorskip("torch", reason="the damaged artefacts are TorchScript programs")
    from minitvm.testing.fuzz import damage_torch

    cases = [c for c in damage_torch.cases(3, 40) if c.klass.startswith("torch/input_infos/")
             and not c.klass.endswith("/dtype")][:6]
    assert cases
    _no_findings(run_in_process(cases))
