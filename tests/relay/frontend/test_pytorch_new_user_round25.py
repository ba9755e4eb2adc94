"""The twenty-fifth round of new-user architectures (benchmarks/new_user_models_twentyfifth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentyfifth")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_dccrn_complex_convs_lstm_polar_mask():
    m = _model("dccrn_enhance", freq=16, chans=(4, 8), hidden=8)
    _run(m, _randn(2, 16, 6), _randn(2, 16, 6, seed=1), rtol=1e-4, atol=1e-5)


def test_convcrf_unfold_gaussian_mean_field():
    m = _model("convcrf_seg", classes=3, width=8, k=3, steps=2)
    _run(m, _rand(2, 3, 12, 12), rtol=1e-4, atol=1e-5)


def test_deeponet_branch_trunk_einsum():
    m = _model("deeponet_op", sensors=10, width=16, basis=8, outs=2, freqs=4)
    _run(m, _randn(3, 10), _rand(3, 7, 2), rtol=1e-4, atol=1e-5)


def test_hopfield_pooling_masked_iterated_retrieval():
    m = _model("hopfield_mil", fin=6, d=16, heads=2, queries=2, classes=3)
    _run(m, _randn(3, 9, 6), torch.tensor([9, 4, 1]), rtol=1e-4, atol=1e-5)


def test_deepfill_gated_convs_contextual_attention():
    m = _model("deepfill_ctxattn", c=4)
    mask = torch.zeros(2, 1, 16, 16)
    mask[0, :, 3:9, 4:10], mask[1, :, 8:14, 2:7] = 1.0, 1.0
    _run(m, _rand(2, 3, 16, 16) * 2 - 1, mask, rtol=1e-4, atol=1e-5)


def test_dyrelu_frelu_meta_acon():
    m = _model("dynact_cnn", width=4, classes=3)
    _run(m, _rand(2, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_blurpool_reflect_binomial_depthwise():
    m = _model("blurpool_resnet", width=4, classes=3)
    _run(m, _rand(2, 3, 64, 64), rtol=1e-4, atol=1e-5)


def test_mstcn_masked_dilated_stages():
    m = _model("mstcn_seg", fin=6, d=8, classes=4, stages=2, layers=3)
    _run(m, _randn(2, 6, 20), torch.tensor([20, 11]), rtol=1e-4, atol=1e-5)


def test_transformer_hawkes_softplus_intensity_monte_carlo():
    m = _model("thp_hawkes", types=3, d=8, heads=2, layers=1)
    et = torch.tensor([[1, 3, 2, 2, 1, 0], [2, 1, 3, 0, 0, 0]])
    times = torch.cumsum(_rand(2, 6) + 0.1, 1) * (et > 0)
    _run(m, et, times, _rand(2, 5, 3, seed=1), rtol=1e-4, atol=1e-5)


def test_cpc_infonce_diagonal_argmax():
    m = _model("cpc_audio", d=8, ctx=8, steps=2)
    _run(m, _randn(2, 1, 1600), rtol=1e-4, atol=1e-5)


def test_crossvit_cls_cross_attention():
    m = _model("crossvit_mini", img=16, patches=(4, 8), dims=(8, 12), heads=2, depth=1,
               classes=3)
    _run(m, _rand(2, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_mixture_of_softmaxes_logsumexp():
    m = _model("mos_lm", vocab=30, d=8, hidden=12, mixtures=3)
    _run(m, _ints(30, 2, 7), rtol=1e-4, atol=1e-5)
