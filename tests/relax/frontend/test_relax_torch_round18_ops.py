"""relax.frontend.torch.from_exported_program on what the eighteenth round of new-user models
found missing: ``ConvTranspose3d`` (a PSMNet-style stereo network's 3-D decoder: the convolution
with ``transposed`` set on a 5-D input); built and run on the Relax VM against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from torch import nn  # noqa: E402

from .exported_program_run import run_exported_module as _run_module  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("kwargs", [
    {"stride": 2, "padding": 1, "output_padding": 1},
    {"stride": (1, 2, 2), "padding": (0, 1, 1), "bias": False},
    {"stride": 2, "padding": 1, "dilation": 2, "groups": 2},
])
def test_conv_transpose3d(kwargs):
    torch.manual_seed(4)
    text = _run_module(nn.ConvTranspose3d(4, 6, 3, **kwargs), _rand(1, 4, 3, 5, 4))
    assert "R.nn.conv3d_transpose(" in text
