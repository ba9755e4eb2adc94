"""The Relax torch.export importer on ``torch.logical_or`` / ``logical_xor`` (of bools, floats
and integers: nonzero is True; a NaN test ``|`` a sign test, as torch's own decompositions
write) and on ``adaptive_max_pool3d`` (divisible sizes as one max_pool3d, others cell by cell
over torch's windows); OpNotImplemented before. Built and compared with eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the Relax torch.export importer needs `torch`")
import torch.nn.functional as F  # noqa: E402

from .exported_program_run import run_exported  # noqa: E402


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("fn", [torch.logical_or, torch.logical_xor], ids=["or", "xor"])
def test_logical_of_bools_floats_and_ints(fn):
    a, b = _randn(3, 5), _randn(3, 5, seed=1)
    a[0, :2] = 0.0
    b[0, 1:3] = 0.0
    text = run_exported(lambda x, y: fn(x > 0, y < 0), a, b)
    assert "logical_" in text
    run_exported(fn, a, b)
    run_exported(fn, torch.tensor([[0, 2, -1], [0, 0, 3]]), torch.tensor([[1, 0, 0], [0, 5, 0]]))


def test_nan_or_negative_mask():
    x = _randn(4, 6) * 3
    x[0, :4] = torch.tensor([0.0, -0.0, float("nan"), float("-inf")])
    run_exported(lambda v: torch.where(torch.logical_or(v < 0, torch.isnan(v)), 0.0, v), x)


@pytest.mark.parametrize("size", [(2, 2, 2), (3, 2, 5), (1, 1, 1)])
def test_adaptive_max_pool3d(size):
    text = run_exported(lambda v: F.adaptive_max_pool3d(v, size), _randn(2, 3, 4, 6, 10))
    if size == (2, 2, 2):
        assert "max_pool3d" in text


def test_heaviside_promotes_where_branches_and_sign_is_zero_at_nan():
    """torch decomposes ``heaviside`` into a ``where`` of a float32 and an int64 branch, which
    torch promotes; ``sign`` of NaN is 0 in torch (Relax's operator keeps NaN)."""
    x = _randn(3, 7) * 2
    x[0, :4] = torch.tensor([0.0, -0.0, float("nan"), float("inf")])
    values = torch.full((3, 7), 0.25)
    run_exported(torch.heaviside, x, values)
    text = run_exported(torch.sign, x)
    assert "isnan" in text
