"""The sixteenth round of new-user architectures (benchmarks/new_user_models_sixteenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors: a
Swin-V2 block (cosine attention, clamped logit scale, log-spaced continuous position bias,
shifted windows), CoAtNet (MBConv + relative-bias attention), U-Net++ (nested skips, deep
supervision, rot90 test-time augmentation), GIN (index_add aggregation, scatter_add
readout), a YOLOX decoupled head with grid decoding, FNet (Re(fft2) mixing), a
Mixture-of-Depths router (topk, sort, take_along_dim, scatter_add), ECAPA-TDNN (a torch.stft
log-mel front end, SE-Res2Net 1-D, attentive statistics pooling by var_mean), SASRec (causal,
right padding, the last item by count_nonzero, top-k kept by scatter), neighborhood attention
by unfold, a Point Transformer layer (cdist + topk neighbours, vector attention) and DeepFM (a
weighted EmbeddingBag); each built at opt_level 3 and checked against eager PyTorch with
every kernel native."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from new_user_models_sixteenth import sixteenth_models  # noqa: E402


def _model(name, **small):
    torch.manual_seed(1)
    return sixteenth_models()[name][0](**small).eval()


def test_swinv2_cosine_attention_log_cpb_shifted():
    m = _model("swinv2_cpb", img=16, patch=2, d=16, heads=2, win=4, depth=2, classes=3)
    _run(m, _randn(1, 3, 16, 16), rtol=1e-4, atol=1e-4)


def test_coatnet_mbconv_relative_attention():
    m = _model("coatnet_mini", img=32, widths=(8, 8, 16, 16, 16), heads=2, classes=3,
               s1_blocks=1)
    _run(m, _randn(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_unetpp_nested_skips_deep_supervision():
    m = _model("unetpp_mini", widths=(4, 8), classes=2)
    _run(m, _randn(1, 3, 16, 16))


def test_gin_index_add_scatter_add_readout():
    m = _model("gin_scatter", features=4, hidden=8, layers=2, classes=3, graphs=3)
    edges = torch.tensor([[0, 1, 1, 2, 3, 4, 6, 7, 8, 8, 0], [1, 0, 2, 1, 4, 5, 7, 6, 6, 6, 1]])
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    _run(m, _randn(9, 4), edges, batch)


def test_yolox_decoupled_head_grid_decode():
    m = _model("yolox_head", img=32, classes=3, width=4)
    _run(m, _randn(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_fnet_fft2_real_mixing():
    m = _model("fnet_mini", vocab=30, d=16, layers=2, n=12, classes=3)
    _run(m, _ints(30, 2, 12), rtol=1e-4, atol=1e-4)


def test_mixture_of_depths_router_scatter_back():
    m = _model("mod_router", vocab=30, d=16, heads=2, layers=2, n=16, capacity=0.25)
    _run(m, _ints(30, 2, 16), rtol=1e-4, atol=1e-4)


def test_ecapa_tdnn_attentive_stats_pooling():
    m = _model("ecapa_tdnn", mels=8, c=8, scale=2, attn=4, emb=4, dilations=(2,), n_fft=32,
               hop=16, rate=8000)
    _run(m, _randn(2, 400) * 0.1, rtol=1e-4, atol=1e-4)


def test_sasrec_padding_causal_topk_scatter():
    m = _model("sasrec_topk", items=40, d=16, heads=2, layers=1, n=10, k=4)
    seq = _ints(40, 2, 10) + 1
    seq[0, 6:] = 0                                                  # right padding
    _run(m, seq, rtol=1e-4, atol=1e-4)


def test_neighborhood_attention_unfold():
    m = _model("nat_mini", img=16, d=12, heads=2, k=3, depth=1, classes=3)
    _run(m, _randn(1, 3, 16, 16), rtol=1e-4, atol=1e-4)


def test_point_transformer_knn_vector_attention():
    m = _model("point_transformer", d=8, k=4, layers=1, classes=3)
    _run(m, _randn(2, 24, 3), rtol=1e-4, atol=1e-4)


def test_deepfm_weighted_embedding_bag():
    m = _model("deepfm_bag", field_sizes=(5, 7, 3), bag_size=11, k=4, hidden=(8,))
    fields = torch.stack([_ints(s, 6, seed=i) for i, s in enumerate((5, 7, 3))], 1)
    ids = _ints(11, 13, seed=5)
    offsets = torch.tensor([0, 2, 3, 6, 10, 11])
    weights = torch.rand(13, generator=torch.Generator().manual_seed(4))
    _run(m, fields, ids, offsets, weights)
