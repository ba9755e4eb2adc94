"""relay.frontend.from_pytorch on numeric helpers found missing while probing ops near round
17's models: ``aminmax`` (global, along a dim, keepdim), ``trapezoid`` / ``cumulative_trapezoid``
(a spacing, 1-D sample points, sample points of y's shape), ``cov`` (a correction, 1-D input)
/ ``corrcoef``, ``renorm`` (p = 1 and 2, slices above and below the cap), ``cartesian_prod``
and ``block_diag`` (0-, 1- and 2-D blocks, an integer block promoted), ``vander``; built native and
compared with eager, plus the weighted-cov error."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def test_aminmax_forms():
    def fn(x):
        lo, hi = torch.aminmax(x, dim=1)
        glo, ghi = torch.aminmax(x)
        klo, khi = torch.aminmax(x, dim=-1, keepdim=True)
        return torch.cat([lo, hi, glo[None], ghi[None], klo[:, 0], khi[:, 0]])

    _check(Fn(fn), _randn(3, 5), exported=False)


def test_trapezoid_spacing_and_points():
    pts = torch.tensor([0.0, 0.3, 1.0, 1.2, 2.5])

    def fn(y):
        x2 = y.abs().cumsum(0)
        return torch.cat([torch.trapezoid(y, dim=1), torch.trapezoid(y, dx=0.25, dim=0),
                          torch.trapezoid(y, pts, dim=1), torch.trapezoid(y, x2, dim=0),
                          torch.cumulative_trapezoid(y, pts, dim=1).flatten(),
                          torch.cumulative_trapezoid(y, dx=2.0, dim=0).flatten()])

    _check(Fn(fn), _randn(4, 5), exported=False)


def test_cov_corrcoef():
    def fn(x):
        return torch.cat([torch.cov(x).flatten(), torch.cov(x, correction=0).flatten(),
                          torch.cov(x[0])[None], torch.corrcoef(x).flatten()])

    _check(Fn(fn), _randn(3, 7), exported=False)


def test_renorm_caps_slices():
    def fn(x):
        return torch.cat([torch.renorm(x, 2, 0, 2.0).flatten(),
                          torch.renorm(x, 1, 1, 1.5).flatten()])

    _check(Fn(fn), _randn(4, 3) * torch.tensor([[0.1], [2.0], [0.5], [3.0]]), exported=False)


def test_weighted_cov_is_refused():
    w = torch.tensor([1, 2, 1, 3])
    traced = torch.jit.trace(Fn(lambda x: torch.cov(x, fweights=w)), (_randn(2, 4),))
    with pytest.raises(ImportError_, match="fweights / aweights are not supported"):
        relay.frontend.from_pytorch(traced, [("x", ((2, 4), "float32"))])


def test_cartesian_prod_and_block_diag():
    def fn(x):
        pairs = torch.cartesian_prod(x[0, :3], x[1, :2], x[2, :2]).flatten()
        blocks = torch.block_diag(x[:2, :3], x[2], x[3, 0], x[:1, :1]).flatten()
        return torch.cat([pairs, blocks, torch.cartesian_prod(x[0])])

    _check(Fn(fn), _randn(4, 5), exported=False)


def test_block_diag_promotes_integer_blocks():
    _check(Fn(lambda x: torch.block_diag(x, torch.arange(3).reshape(1, 3))), _randn(2, 2),
           exported=False)


def test_vander_orders_and_integers():
    def fn(x):
        return torch.cat([torch.vander(x[0]).flatten(), torch.vander(x[1], 3, True).flatten(),
                          torch.vander(x[2, :2], 1).flatten()])

    _check(Fn(fn), _randn(3, 4), exported=False)
    _check(Fn(lambda i: torch.vander(i, 5)), torch.arange(-2, 3), exported=False)
