"""The thirteenth round of new-user architectures (benchmarks/new_user_models_thirteenth.py) through
relay.frontend.from_pytorch, built small from the benchmark's own constructors: a Mixtral MoE
dispatching tokens to capacity-limited expert slots (one_hot cumsum, scatter, gather, bmm),
Medusa draft heads (topk candidates in a fixed tree, log_softmax gathers), a VLM connector
(pixel shuffle, a Q-Former cross-attention whose kdim differs from its width), VITS's duration
predictor and cumsum length regulator, SigLIP's sigmoid loss, ColBERT's masked MaxSim, a
neural-spline flow (bin search by counting, gathers, linear tails), AWQ 4-bit weights unpacked
by shifts and masks with float16 scales and a bfloat16 table, a static-KV-cache Llama
(index_copy_ and ``v[:, :, pos] = x`` writes, positions from a left-padded mask), RT-DETR's
multi-scale deformable attention (grid_sample), Vocos's ISTFT by conv_transpose1d, and a 2-D
Gaussian splatting renderer (argsort, gathers, log-space transmittance); each built at opt_level
3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from new_user_models_thirteenth import thirteenth_models  # noqa: E402


def _model(name, **small):
    torch.manual_seed(1)
    return thirteenth_models()[name][0](**small).eval()


def test_mixtral_capacity_dispatch():
    m = _model("mixtral_moe", vocab=64, d=16, heads=2, layers=1, experts=4, tokens=8)
    _run(m, _ints(64, 1, 8))


def test_medusa_candidate_tree():
    m = _model("medusa_heads", vocab=50, d=16, heads=2, layers=1, draft=2, k=3)
    _run(m, _ints(50, 1, 6))


def test_vlm_pixel_shuffle_qformer():
    m = _model("vlm_connector", d=16, llm=24, patch=4, img=16, queries=4, qd=16, heads=2)
    _run(m, _randn(1, 3, 16, 16))


def test_vits_length_regulator():
    m = _model("vits_duration", vocab=20, d=16, frames=32, scale=2.0)
    _run(m, _ints(20, 1, 10), torch.tensor([8]))


def test_siglip_sigmoid_loss():
    m = _model("siglip_mini", d=16, heads=2, vocab=50)
    _run(m, _randn(3, 3, 32, 32), _ints(50, 3, 16, seed=1))


def test_colbert_maxsim():
    m = _model("colbert_maxsim", vocab=50, d=16, heads=2, dim=8, layers=1)
    docs = _ints(49, 3, 7, seed=1) + 1
    docs[0, 5:] = 0
    docs[2, 3:] = 0
    _run(m, _ints(49, 1, 5) + 1, docs)


def test_neural_spline_flow_with_tails():
    m = _model("nsf_spline", dim=4, bins=4, hidden=16, layers=2)
    _run(m, 2.0 * _randn(6, 4))


def test_awq_int4_unpack():
    m = _model("awq_int4_mlp", vocab=40, d=64, layers=1)
    _run(m, _ints(40, 1, 5), rtol=1e-4, atol=1e-4)


def test_static_kv_cache_writes():
    m = _model("static_cache_llama", vocab=40, d=16, heads=2, layers=1)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, :2] = 0
    _run(m, _ints(40, 2, 3), mask, torch.arange(4, 7), _randn(2, 1, 2, 8, 8, seed=1),
         _randn(2, 1, 2, 8, 8, seed=2))


def test_rtdetr_deformable_attention():
    m = _model("rtdetr_msdeform", d=16, queries=6, heads=2, classes=3, points=2)
    _run(m, _randn(1, 3, 32, 32))


def test_vocos_istft():
    m = _model("vocos_istft", mels=8, c=16, hidden=32, layers=1, n_fft=16, hop=4)
    _run(m, _randn(1, 8, 10))


def test_gaussian_splatting():
    m = _model("gsplat_mini", latent=8, n=10, side=8, hidden=16)
    _run(m, _randn(1, 8))
