"""relay.frontend.from_pytorch on the losses a model's forward returns (found probing ops near
round 17's BYOL / VAE objectives): ``cross_entropy`` with class targets (``weight``,
``ignore_index``, label smoothing, every reduction; batched, unbatched and per-pixel) or
probability targets, ``nll_loss``, ``kl_div`` (zero targets, ``log_target``),
``smooth_l1_loss`` (beta 0 too), ``huber_loss``, ``poisson_nll_loss`` (log input or not, the
Stirling term) and the margin losses (soft margin, margin ranking, hinge and cosine embedding,
triplet with p = 1 and swap, multi-class margin with p = 2 and weights); built native and
compared with eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402

_W = torch.rand(5, generator=torch.Generator().manual_seed(7)) + 0.2


def _targets():
    t = _ints(5, 6, seed=3)
    t[2] = -100                                          # the default ignore_index
    t[4] = 1
    return t


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_targets(smoothing):
    def fn(x, t):
        parts = [F.cross_entropy(x, t, label_smoothing=smoothing, reduction="none"),
                 F.cross_entropy(x, t, _W, label_smoothing=smoothing, reduction="none"),
                 F.cross_entropy(x, t, _W, label_smoothing=smoothing)[None],
                 F.cross_entropy(x, t, label_smoothing=smoothing)[None],
                 F.cross_entropy(x, t.clamp(min=0), _W, ignore_index=1,
                                 label_smoothing=smoothing,
                                 reduction="sum")[None],
                 F.cross_entropy(x[0], t[0].clamp(min=0), label_smoothing=smoothing)[None]]
        return torch.cat(parts)

    _check(Fn(fn), _randn(6, 5) * 3, _targets(), exported=False, rtol=1e-5, atol=1e-6)


def test_cross_entropy_per_pixel_and_nll():
    def fn(x, t):
        return torch.cat([F.cross_entropy(x, t, _W, label_smoothing=0.1, reduction="none")
                          .flatten(),
                          F.nll_loss(F.log_softmax(x, 1), t, _W)[None]])

    t = _ints(5, 2, 3, 4, seed=4)
    t[0, 1, 2] = -100
    _check(Fn(fn), _randn(2, 5, 3, 4), t, exported=False, rtol=1e-5, atol=1e-6)


def test_cross_entropy_probability_targets():
    def fn(x, p):
        p = p.softmax(1)
        return torch.cat([F.cross_entropy(x, p, reduction="none"),
                          F.cross_entropy(x, p, _W, label_smoothing=0.3)[None],
                          F.cross_entropy(x, p, reduction="sum")[None]])

    _check(Fn(fn), _randn(4, 5), _randn(4, 5, seed=1), exported=False, rtol=1e-5, atol=1e-6)


def test_kl_div_zero_targets_and_log_target():
    def fn(x, y):
        logp, q = F.log_softmax(x, -1), F.softmax(y, -1)
        q = torch.where(y > 1.0, torch.zeros_like(q), q)         # zero targets: 0 log 0 = 0
        return torch.cat([F.kl_div(logp, q, reduction="none").flatten(),
                          F.kl_div(logp, q, reduction="batchmean")[None],
                          F.kl_div(logp, F.log_softmax(y, -1), reduction="sum",
                                   log_target=True)[None]])

    _check(Fn(fn), _randn(3, 6), _randn(3, 6, seed=1), exported=False, rtol=1e-5, atol=1e-6)


def test_smooth_l1_and_huber():
    def fn(x, y):
        return torch.cat([F.smooth_l1_loss(x, y, reduction="none", beta=0.5).flatten(),
                          F.smooth_l1_loss(x, y, beta=0.0)[None],
                          F.huber_loss(x, y, reduction="none", delta=0.7).flatten(),
                          F.huber_loss(x, y, reduction="sum")[None]])

    _check(Fn(fn), _randn(3, 6), _randn(3, 6, seed=1), exported=False, rtol=1e-5, atol=1e-6)


def test_float_class_index_targets_are_refused():
    traced = torch.jit.trace(Fn(lambda x, t: F.nll_loss(x, t)), (_randn(3, 4), _ints(4, 3)))
    with pytest.raises(ImportError_, match="class targets must be integers, got float32"):
        relay.frontend.from_pytorch(traced, [("x", ((3, 4), "float32")),
                                             ("t", ((3,), "float32"))])


def test_losses_through_torch_export():
    def fn(x, t):
        return torch.cat([F.cross_entropy(x, t, label_smoothing=0.1)[None],
                          F.kl_div(x.log_softmax(-1), x.flip(0).softmax(-1),
                                   reduction="batchmean")[None],
                          F.smooth_l1_loss(x, x.flip(1)).reshape(1)])

    _check(Fn(fn), _randn(4, 5), _ints(5, 4), rtol=1e-5, atol=1e-6)


def test_margin_losses():
    y = torch.tensor([1.0, -1.0, 1.0, -1.0])

    def fn(a, b):
        return torch.cat([
            F.soft_margin_loss(a, torch.sign(b), reduction="none").flatten(),
            F.margin_ranking_loss(a, b, torch.sign(a - b), margin=0.3, reduction="none")
            .flatten(),
            F.hinge_embedding_loss(a, torch.sign(b), margin=0.5, reduction="none").flatten(),
            F.cosine_embedding_loss(a, b, y, margin=0.2, reduction="none"),
            F.cosine_embedding_loss(a, b, y)[None],
            F.triplet_margin_loss(a, b, a.flip(0), reduction="none"),
            F.triplet_margin_loss(a, b, a.flip(0), p=1.0, swap=True, margin=2.0)[None]])

    _check(Fn(fn), _randn(4, 6), _randn(4, 6, seed=1), exported=False, rtol=1e-5, atol=1e-6)


def test_poisson_nll_log_and_full():
    def fn(x, t):
        t = t.abs() * 3
        return torch.cat([F.poisson_nll_loss(x, t, reduction="none").flatten(),
                          F.poisson_nll_loss(x.abs(), t, log_input=False, full=True,
                                             reduction="none").flatten(),
                          F.poisson_nll_loss(x, t, full=True)[None]])

    _check(Fn(fn), _randn(3, 5), _randn(3, 5, seed=1), exported=False, rtol=1e-5, atol=1e-6)


def test_multi_margin_p_weight_unbatched():
    t = _ints(5, 4, seed=6)

    def fn(x):
        return torch.cat([F.multi_margin_loss(x, t, reduction="none"),
                          F.multi_margin_loss(x, t, p=2, margin=0.5, weight=_W)[None],
                          F.multi_margin_loss(x[0], t[:1], reduction="sum")[None]])

    _check(Fn(fn), _randn(4, 5), exported=False, rtol=1e-5, atol=1e-6)
