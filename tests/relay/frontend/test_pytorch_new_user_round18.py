"""The eighteenth round of new-user architectures (benchmarks/new_user_models_eighteenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors:
AlexNet with LocalResponseNorm (avg_pool3d over channels), a PSMNet-style stereo network (a
cost volume filled by slice assignment, conv3d / ConvTranspose3d, trilinear upsampling,
soft-argmin), SuperGlue (attentional message passing, log-Sinkhorn with a dustbin), Autoformer
(series decomposition, auto-correlation by rfft * conj, top-k delays gathered), CCNet
criss-cross attention, a SAC policy (torch.distributions Normal / Categorical), DIN (Dice,
length masks), a neural cellular automaton, ST-GCN (a 5-index einsum), TensoRF (planes, lines,
a 5-D grid_sample), a SPADE generator (one_hot, spectral_norm) and an RNN-T joint; each built
at opt_level 3 and checked against eager PyTorch with every kernel native. Plus spectral_norm's
``dot`` / ``mv`` through both Relay importers (the torch.export one lacked them)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_both_importers as _check_both  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("eighteenth")
_model, _rand = _round.model, _round.rand


def test_alexnet_local_response_norm():
    m = _model("alexnet_lrn", widths=(8, 8, 8, 8, 8), hidden=16, classes=3)
    _run(m, _rand(1, 3, 67, 67), rtol=1e-4, atol=1e-5)


def test_stereo_cost_volume_slice_assignment_conv3d():
    m = _model("stereo_costvol", c=4, disp=16)
    left = _rand(1, 3, 16, 32)
    _run(m, left, torch.roll(left, -2, 3), rtol=1e-4, atol=1e-4)


def test_superglue_log_sinkhorn():
    m = _model("superglue_match", d=16, heads=2, layers=("self", "cross"), iters=3)
    _run(m, _randn(1, 8, 2), _rand(1, 8), _randn(1, 8, 16, seed=1), _randn(1, 8, 2, seed=2),
         _rand(1, 8, seed=3), _randn(1, 8, 16, seed=4), rtol=1e-4, atol=1e-4)


def test_autoformer_auto_correlation_conj_topk_gather():
    m = _model("autoformer_mini", features=3, d=8, heads=2, layers=1, length=24, horizon=6)
    _run(m, _randn(2, 24, 3), rtol=1e-4, atol=1e-4)


def test_ccnet_criss_cross_attention():
    m = _model("ccnet_cca", c=16, classes=3)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_sac_policy_distributions():
    m = _model("sac_policy", obs=5, act=2, hidden=16, options=3)
    _run(m, _randn(4, 5), _randn(4, 2, seed=1), rtol=1e-4, atol=1e-4)


def test_din_dice_length_mask():
    m = _model("din_ctr", items=40, cats=5, d=4, att=(8, 4), mlp=(8, 4), dense=3)
    lengths = torch.tensor([1, 6, 3])
    _run(m, _ints(40, 3, 6), _ints(5, 3, 6, seed=1), lengths, _ints(40, 3, seed=2),
         _ints(5, 3, seed=3), _randn(3, 3), rtol=1e-4, atol=1e-5)


def test_neural_ca_alive_masks():
    m = _model("neural_ca", channels=8, hidden=16, steps=2)
    state = _rand(1, 8, 12, 12)
    _run(m, state, _rand(2, 1, 1, 12, 12, seed=1), rtol=1e-4, atol=1e-5)


def test_stgcn_partitioned_graph_einsum():
    m = _model("stgcn_skeleton", widths=(8, 8), classes=4)
    _run(m, _randn(1, 3, 8, 18), rtol=1e-4, atol=1e-4)


def test_tensorf_planes_lines_voxel_grid_sample():
    m = _model("tensorf_field", rank=4, grid=8, vox=4, feat=4, hidden=8)
    pts = _randn(50, 3).clamp(-0.95, 0.95)
    _run(m, pts, _randn(50, 3, seed=1), rtol=1e-4, atol=1e-5)


def test_spade_one_hot_spectral_norm():
    m = _model("spade_generator", z=8, labels=4, widths=(8, 4), base=4)
    _run(m, _randn(1, 8), _ints(4, 1, 8, 8), rtol=1e-4, atol=1e-4)


def test_rnnt_joint_lattice():
    m = _model("rnnt_joint", mels=8, vocab=10, enc=8, pred=8, joint=8)
    _run(m, _randn(2, 12, 8), _ints(9, 2, 3) + 1, rtol=1e-4, atol=1e-4)


def test_spectral_norm_dot_mv_both_importers():
    """spectral_norm's eval-time weight ``w / dot(u, mv(w_mat, v))``: aten::dot and aten::mv
    (torch.export keeps both; the Relay ATen table had neither)."""
    torch.manual_seed(2)
    conv = torch.nn.utils.spectral_norm(torch.nn.Conv2d(3, 4, 3, padding=1))
    mod = _check_both(conv, _randn(1, 3, 6, 6), rtol=1e-4, atol=1e-5)
    assert "nn.conv2d(" in mod.astext()
