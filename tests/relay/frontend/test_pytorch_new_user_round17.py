"""The seventeenth round of new-user architectures (benchmarks/new_user_models_seventeenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors:
EfficientFormer (pool-mixer meta-blocks, attention with a gathered bias), CvT (conv token
embeddings, depthwise-conv q/k/v projections, a class token), a Funnel-Transformer encoder
(mean-pooled queries, a min-pooled padding mask), BigBird block-sparse attention (window,
global and random key blocks gathered by index), a Fourier Neural Operator (rfft2, complex
mode mixing by einsum, torch.complex, irfft2), DeepLabV3+ (ASPP with image pooling, an
align_corners decoder), KPConv (cdist + topk neighbours, kernel-point correlations), a T5
decoder (causal relative buckets, cross-attention, gated GELU), BYOL (BatchNorm1d projectors,
F.normalize, the symmetric loss), a VAE (reparameterization with the noise an input,
binary_cross_entropy_with_logits + KL), a quantile forecaster (GRU, torch.quantile of samples,
sort) and H3 (a shift SSM conv, an FFT-convolved diagonal SSM); each built at opt_level 3 and
checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from new_user_models_seventeenth import seventeenth_models  # noqa: E402


def _model(name, **small):
    torch.manual_seed(1)
    return seventeenth_models()[name][0](**small).eval()


def test_efficientformer_pool_mixer_biased_attention():
    m = _model("efficientformer", img=32, widths=(8, 16), depths=(1,), heads=2, d3=1,
               classes=3)
    _run(m, _randn(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_cvt_conv_embedding_conv_projection():
    m = _model("cvt_mini", widths=(8, 16), heads=(1, 2), depths=(1, 1), classes=3)
    _run(m, _randn(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_funnel_pooled_queries_padding():
    m = _model("funnel_encoder", vocab=30, d=16, heads=2, blocks=(1, 1), n=12, classes=2)
    idx = _ints(29, 2, 11) + 1
    idx[1, 6:] = 0                                                   # padding
    _run(m, idx, rtol=1e-4, atol=1e-4)


def test_bigbird_random_block_gathers():
    m = _model("bigbird_sparse", vocab=30, d=16, heads=2, layers=1, n=48, block=4, rand=2,
               classes=3)
    _run(m, _ints(30, 2, 48), rtol=1e-4, atol=1e-4)


def test_fno_spectral_conv_complex_parts():
    m = _model("fno2d", c=4, modes=3, layers=2)
    _run(m, _randn(1, 10, 8, 1), rtol=1e-4, atol=1e-5)


def test_deeplabv3plus_aspp_decoder():
    m = _model("deeplabv3plus", widths=(4, 8, 8, 8), aspp=8, low=4, rates=(2,), classes=3)
    _run(m, _randn(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_kpconv_kernel_point_correlation():
    m = _model("kpconv_net", widths=(8, 8), kpoints=5, k=4, classes=3)
    _run(m, _randn(2, 20, 3), rtol=1e-4, atol=1e-4)


def test_t5_decoder_causal_buckets_cross_attention():
    m = _model("t5_decoder", vocab=30, d=16, heads=2, layers=1, ff=16, buckets=8,
               max_dist=16)
    _run(m, _ints(30, 2, 20), _randn(2, 7, 16), rtol=1e-4, atol=1e-4)


def test_byol_bn1d_projector_normalize_loss():
    m = _model("byol_pair", widths=(4, 8), proj=8, hidden=16)
    x = _randn(4, 3, 16, 16)
    _run(m, x, x.flip(3) * 0.9, rtol=1e-4, atol=1e-4)


def test_vae_reparameterization_bce_kl():
    m = _model("vae_reparam", widths=(4, 8), latent=3, img=8)
    _run(m, torch.sigmoid(_randn(2, 1, 8, 8)), _randn(2, 3, seed=1), rtol=1e-4, atol=1e-4)


def test_quantile_forecaster_quantile_sort():
    m = _model("quantile_forecast", features=2, hidden=8, horizon=4, samples=9,
               quantiles=(0.1, 0.5, 0.9))
    _run(m, _randn(3, 6, 2), _randn(3, 9, 4, seed=1), rtol=1e-4, atol=1e-5)


def test_h3_shift_ssm_fft_conv():
    m = _model("h3_lm", vocab=30, d=8, layers=1, state=4, n=16)
    _run(m, _ints(30, 2, 16), rtol=1e-4, atol=1e-4)
