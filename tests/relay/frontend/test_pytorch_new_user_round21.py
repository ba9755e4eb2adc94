"""The twenty-first round of new-user architectures (benchmarks/new_user_models_twentyfirst.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentyfirst")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_barlow_twins_off_diagonal_view():
    m = _model("barlow_twins", c=4, proj=16)
    _run(m, _rand(6, 3, 16, 16), _rand(6, 3, 16, 16, seed=1), rtol=1e-4, atol=1e-5)


def test_reid_gem_batch_hard_triplets():
    m = _model("reid_triplet", c=4, d=8)
    _run(m, _rand(6, 3, 32, 16), torch.arange(3).repeat_interleave(2), rtol=1e-4, atol=1e-5)


def test_dprnn_unfold_chunks_fold_overlap_add():
    m = _model("dprnn_sep", n=8, h=8, enc_k=8, chunk=10, blocks=1)
    _run(m, _randn(1, 1, 200), rtol=1e-4, atol=1e-5)


def test_sincnet_computed_filters():
    m = _model("sincnet_spk", filters=8, k=31, c=8, d=16, speakers=5)
    _run(m, _randn(2, 1, 800), rtol=1e-4, atol=1e-5)


def test_maf_made_masks_log_det():
    m = _model("maf_flow", d=4, hidden=16, flows=2)
    _run(m, _randn(8, 4), rtol=1e-4, atol=1e-5)


def test_dien_augru_masked_steps():
    m = _model("dien_augru", items=50, cats=5, d=4, hidden=8)
    _run(m, _ints(50, 4, 6), _ints(5, 4, 6, seed=1), _ints(50, 4, seed=2), _ints(5, 4, seed=3),
         _ints(7, 4, seed=4, low=2), rtol=1e-4, atol=1e-5)


def test_lista_soft_thresholds():
    m = _model("lista_sparse", m=8, n=16, layers=3)
    _run(m, _randn(4, 8), rtol=1e-4, atol=1e-5)


def test_diffpool_assignments_matrix_norm():
    m = _model("diffpool_graph", fin=4, d=8, clusters=(4, 2), classes=3)
    a = (_rand(2, 10, 10, seed=1) > 0.6).float().triu(1)
    _run(m, _randn(2, 10, 4), a + a.transpose(1, 2), rtol=1e-4, atol=1e-5)


def test_neuralsort_ndcg_exp2_log2():
    m = _model("neuralsort_ltr", fin=6, hidden=8)
    _run(m, _randn(3, 7, 6), _ints(5, 3, 7, seed=1).float(), rtol=1e-4, atol=1e-5)


def test_gumbel_dvae_straight_through_kl_div():
    m = _model("gumbel_dvae", c=8, codes=16, d=8)
    _run(m, _rand(1, 3, 16, 16), _rand(1, 16, 4, 4, seed=1), rtol=1e-4, atol=1e-5)


def test_pcen_iir_smoother_kws():
    m = _model("pcen_kws", mels=8, c=4, classes=3)
    _run(m, _randn(2, 8, 12) ** 2 * 5, rtol=1e-4, atol=1e-5)


def test_dimenet_triplet_angles_acos():
    m = _model("dimenet_mini", elements=4, d=8, radial=3, spherical=2, blocks=1)
    inputs = _round.models()["dimenet_mini"][1]()
    inputs["z"] = inputs["z"] % 4
    _run(m, *inputs.values(), rtol=1e-4, atol=1e-5)
