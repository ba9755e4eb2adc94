"""The importer examples (examples/*_import.py) run and check themselves."""

from __future__ import annotations

import pathlib
import runpy

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize("name,needs", [("onnx_import", ["onnx", "torch"]),
                                        ("pytorch_import", ["torch"]),
                                        ("tflite_import", ["tflite"])])
def test_example(name, needs, capsys):
    for pkg in needs:
        pytest.importorskip(pkg, reason=f"examples/{name}.py needs {pkg}")
    ns = runpy.run_path(str(EXAMPLES / f"{name}.py"))
    assert ns["main"]() == 0
    assert capsys.readouterr().out.rstrip().endswith("OK")
