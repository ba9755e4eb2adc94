"""The twenty-seventh round of new-user architectures (benchmarks/new_user_models_twentyseventh.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentyseventh")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_wide_deep_hashed_crosses_embedding_bag():
    m = _model("wide_deep_ctr", cards=(30, 20, 5), dim=4, buckets=64, hidden=(16,), numeric=2,
               age_bins=10)
    cats = torch.stack([_ints(30, 6), _ints(20, 6, seed=1), _ints(5, 6, seed=2)], 1)
    _run(m, cats, _ints(110, 6, seed=3), _randn(6, 2), rtol=1e-4, atol=1e-5)


def test_hgcn_poincare_maps_acosh_distance():
    m = _model("hgcn_poincare", fin=4, hidden=8, layers=2, classes=3)
    adj = (_rand(2, 6, 6, seed=1) > 0.6).float()
    adj = ((adj + adj.transpose(1, 2)) > 0).float() + torch.eye(6)
    _run(m, _randn(2, 6, 4) * 0.3, adj, rtol=1e-4, atol=1e-5)


def test_evidential_dirichlet_lgamma_digamma():
    m = _model("evidential_dirichlet", width=4, classes=5)
    target = torch.nn.functional.one_hot(_ints(5, 3), 5).float()
    _run(m, _rand(3, 1, 28, 28), target, rtol=1e-4, atol=1e-5)


def test_rcan_channel_attention_pixel_shuffle():
    m = _model("rcan_sr", width=8, groups=1, blocks=2, scale=2)
    _run(m, _rand(1, 3, 12, 12), rtol=1e-4, atol=1e-5)


def test_u2net_ceil_mode_residual_u_blocks():
    m = _model("u2net_rsu", width=4, mid=4, depths=(3, 2))
    _run(m, _rand(1, 3, 19, 19), rtol=1e-4, atol=1e-5)


def test_biaffine_parser_einsum_bilinear_lengths():
    m = _model("biaffine_parser", words=50, tags=6, dim=8, hidden=8, arc=8, lab=4, labels=3)
    _run(m, _ints(50, 2, 7), _ints(6, 2, 7, seed=1), torch.tensor([7, 4]), rtol=1e-4,
         atol=1e-5)


def test_elman_rnn_tied_lm():
    m = _model("elman_rnn_lm", vocab=20, dim=8, layers=2)
    _run(m, _ints(20, 2, 9), rtol=1e-4, atol=1e-5)


def test_lppool_keyword_spotter():
    m = _model("lppool_kws", width=4, blocks=2, keywords=3)
    _run(m, _rand(2, 1, 8, 12), rtol=1e-4, atol=1e-5)


def test_transe_pairwise_l1_margin():
    m = _model("transe_kg", entities=40, relations=5, dim=8)
    _run(m, _ints(40, 3), _ints(5, 3, seed=1), _ints(40, 3, 5, seed=2), rtol=1e-4, atol=1e-5)


def test_mingru_log_space_scan():
    m = _model("mingru_lm", vocab=16, dim=8, layers=2)
    _run(m, _ints(16, 2, 10), rtol=1e-4, atol=1e-5)


def test_dreamer_symlog_straight_through_twohot():
    m = _model("dreamer_symlog", obs=6, hidden=16, groups=2, classes=4, bins=9)
    _run(m, _randn(3, 6) * 5, rtol=1e-4, atol=1e-5)


def test_saits_nan_inputs_diagonal_mask():
    m = _model("saits_nan_impute", feats=3, dim=8, heads=2, steps=8)
    x = _randn(2, 8, 3)
    x[0, 1, 2] = x[1, 5, 0] = x[1, 6, 1] = float("nan")
    _run(m, x, rtol=1e-4, atol=1e-5)
