"""The ``minitvm`` command: its default job runs the Relay example and seed 003's Relax flow."""

import subprocess
import sys

from minitvm import cli


def test_main_without_arguments(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert "== 1. the example program" in out
    assert "def @main(%x: Tensor[(1, 64, 56, 56), float32], %weight" in out
    assert "== 2. after InferType" in out
    assert "-> Tensor[(1, 64, 54, 54), float32]" in out
    assert "output: (1, 64, 54, 54) float32" in out
    assert "numpy reference: max abs difference" in out and "-> OK" in out
    assert "\ndone\n" in out
    # then seed 003's Relax flow: the exported MLP, the ReluToGelu rewrite, round trips
    relax_part = out.split("== Relax (seed 003)")[1]
    # exported, legalized, fused, rewritten: four modules printed
    assert relax_part.count("@I.ir_module") == 4
    assert 'relu: R.Tensor((n, 128), dtype="float32") = R.nn.relu(add)' in relax_part
    assert 'relu: R.Tensor((n, 128), dtype="float32") = R.nn.gelu(add)' in relax_part
    assert "def fused_matmul_add_relu(" in relax_part
    assert "TVMScript round trip (from_source(mod.script()) == mod): OK" in relax_part
    # then built once and run at two batch sizes against numpy
    assert "batch n=1: output (1, 10)" in relax_part and "batch n=64: output (64, 10)" in \
        relax_part
    assert relax_part.rstrip().endswith("OK") and "FAILED" not in relax_part


def test_python_dash_m():
    # ``python -m minitvm`` reaches the command with its arguments; a command that builds
    # nothing (``passes --all``) keeps the fresh process to its start (1.8 against 3.2 CPU s):
    # the default job itself is test_main_without_arguments's, in this process
    proc = subprocess.run([sys.executable, "-m", "minitvm", "passes", "--all"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["name", "opt", "kind", "required", "description"]
    assert any(line.split()[:3] == ["FoldConstant", "2", "function"] for line in lines), lines
