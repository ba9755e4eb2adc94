"""The twenty-sixth round of new-user architectures (benchmarks/new_user_models_twentysixth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentysixth")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_slowfast_time_strided_laterals():
    m = _model("slowfast_mini", width=8, alpha=4, beta=4, classes=3)
    _run(m, _rand(2, 3, 8, 16, 16), rtol=1e-4, atol=1e-5)


def test_bisenet_attention_refinement_fusion():
    m = _model("bisenet_arm", width=4, classes=3)
    _run(m, _rand(2, 3, 64, 64), rtol=1e-4, atol=1e-5)


def test_chebnet_chebyshev_recurrence_dense_laplacian():
    m = _model("chebnet_graph", fin=5, hidden=8, k=3, layers=2, classes=3)
    adj = (torch.rand(2, 7, 7, generator=torch.Generator().manual_seed(3)) < 0.4).float()
    adj = torch.triu(adj, 1)
    adj = adj + adj.transpose(1, 2)
    keep = torch.tensor([[1.0] * 7, [1.0] * 4 + [0.0] * 3])
    adj = adj * keep.unsqueeze(1) * keep.unsqueeze(2)
    _run(m, _randn(2, 7, 5) * keep.unsqueeze(-1), adj, keep, rtol=1e-4, atol=1e-5)


def test_neumf_gmf_and_mlp_towers():
    m = _model("neumf_ncf", users=20, items=30, gmf=8, mlp=(16, 8, 4))
    _run(m, _ints(20, 9), _ints(30, 9, seed=1), rtol=1e-4, atol=1e-5)


def test_fcos_scaled_exp_centerness_boxes():
    m = _model("fcos_head", width=8, classes=3, img=64, towers=1)
    _run(m, _rand(1, 3, 64, 64), rtol=1e-4, atol=1e-5)


def test_yolov4_csp_mish_spp():
    m = _model("yolov4_csp_mish", width=4, classes=2, anchors=1)
    _run(m, _rand(1, 3, 64, 64), rtol=1e-4, atol=1e-5)


def test_attention_unet_gates():
    m = _model("attention_unet", width=4, classes=2, depth=2)
    _run(m, _rand(2, 3, 16, 16), rtol=1e-4, atol=1e-5)


def test_pvtv2_spatial_reduction_attention():
    m = _model("pvtv2_sra", dims=(8, 16), heads=(1, 2), srs=(2, 1), depth=1, classes=3)
    _run(m, _rand(2, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_rotate_phase_rotation_vector_norm():
    m = _model("rotate_kg", entities=40, relations=5, dim=8)
    _run(m, _ints(40, 3), _ints(5, 3, seed=1), _ints(40, 3, 6, seed=2), rtol=1e-4, atol=1e-5)


def test_grud_decayed_imputation():
    m = _model("grud_irregular", feats=4, hidden=8, classes=2)
    mask = (_rand(2, 5, 4, seed=1) > 0.5).float()
    _run(m, _randn(2, 5, 4) * mask, mask, _rand(2, 5, 4, seed=2) * 3, rtol=1e-4, atol=1e-5)


def test_pixelcnnpp_discretized_logistic_mixture():
    m = _model("pixelcnnpp_dlml", width=8, mixtures=2, blocks=1)
    x = _ints(256, 2, 3, 8, 8).float() / 127.5 - 1
    x[0, :, 0, 0], x[1, :, 1, 1] = -1.0, 1.0                    # both edge bins
    _run(m, x, rtol=1e-4, atol=1e-5)


def test_mesh_cross_product_normals_index_add():
    m = _model("mesh_normals", grid=5, hidden=8, classes=3)
    verts = _rand(2, 25, 3)
    _run(m, verts, rtol=1e-4, atol=1e-5)
