"""The fourteenth round of new-user architectures (benchmarks/new_user_models_fourteenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors:
PointNet++ (farthest point sampling, ball query by sort, 3-NN propagation), PointPillars
(hypot / atan2 point features, a scatter into a bird's-eye canvas), TimeSformer (Conv3d
tubelets, divided attention), X3D (depthwise Conv3d, 3-D squeeze-excitation), Graphormer
(min-plus shortest paths, baddbmm attention bias), an SVTR recognizer with CTC greedy decoding,
a LoRA Llama with a top-k / top-p sampler (sort, cumsum, scatter, searchsorted), a MaskGIT step
(kthvalue), an Evoformer pair stack (triangle einsums), a Temporal Fusion Transformer,
StyleGAN2 (lerp truncation, demodulation) and DBNet (pixel_unshuffle, binarization); each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from new_user_models_fourteenth import fourteenth_models  # noqa: E402


def _model(name, **small):
    torch.manual_seed(1)
    return fourteenth_models()[name][0](**small).eval()


def test_pointnet2_sampling_grouping_propagation():
    m = _model("pointnet2_ssg", classes=3, m1=8, m2=4, k=4)
    _run(m, torch.rand(1, 32, 3, generator=torch.Generator().manual_seed(3)))


def test_pointpillars_polar_features_and_bev_scatter():
    m = _model("pointpillars_bev", grid=8, c=8, anchors=1, classes=2)
    g = torch.Generator().manual_seed(4)
    cells = torch.randperm(64, generator=g)[:6][None]
    coords = torch.stack([cells // 8, cells % 8], -1)                    # (1, 6, 2)
    pts = torch.randn(1, 6, 4, 4, generator=g)
    pts[0, 2, 3:] = 0.0                                                   # a padded point
    _run(m, pts, coords, rtol=1e-4, atol=1e-4)


def test_timesformer_divided_attention():
    m = _model("timesformer_mini", frames=4, img=16, tube=2, patch=8, d=16, heads=2,
               layers=1, classes=3)
    _run(m, _randn(1, 3, 4, 16, 16))


def test_x3d_depthwise_conv3d():
    m = _model("x3d_mini", c=8, classes=3)
    _run(m, _randn(1, 3, 4, 16, 16))


def test_graphormer_shortest_path_bias():
    m = _model("graphormer_mini", atoms=8, bonds=3, d=16, heads=2, layers=1, n=6, max_dist=3)
    adj = torch.zeros(1, 6, 6, dtype=torch.long)
    for i, j in ((0, 1), (1, 2), (2, 3), (3, 4)):                         # node 5 isolated
        adj[0, i, j] = adj[0, j, i] = 1
    _run(m, _ints(8, 1, 6), adj, adj * 2)


def test_svtr_ctc_greedy_decode():
    m = _model("svtr_ctc", charset=6, d=16, heads=2, h=8, w=32, window=2)
    _run(m, _randn(2, 3, 8, 32))


def test_lora_top_p_sampler():
    m = _model("lora_topp_sampler", vocab=40, d=16, heads=2, kv_heads=1, layers=1, top_k=10,
               top_p=0.8, n=8)
    _run(m, _ints(40, 2, 6), torch.tensor([[0.3], [0.9]]))


def test_maskgit_kthvalue_remask():
    m = _model("maskgit_step", codes=16, d=16, heads=2, layers=1, side=4)
    codes = _ints(16, 1, 16)
    codes[0, ::2] = 16                                                    # the mask id
    _run(m, codes)


def test_evoformer_triangle_updates():
    m = _model("evoformer_mini", c_m=8, c_z=8, c_op=4, heads=2, bins=4)
    _run(m, _ints(21, 1, 3, 6))


def test_temporal_fusion_transformer():
    m = _model("tft_mini", static=2, past=2, future=2, d=8, heads=2, horizon=3)
    _run(m, _randn(2, 2), _randn(2, 5, 2, seed=1), _randn(2, 3, 2, seed=2))


def test_stylegan2_modulated_convs():
    m = _model("stylegan2_mini", z_dim=16, w_dim=16, c=8, mapping=2)
    _run(m, _randn(2, 16))


def test_dbnet_binarization():
    m = _model("dbnet_mini", c=8)
    _run(m, _randn(1, 3, 32, 32))
