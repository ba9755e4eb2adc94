"""relax.frontend.torch.from_exported_program on ops whose result shape depends on the data:
``torch.unique`` (``_unique2``: sorted values, inverse indices in the input's shape, counts;
the native unique kernel for float32 / int64), ``torch.nonzero`` (``[count, ndim]``, its
count used by later ops) and ``torch.bincount`` (length from the data or minlength, weights);
built and run on the Relax VM against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from .exported_program_run import run_exported as _run  # noqa: E402


def _ints(high, *shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape))


@pytest.mark.parametrize("part", [0, 1, 2])
def test_unique_values_inverse_counts_of_int64(part):
    text = _run(lambda x: torch.unique(x, return_inverse=True, return_counts=True)[part],
                _ints(7, 20) - 3)
    assert "call_tir" in text


def test_unique_of_a_float_matrix_inverse_keeps_its_shape():
    x = _ints(5, 4, 6).float() * 0.5
    x[0, 0] = -0.0  # equal to 0.0
    _run(lambda x: torch.unique(x, return_inverse=True)[1], x)
    _run(lambda x: torch.unique(x) * 2.0, x)


def test_nonzero_and_its_count_used_later():
    x = _ints(3, 4, 5)
    x[2] = 0  # an empty row
    _run(torch.nonzero, x)
    _run(lambda x: torch.nonzero(x).sum(0) + torch.nonzero(x).shape[0], x.float())


def test_nonzero_of_bool_and_1d():
    _run(lambda x: torch.nonzero(x > 0.5), torch.linspace(0.0, 1.0, 9))


@pytest.mark.parametrize("minlength", [0, 3, 12])
def test_bincount_length_from_the_data_or_minlength(minlength):
    text = _run(lambda x: torch.bincount(x, minlength=minlength), _ints(6, 25))
    assert "scatter_elements" in text


def test_bincount_weights_keep_their_dtype():
    _run(lambda x, w: torch.bincount(x, w), _ints(5, 16, seed=2),
         torch.linspace(-1.0, 2.0, 16))
    _run(lambda x, w: torch.bincount(x, w, 7), _ints(5, 16, seed=2),
         torch.linspace(-1.0, 2.0, 16, dtype=torch.float64))
