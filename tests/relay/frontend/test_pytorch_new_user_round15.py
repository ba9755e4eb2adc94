"""The fifteenth round of new-user architectures (benchmarks/new_user_models_fifteenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors:
RetinaNet (FPN P3-P7, a topk over anchor-class scores, box decoding), a Tacotron 2 decoder
(LSTMCells, location-sensitive attention masked by lengths, postnet), Reformer (LSH buckets by
argmax, argsort into chunks, look-one-back with roll, the sort undone by gather), a causal
Performer (FAVOR+ features, cumsum prefix sums), Linformer, Transformer-XL (segment memory,
rel_shift), a pi-GAN SIREN (meshgrid coordinates, FiLM sines), a CfC liquid network (masked
weights, irregular gaps), Slot Attention (softmax over slots, GRUCell), S4D (a kernel from
complex parameters, rfft / irfft convolution), TabNet with entmax15 and a ConvLSTM nowcaster;
each built at opt_level 3 and checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from new_user_models_fifteenth import fifteenth_models  # noqa: E402


def _model(name, **small):
    torch.manual_seed(1)
    return fifteenth_models()[name][0](**small).eval()


def test_retinanet_fpn_topk_decode():
    m = _model("retinanet_fpn", img=32, classes=3, c=8, topk=20, convs=1)
    _run(m, _randn(1, 3, 32, 32), rtol=1e-4, atol=1e-4)


def test_tacotron2_location_sensitive_decoder():
    m = _model("tacotron2_decoder", d_enc=16, mels=8, prenet=16, att_rnn=16, dec_rnn=16,
               att_dim=8, loc_filters=4, loc_kernel=5, post=8, steps=2)
    _run(m, _randn(2, 10, 16), torch.tensor([10, 6]))


def test_reformer_lsh_chunked_attention():
    m = _model("reformer_lsh", vocab=32, d=16, heads=2, layers=1, buckets=4, chunk=8, n=32,
               ff_chunks=2)
    _run(m, _ints(32, 2, 32))


def test_performer_causal_favor():
    m = _model("performer_favor", vocab=32, d=16, heads=2, layers=1, features=8, n=16)
    _run(m, _ints(32, 2, 16))


def test_linformer_sequence_projection():
    m = _model("linformer_cls", vocab=50, d=16, heads=2, layers=1, n=32, k=8, classes=3)
    _run(m, _ints(50, 2, 32))


def test_transformer_xl_memory_rel_shift():
    m = _model("transformer_xl", vocab=40, d=16, heads=2, layers=2)
    _run(m, _ints(40, 2, 6), _randn(2, 2, 5, 16))


def test_pigan_siren_film():
    m = _model("pigan_siren", z_dim=8, hidden=16, layers=2, side=8)
    _run(m, _randn(2, 8), rtol=1e-4, atol=1e-4)


def test_cfc_liquid_irregular_gaps():
    m = _model("cfc_liquid", features=3, hidden=8, units=16, out=2)
    _run(m, _randn(2, 6, 3), torch.rand(2, 6, generator=torch.Generator().manual_seed(2)) + 0.1)


def test_slot_attention_autoencoder():
    m = _model("slot_attention", slots=3, d=16, side=16, iters=2, c=8)
    _run(m, _randn(1, 3, 16, 16), _randn(1, 3, 16, seed=1))


def test_s4d_complex_kernel_fft_conv():
    m = _model("s4d_mini", features=2, h=8, n=8, layers=1, classes=3)
    _run(m, _randn(2, 32, 2), rtol=1e-4, atol=1e-4)


def test_tabnet_entmax15_masks():
    m = _model("tabnet_entmax", features=10, nd=8, na=8, steps=2, classes=3)
    _run(m, _randn(16, 10))


def test_convlstm_encoder_forecaster():
    m = _model("convlstm_nowcast", hidden=4, future=2)
    _run(m, torch.rand(1, 2, 1, 8, 8, generator=torch.Generator().manual_seed(3)))
