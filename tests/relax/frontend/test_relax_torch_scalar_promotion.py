"""relax.frontend.torch.from_exported_program on binary ops of an integer tensor and a Python
float, which the twelfth round of new-user models found wrong: YOLOv8's anchor centres
``torch.arange(w) + 0.5`` took the tensor's int64 dtype for 0.5 (``[0, 1, ...]``). torch lifts
the tensor to float32 and divides integers as floats (``frontend_common.torch_promote``); a
bool tensor times a Python int is int64. Built and run on the Relax VM against eager, dtype
included."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def test_anchor_centres():
    def anchors(x):
        ys, xs = torch.meshgrid(torch.arange(4) + 0.5, torch.arange(3) + 0.5, indexing="ij")
        return x + torch.stack([xs, ys], -1).view(-1, 2) * torch.full((12, 1), 8.0)

    text = _run(anchors, _randn(12, 2))
    assert "float32" in text


def test_integer_tensor_with_floats():
    def mixed(x):
        i = torch.arange(x.shape[0]).view(-1, 1)
        return (x * (i - 0.25) + (2.5 - i) * (i / 4) + (i > 1.5) + i * 1.5
                + (i == 2.0) * 0.5 + (i < 3))

    _run(mixed, _randn(5, 3))


def test_integer_true_division_is_float():
    _run(lambda i: i / 4, torch.arange(10).view(2, 5))


def test_bool_times_int_is_int64():
    _run(lambda x: (x > 0) * 3 + (x < 0) - 1, _randn(4, 6))
