"""The ``minitvm`` command: its default job runs the tutorial example end to end."""

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
    assert out.rstrip().endswith("done")


def test_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "minitvm"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "numpy reference" in proc.stdout and "-> OK" in proc.stdout
