"""The twenty-third round of new-user architectures (benchmarks/new_user_models_twentythird.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentythird")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_sknet_selective_kernel_branch_softmax():
    m = _model("sknet_mini", c=8, classes=3)
    _run(m, _rand(2, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_sru_elementwise_recurrence_highway():
    m = _model("sru_lm", vocab=30, d=8)
    _run(m, _ints(30, 2, 6), rtol=1e-4, atol=1e-5)


def test_autoint_field_self_attention():
    m = _model("autoint_ctr", fields=3, vocab=10, dense=2, d=4, heads=2, da=4, layers=2)
    _run(m, _ints(10, 5, 3), _randn(5, 2), rtol=1e-4, atol=1e-5)


def test_han_masked_word_and_sentence_attention():
    m = _model("han_doc", vocab=30, d=8, h=4, classes=3)
    doc = _ints(30, 2, 3, 5, low=1)
    doc[0, 1, 3:] = 0
    doc[1, 2] = 0                                                 # an all-padding sentence
    _run(m, doc, rtol=1e-4, atol=1e-5)


def test_quartznet_masked_separable_convs():
    m = _model("quartznet_mini", feats=8, c=8, vocab=5, blocks=(5, 7))
    _run(m, _randn(2, 8, 20), torch.tensor([20, 13]), rtol=1e-4, atol=1e-5)


def test_deepspeech2_conv_front_bigru_sum():
    m = _model("deepspeech2_mini", freq=16, c=4, hidden=8, layers=2, vocab=5)
    _run(m, _randn(2, 1, 16, 12), rtol=1e-4, atol=1e-5)


def test_pwcnet_cost_volume_grid_sample_warp():
    m = _model("pwcnet_mini", c=4, d=1, levels=2)
    im1 = _rand(1, 3, 16, 16)
    _run(m, im1, torch.roll(im1, (1, 1), (2, 3)), rtol=1e-4, atol=1e-5)


def test_appnp_index_add_propagation():
    m = _model("appnp_graph", fin=6, hidden=8, classes=3, k=3)
    src, dst = _ints(12, 30), _ints(12, 30, seed=1)
    _run(m, _randn(12, 6), torch.stack([torch.cat([src, dst]), torch.cat([dst, src])]),
         rtol=1e-4, atol=1e-5)


def test_protonet_one_hot_prototypes_distances():
    m = _model("protonet_fewshot", c=8, ways=3)
    _run(m, _rand(6, 3, 16, 16), torch.arange(3).repeat_interleave(2), _rand(4, 3, 16, 16, seed=1),
         rtol=1e-4, atol=1e-5)


def test_backprop_kf_inv_slogdet_filter():
    m = _model("backprop_kf", c=4)
    _run(m, _rand(2, 3, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_siamfc_grouped_conv_correlation():
    m = _model("siamfc_track", c=8)
    _run(m, _rand(2, 3, 79, 79), _rand(2, 3, 111, 111, seed=1), rtol=1e-4, atol=1e-5)


def test_nam_per_feature_einsum_networks():
    m = _model("nam_additive", features=4, hidden=8, units=(8, 4))
    _run(m, _randn(6, 4), rtol=1e-4, atol=1e-5)
