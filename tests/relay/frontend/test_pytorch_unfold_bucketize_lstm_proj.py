"""The ATen gaps the ninth round of new-user models found, through both Relay PyTorch importers
(TorchScript and torch.export): ``Tensor.unfold`` (PatchTST's patches), ``bucketize`` and
``searchsorted`` (a recommender's binned dense features), ``nn.LSTM(proj_size=...)`` (a speech
model's projected LSTM), ``nn.Unfold`` / ``nn.Fold`` (T2T-ViT, FuseFormer) and antialiased
resizes (torchvision's ``Resize``); built at opt_level 3 against eager PyTorch, every kernel
native, plus the imported ops and the errors of what stays unsupported."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import Fn, check_both_importers  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402

_check = check_both_importers


@pytest.mark.parametrize("shape,dim,size,step", [
    ((2, 3, 20), -1, 4, 2),    # PatchTST: overlapping patches along time, the last axis
    ((2, 9, 5), 1, 3, 3),      # a middle axis, windows that just touch: size moves last
    ((7, 4), 0, 2, 1),         # the first axis, stride 1
    ((2, 10), 1, 3, 4),        # a step past the size: entries skipped, a remainder dropped
    ((5,), 0, 5, 1),           # one window of the whole axis
])
def test_tensor_unfold(shape, dim, size, step):
    mod = _check(Fn(lambda x: x.unfold(dim, size, step) * 2.0), _randn(*shape))
    assert "take" in mod.astext()


def test_tensor_unfold_int_keeps_dtype():
    x = torch.arange(24).view(2, 12)
    _check(Fn(lambda x: x.unfold(1, 4, 4) + 1), x)


_BOUNDS = torch.tensor([-1.0, 0.0, 0.5, 1.0])
# values on, between and beyond the boundaries: ties decide the side
_VALUES = torch.tensor([[-2.0, -1.0, 0.0, 0.25, 0.5, 1.0, 3.0], [1.0, 0.7, -0.5, -1.0, 2.0,
                                                                 0.0, 0.5]])


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize(right, out_int32):
    mod = _check(Fn(lambda x: torch.bucketize(x, _BOUNDS, out_int32=out_int32, right=right)),
                 _VALUES)
    assert "searchsorted" in mod.astext()


class _BinnedEmbedding(nn.Module):
    """DCN-v2's dense features: a bin id per feature, offset per column, embedded."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.emb = nn.Embedding(20, 3)
        self.register_buffer("bounds", torch.linspace(-2, 2, 4))
        self.register_buffer("offsets", torch.arange(4) * 5)

    def forward(self, x):
        return self.emb(torch.bucketize(x, self.bounds) + self.offsets)


def test_bucketize_feeds_an_embedding():
    _check(_BinnedEmbedding(), _randn(6, 4))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_rows(side):
    """A sorted sequence per row (leading dims matching the values')."""
    seq = torch.sort(_randn(3, 6, seed=1), -1).values
    _check(Fn(lambda x: torch.searchsorted(seq, x, side=side)), _randn(3, 4), exported=False)


def test_searchsorted_sorter_is_an_error():
    seq, sorter = torch.tensor([3.0, 1.0, 2.0]), torch.tensor([1, 2, 0])
    traced = torch.jit.trace(Fn(lambda x: torch.searchsorted(seq, x, sorter=sorter)),
                             (_randn(4),))
    with pytest.raises(ImportError_, match="searchsorted with a sorter"):
        relay.frontend.from_pytorch(traced, [("x", ((4,), "float32"))])


class _LSTMOut(nn.Module):
    """The output sequence, last projected states and last cells, flattened into one."""

    def __init__(self, **kw):
        super().__init__()
        torch.manual_seed(3)
        self.lstm = nn.LSTM(**kw)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return torch.cat([y.flatten(), h.flatten(), c.flatten()])


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_proj_size(layers, bidirectional, batch_first):
    model = _LSTMOut(input_size=5, hidden_size=8, num_layers=layers, proj_size=3,
                     bidirectional=bidirectional, batch_first=batch_first)
    _check(model, _randn(2, 6, 5), exported=False, rtol=1e-5, atol=1e-5)


