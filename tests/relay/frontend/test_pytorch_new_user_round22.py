"""The twenty-second round of new-user architectures (benchmarks/new_user_models_twentysecond.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentysecond")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_deepsurv_cox_logcumsumexp_risk_sets():
    m = _model("deepsurv_cox", fin=6, hidden=8)
    _run(m, _randn(12, 6), _rand(12, seed=1) * 50, (_rand(12, seed=2) > 0.4).float(),
         rtol=1e-4, atol=1e-5)


def test_exprnn_matrix_exp_modrelu():
    m = _model("exprnn_copy", fin=4, hidden=8, out=3)
    _run(m, _randn(2, 5, 4), rtol=1e-4, atol=1e-5)


def test_deep_kernel_gp_cholesky_solves():
    m = _model("dkl_gp", fin=3, hidden=8, d=2)
    xt = _randn(10, 3)
    _run(m, xt, torch.sin(xt.sum(1)), _randn(6, 3, seed=1), rtol=1e-4, atol=1e-5)


def test_adaptive_softmax_lm_log_prob():
    m = _model("adasoft_lm", vocab=60, d=8, hidden=8, cutoffs=(10, 30))
    _run(m, _ints(60, 2, 5), rtol=1e-4, atol=1e-5)


def test_esim_masked_soft_alignment():
    m = _model("esim_nli", vocab=40, d=8, h=8)
    _run(m, _ints(40, 3, 7, low=1), _ints(40, 3, 5, seed=1, low=1),
         torch.tensor([7, 4, 5]), torch.tensor([2, 5, 3]), rtol=1e-4, atol=1e-5)


def test_mmoe_esmm_tensordot_experts():
    m = _model("mmoe_esmm", fields=3, vocab=10, d=4, dense=5, experts=3, dexp=8, tower=4)
    _run(m, _ints(10, 6, 3), _randn(6, 5), rtol=1e-4, atol=1e-5)


def test_fibinet_senet_bilinear_pairs():
    m = _model("fibinet_ctr", fields=4, vocab=10, d=4, hidden=16)
    _run(m, _ints(10, 5, 4), rtol=1e-4, atol=1e-5)


def test_octave_conv_high_low_exchange():
    m = _model("octave_resnet", c=8, classes=3)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_botnet_relative_logits_rel_to_abs():
    m = _model("botnet_relpos", c=16, size=4, classes=3, blocks=1)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_yolact_topk_prototype_masks_crop():
    m = _model("yolact_masks", c=8, protos=4, classes=3, topk=5)
    _run(m, _rand(1, 3, 64, 64), rtol=1e-4, atol=1e-5)


def test_lstnet_skip_gru_highway():
    m = _model("lstnet", series=3, window=20, hid_cnn=4, hid_rnn=4, hid_skip=2, ck=3, skip=5,
               hw=4)
    _run(m, _randn(2, 20, 3), rtol=1e-4, atol=1e-5)


def test_memn2n_position_temporal_hops():
    m = _model("memn2n_qa", vocab=30, d=8, memories=4, words=5, hops=2)
    _run(m, _ints(30, 2, 4, 5), _ints(30, 2, 5, seed=1), rtol=1e-4, atol=1e-5)
