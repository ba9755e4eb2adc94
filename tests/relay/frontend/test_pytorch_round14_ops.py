"""relay.frontend.from_pytorch and from_exported_program on the ops the fourteenth round of
new-user models found missing: ``atan2`` and ``hypot`` (PointPillars' polar point features),
``lerp`` (StyleGAN's truncation trick, torch's two-sided formula) and ``kthvalue`` (MaskGIT's
re-masking threshold), and the import of a sorted prefix (PointNet++'s ball query,
``sort(...)[..., :k]``) as a ``topk``; each built native and compared with eager, dtype
included."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

# every quadrant, both axes and the origin
_GRID = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
_Y, _X = (g.reshape(-1) for g in torch.meshgrid(_GRID, _GRID, indexing="ij"))


def test_atan2_every_quadrant_and_axis():
    mod = _check(Fn(torch.atan2), _Y, _X)
    assert "atan2" in mod.astext()


def test_atan2_of_integers_is_float():
    _check(Fn(torch.atan2), _Y.long() * 3 - 1, _X.long() * 2)


def test_atan2_broadcasts_and_takes_a_scalar_side():
    _check(Fn(lambda y, x: torch.atan2(y, x[:, :1]) + torch.atan2(y, torch.tensor(-1.0))),
           _randn(3, 4), _randn(3, 4, seed=1))


def test_hypot():
    _check(Fn(torch.hypot), _Y * 3.0, _X - 1.0)


def test_lerp_scalar_weights_on_both_sides_of_one_half():
    weights = (0.0, 0.3, 0.5, 0.7, 1.0, -0.25, 1.5)
    _check(Fn(lambda a, b: torch.stack([torch.lerp(a, b, w) for w in weights])),
           _randn(2, 6), _randn(2, 6, seed=1))


def test_lerp_tensor_weight_takes_both_branches():
    w = torch.linspace(-0.5, 1.5, 12).reshape(2, 6)
    _check(Fn(torch.lerp), _randn(2, 6), _randn(2, 6, seed=1), w)


def test_lerp_weight_one_gives_end_exactly():
    a = torch.tensor([1e8, -3.0, 0.1])
    b = torch.tensor([1.0, 7.0, 1e-9])
    _check(Fn(lambda a, b: torch.lerp(a, b, 1.0)), a, b, rtol=0, atol=0)


def test_kthvalue_values():
    def fn(x):
        return torch.cat([torch.kthvalue(x, 1, -1)[0], torch.kthvalue(x, 3, -1, True)[0][:, 0],
                          torch.kthvalue(x, 7, 1)[0], torch.kthvalue(x, 2, 0, True)[0][0]])

    _check(Fn(fn), _randn(4, 7))


def test_kthvalue_indices():
    x = torch.from_numpy(np.random.default_rng(3).permutation(24).astype("float32")).view(3, 8)
    _check(Fn(lambda x: torch.kthvalue(x, 5, 1)[1]), x)


def _ball_query(d, idx):
    """PointNet++'s query_ball_point: candidates beyond the radius set to n, sorted, the first
    four kept, short groups padded with their first member."""
    idx = torch.where(d > 0.5, idx.shape[-1], idx).sort(-1)[0][..., :4]
    return torch.where(idx == idx.shape[-1], idx[..., :1], idx)


def test_sorted_prefix_imports_as_topk():
    """An ascending sort (values or argsort indices) sliced to its first k is a topk of the k
    smallest: no whole-axis sort left in the module, ties in position order as before."""
    d = torch.rand(2, 3, 40, generator=torch.Generator().manual_seed(5))
    idx = torch.arange(40).expand(2, 3, 40).contiguous()
    mod = _check(Fn(_ball_query), d, idx)
    text = mod.astext()
    assert "topk(" in text and "sort(" not in text
    ties = torch.tensor([[3.0, 1.0, 3.0, 1.0, 2.0, 1.0, 0.5]])
    mod = _check(Fn(lambda x: torch.cat([x.sort(-1)[0][:, :3],
                                         x.argsort(-1)[:, :4].float()], 1)), ties)
    assert "argsort(" not in mod.astext()


def test_descending_sort_prefix_stays_a_sort():
    """A descending sort keeps its reversed tie order (and NaN first): not a topk."""
    x = torch.tensor([[3.0, 1.0, 3.0, float("nan"), 2.0, 1.0]])
    mod = _check(Fn(lambda x: x.sort(-1, descending=True)[0][:, :3]), x, exported=False)
    assert "sort(" in mod.astext()
