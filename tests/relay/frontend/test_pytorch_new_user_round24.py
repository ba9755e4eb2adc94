"""The twenty-fourth round of new-user architectures (benchmarks/new_user_models_twentyfourth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentyfourth")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_biggan_conditional_bn_sagan_attention():
    m = _model("biggan_gen", z=20, classes=4, shared=8, c=8, blocks=3)
    _run(m, _randn(2, 20), torch.tensor([1, 3]), rtol=1e-4, atol=1e-5)


def test_lambda_layer_content_and_conv3d_position_lambdas():
    m = _model("lambda_resnet", c=4, classes=3)
    _run(m, _rand(2, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_coordinate_attention_and_eca_gates():
    m = _model("coordatt_mobilenet", width=8, classes=3)
    _run(m, _rand(2, 3, 40, 48), rtol=1e-4, atol=1e-5)


def test_resmlp_cross_patch_linear_affine():
    m = _model("resmlp_mini", img=16, patch=4, d=16, depth=2, classes=3)
    _run(m, _rand(2, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_fastformer_masked_additive_attention():
    m = _model("fastformer_cls", vocab=30, d=16, heads=4, layers=1, maxlen=12, classes=3)
    idx = _ints(30, 2, 9, low=1)
    idx[1, 5:] = 0
    _run(m, idx, rtol=1e-4, atol=1e-5)


def test_dynamic_conv_softmax_kernels_by_unfold():
    m = _model("dynconv_lm", vocab=40, d=16, layers=2, k=(3, 5))
    _run(m, _ints(40, 2, 10), rtol=1e-4, atol=1e-5)


def test_nhits_pooled_mlp_linear_interpolated_bases():
    m = _model("nhits_forecast", back=24, fore=8, pools=(4, 1), downs=(4, 1), hidden=16)
    _run(m, _randn(3, 24), rtol=1e-4, atol=1e-5)


def test_graph_unet_topk_pool_index_copy_unpool():
    m = _model("graph_unet", fin=6, hidden=8, classes=3, ratios=(0.8, 0.5))
    adj = (_rand(14, 14) > 0.7).float()
    adj = ((adj + adj.t()) > 0).float() * (1 - torch.eye(14))
    _run(m, _randn(14, 6), adj, rtol=1e-4, atol=1e-5)


def test_node_sparsemax_choice_prod_over_depth():
    m = _model("node_tabular", fin=6, trees=4, depth=3, layers=2)
    _run(m, _randn(5, 6), rtol=1e-4, atol=1e-5)


def test_rainbow_noisy_dueling_c51_argmax():
    m = _model("rainbow_dqn", actions=3, atoms=5, hidden=8)
    n = (64 * 49 + 8) * 2 + 8 + 5 + 8 + 15
    _run(m, _rand(2, 4, 84, 84), _randn(n), rtol=1e-4, atol=1e-5)


def test_anp_cross_attention_latent_normal_log_prob():
    m = _model("anp_regression", dx=2, dy=1, d=8, heads=2)
    xc, xt = _randn(2, 5, 2), _randn(2, 7, 2, seed=1)
    _run(m, xc, torch.sin(xc.sum(-1, keepdim=True)), xt, torch.sin(xt.sum(-1, keepdim=True)),
         _randn(2, 8, seed=2), rtol=1e-4, atol=1e-5)


def test_glow_actnorm_lu_invconv_affine_coupling():
    m = _model("glow_flow", c=3, levels=2, steps=2, hidden=8)
    _run(m, _rand(2, 3, 8, 8) - 0.5, rtol=1e-4, atol=1e-5)
