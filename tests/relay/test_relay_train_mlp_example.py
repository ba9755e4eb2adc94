"""examples/train_mlp_gradient.py: gradients from relay.transform.gradient, built with
relay.build, train an MLP (loss goes down; gradients match torch or finite differences)."""

from __future__ import annotations

import importlib.util
import pathlib

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp_gradient.py"


def test_training_reduces_the_loss(capsys):
    spec = importlib.util.spec_from_file_location("train_mlp_gradient", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    losses = module.main(steps=8, lr=0.1)
    assert losses[-1] < 0.5 * losses[0]
    out = capsys.readouterr().out
    assert "gradients match" in out and "higher-order gradients (VM) match" in out