def test_lstm_proj_size_without_bias_through_export():
    model = _LSTMOut(input_size=4, hidden_size=6, num_layers=1, proj_size=2, bias=False,
                     batch_first=True)
    _check(model, _randn(1, 5, 4), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,kw", [
    ((1, 3, 16, 16), dict(kernel_size=7, stride=4, padding=2)),       # T2T-ViT's first split
    ((2, 4, 7, 9), dict(kernel_size=(2, 3), dilation=(2, 1), stride=(1, 2), padding=(1, 0))),
    ((3, 6, 5), dict(kernel_size=3, padding=1)),                       # an unbatched input
])
def test_nn_unfold_is_two_takes(shape, kw):
    """nn.Unfold (aten::im2col) as two takes of constant window indices, not one strided
    slice per kernel tap (T2T-ViT's 7x7 split: 2.69 ms that way, 0.29 ms this way)."""
    mod = _check(nn.Unfold(**kw), _randn(*shape))
    text = mod.astext()
    assert text.count("take(") == 2 and "strided_slice" not in text


@pytest.mark.parametrize("shape,kw", [
    ((1, 2 * 49, 121), dict(output_size=32, kernel_size=7, stride=3, padding=3)),  # FuseFormer
    ((2, 4 * 6, 15), dict(output_size=(5, 7), kernel_size=(2, 3), dilation=(2, 1),
                          stride=(1, 2), padding=(1, 0))),
    ((2, 2 * 9, 4), dict(output_size=7, kernel_size=3, stride=3)),   # row 6 gets no tap
    ((3 * 4, 9), dict(output_size=4, kernel_size=2)),                # an unbatched input
])
def test_nn_fold_gathers_and_sums(shape, kw):
    """nn.Fold (aten::col2im): gathers by constant tap tables, added; the columns, their
    padded rearrangement and the image materialized (stop_fusion), no scatter."""
    mod = _check(nn.Fold(**kw), _randn(*shape), rtol=1e-5, atol=1e-5)
    text = mod.astext()
    assert "take(" in text and "scatter" not in text
    assert text.count("annotation.stop_fusion(") == 3


def test_fold_of_unfold_counts_overlaps():
    """FuseFormer's normalization: fold(unfold(x)) / fold(unfold(ones)) gives x back."""
    fold, unfold = nn.Fold(8, 3, padding=1, stride=2), nn.Unfold(3, padding=1, stride=2)
    _check(Fn(lambda x: fold(unfold(x)) / fold(unfold(torch.ones_like(x)))),
           _randn(1, 2, 8, 8), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,kw,lowering", [
    ("bilinear", dict(size=(16, 20)), "taps"),        # a downscale: 5-tap bands
    ("bilinear", dict(scale_factor=0.5), "taps"),
    ("bilinear", dict(size=(50, 64)), "taps"),        # an upscale: 2-tap bands, width first
    ("bicubic", dict(scale_factor=(0.3, 1.5)), "taps"),
    ("bicubic", dict(size=(16, 20)), "dense"),        # 10-tap bands over a short input
    ("bicubic", dict(scale_factor=0.5), "dense"),
])
def test_antialiased_resize(mode, kw, lowering):
    """torchvision's Resize on tensors (F.interpolate(antialias=True)), down and up: per axis a
    sum of gathered filter taps, both passes materialized, or two dense products with the
    constant filter matrices where the filters span most of a short input."""
    mod = _check(Fn(lambda x: F.interpolate(x, mode=mode, antialias=True, **kw)),
                 _randn(2, 3, 37, 50), rtol=1e-5, atol=1e-5)
    text = mod.astext()
    if lowering == "dense":
        assert text.count("nn.dense(") == 2 and "take(" not in text
    else:
        assert "nn.dense(" not in text and "take(" in text
        assert text.count("annotation.stop_fusion(") == 2


def test_antialiased_resize_with_aligned_corners_is_an_error():
    fn = Fn(lambda x: F.interpolate(x, size=(5, 6), mode="bilinear", antialias=True,
                                    align_corners=True))
    traced = torch.jit.trace(fn, (_randn(1, 1, 9, 9),))
    with pytest.raises(ImportError_, match="align_corners=True is not supported"):
        relay.frontend.from_pytorch(traced, [("x", ((1, 1, 9, 9), "float32"))])


def test_antialias_weights_rows_sum_to_one():
    from minitvm.frontend_common.antialias import antialias_weights

    for mode in ("bilinear", "bicubic"):
        w = antialias_weights(37, 11, mode)
        np.testing.assert_allclose(w.sum(1), 1.0)
        # a 37 -> 11 downscale stretches the filter: each row spans more than 2*support taps
        assert (w != 0).sum(1).max() > (4 if mode == "bilinear" else 8)
