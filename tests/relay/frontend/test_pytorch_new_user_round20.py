"""The twentieth round of new-user architectures (benchmarks/new_user_models_twentieth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentieth")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_vnet3d_conv_transpose3d_instance_norm():
    m = _model("vnet3d_mini", cin=1, c=4, classes=2)
    _run(m, _rand(1, 1, 4, 8, 8), rtol=1e-4, atol=1e-5)


def test_solov2_matrix_nms():
    m = _model("solov2_matrix_nms", c=8, grid=5, classes=3, top=6)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_bidaf_attention_flow():
    m = _model("bidaf_qa", vocab=50, chars=20, wdim=8, cdim=4, cout=8, d=8)
    _run(m, _ints(50, 1, 6), _ints(20, 1, 6, 4, seed=1), _ints(50, 1, 3, seed=2),
         _ints(20, 1, 3, 4, seed=3), rtol=1e-4, atol=1e-5)


def test_pointer_generator_scatter_add_copy():
    m = _model("pointer_generator", vocab=40, oov=5, emb=8, hidden=8)
    _run(m, _ints(45, 2, 8, low=2), _ints(45, 2, 2, seed=1, low=2), rtol=1e-4, atol=1e-5)


def test_conve_scores_every_entity():
    m = _model("conve_kg", entities=60, relations=5, d=20, rows=4)
    _run(m, _ints(60, 4), _ints(5, 4, seed=1), rtol=1e-4, atol=1e-5)


def test_scinet_even_odd_tree():
    m = _model("scinet_mini", channels=3, window=16, horizon=4, levels=2)
    _run(m, _randn(2, 16, 3), rtol=1e-4, atol=1e-5)


def test_decision_transformer_interleaved_tokens():
    m = _model("decision_transformer", state=5, act=3, d=16, heads=2, layers=1, context=4,
               max_ep=50)
    _run(m, _rand(2, 4, 1), _randn(2, 4, 5, seed=1), _rand(2, 4, 3, seed=2),
         _ints(50, 2, 4, seed=3), rtol=1e-4, atol=1e-5)


def test_universal_transformer_act_halting():
    m = _model("ut_act", vocab=30, d=16, heads=2, max_steps=3, max_len=16, classes=3)
    _run(m, _ints(30, 2, 6), rtol=1e-4, atol=1e-5)


def test_xcit_cross_covariance_attention():
    m = _model("xcit_mini", d=16, heads=2, depth=1, cls_depth=1, classes=3)
    _run(m, _rand(1, 3, 32, 32), rtol=1e-4, atol=1e-5)


def test_pna_scatter_reduce_aggregators():
    m = _model("pna_graph", fin=4, d=8, layers=1, classes=3)
    _run(m, _randn(20, 4), _ints(20, 2, 50, seed=1), rtol=1e-4, atol=1e-5)


def test_graves_soft_window_mixture_nll():
    m = _model("graves_handwriting", alphabet=10, hidden=16, k=2, mixtures=3)
    strokes = torch.cat([(_rand(2, 6, 1) > 0.8).float(), _randn(2, 6, 2, seed=1) * 0.5], -1)
    _run(m, strokes, _ints(10, 2, 4, seed=2), rtol=1e-4, atol=1e-5)


def test_deepar_negative_binomial_lgamma():
    m = _model("deepar_negbin", series=5, cov=2, emb=3, hidden=8, layers=1)
    counts = torch.poisson(torch.full((2, 6), 4.0), generator=torch.Generator().manual_seed(0))
    _run(m, counts, _randn(2, 6, 2, seed=1), _ints(5, 2, seed=2), rtol=1e-4, atol=1e-5)
