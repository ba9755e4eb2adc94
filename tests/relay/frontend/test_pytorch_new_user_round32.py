"""The thirty-second round of new-user architectures (benchmarks/new_user_models_thirtysecond.py)
through relay.frontend.from_pytorch and from_exported_program, built native at opt_level 3 and
checked against eager PyTorch: the ops the round found missing from both importers
(``index_reduce``, ``ldexp``, ``take``, ``fliplr`` / ``flipud``, ``msort``,
``special.i0e``) and the Point
Transformer V3-style serializer that uses the first two."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, NewUserRound  # noqa: E402
from frontend_models import check_both_importers as _both  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("thirtysecond")


def _index(high, n, seed=0):
    return torch.randint(0, high, (n,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
def test_index_reduce_along_rows(include_self):
    """Every reduction; repeated indices and a row no index reaches (kept as ``self``)."""
    idx = _index(5, 7, seed=1)

    def every(x, s):
        return torch.stack([x.index_reduce(0, idx, s, r, include_self=include_self)
                            for r in ("prod", "mean", "amax", "amin")])
    _both(Fn(every), _randn(6, 3, seed=2), _randn(7, 3, seed=3))


def test_index_reduce_inner_axis_int():
    """Along axis 1 of an int64 tensor: the mean floor-divides as torch's does."""
    idx = _index(4, 6, seed=4)
    x = torch.arange(24).view(2, 4, 3) * 5 - 40
    s = torch.arange(36).view(2, 6, 3) * 3 - 50
    _both(Fn(lambda a, b: a.index_reduce(1, idx, b, "mean") + a.index_reduce(1, idx, b, "amax")),
          x, s)


def test_ldexp_and_take_negative():
    x, e = _randn(4, 6, seed=5), torch.arange(24).view(4, 6) - 12
    _both(Fn(lambda a, k: torch.ldexp(a, k)), x, e)
    _both(Fn(lambda a, k: torch.take(a, k)), x, e)          # negative: from the end


def test_fliplr_flipud_msort():
    _both(Fn(lambda a: torch.msort(a).fliplr() + a.flipud() * 2), _randn(5, 4, seed=6))


def test_special_i0e_finite_far_out():
    """Both branches (|x| <= 12 and beyond) and |x| past i0's float32 overflow at 88.7."""
    x = torch.cat([torch.linspace(-15, 15, 31), torch.tensor([-300.0, 95.0, 1e4])])
    _both(Fn(torch.special.i0e), x, rtol=2e-6, atol=0)


def test_ptv3_serialize_voxel_pool():
    m = _round.model("ptv3_serialize", d=16, heads=2, patch=8, bits=4, depth=1, classes=3,
                     octaves=2)
    g = torch.Generator().manual_seed(7)
    _both(m, torch.rand(2, 32, 3, generator=g) * 4, torch.rand(2, 32, 3, generator=g),
          rtol=1e-4, atol=1e-5)
