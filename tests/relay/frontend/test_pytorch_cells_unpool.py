"""The Relay PyTorch importers (TorchScript and torch.export) on ops the eleventh round of
new-user models found missing (benchmarks/new_user_models_eleventh.py): ``nn.LSTMCell`` /
``GRUCell`` / ``RNNCell`` (TorchScript traces their Python gate arithmetic with
``unsafe_chunk``; torch.export keeps ``lstm_cell`` / ``gru_cell`` / ``rnn_*_cell``, which
become one step of the shared recurrent unrolling), ``AlphaDropout`` in eval mode, the
indices of ``max_pool*d(return_indices=True)`` and ``max_unpool2d`` (SegNet's decoder: a
gather from non-overlapping pool windows, a scatter otherwise). Each built native and checked
against eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import build_run_native  # noqa: E402
from frontend_models import check_both_importers as _both  # noqa: E402
from frontend_models import seeded_module as _seeded  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402

from minitvm.relay.frontend.pytorch import from_exported_program  # noqa: E402


class Cells(nn.Module):
    """Every cell kind, with and without biases, one step each from a given state."""

    def __init__(self, bias=True):
        super().__init__()
        self.lstm = nn.LSTMCell(5, 4, bias=bias)
        self.gru = nn.GRUCell(5, 4, bias=bias)
        self.tanh = nn.RNNCell(5, 4, bias=bias)
        self.relu = nn.RNNCell(5, 4, bias=bias, nonlinearity="relu")

    def forward(self, x, h, c):
        h1, c1 = self.lstm(x, (h, c))
        return torch.cat([h1, c1, self.gru(x, h), self.tanh(x, h), self.relu(x, h)], -1)


@pytest.mark.parametrize("bias", [True, False])
def test_rnn_cells_both_importers(bias):
    mod = _both(_seeded(Cells, bias), _randn(3, 5), _randn(3, 4, seed=1), _randn(3, 4, seed=2),
                rtol=1e-5, atol=1e-5)
    assert "split" in mod.astext()  # unsafe_chunk of the gates, as chunk


def test_lstm_cell_decoder_loop_zero_state():
    """A decoder's unrolled loop from torch's default (zero) state, the cell called without
    one: h and c carried over four steps."""

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell, self.out = nn.LSTMCell(6, 8), nn.Linear(8, 3)

        def forward(self, xs):
            h, c = self.cell(xs[:, 0])
            ys = [self.out(h)]
            for t in range(1, xs.shape[1]):
                h, c = self.cell(xs[:, t], (h, c))
                ys.append(self.out(h))
            return torch.stack(ys, 1)

    _both(_seeded(Decoder), _randn(2, 4, 6), rtol=1e-5, atol=1e-5)


def test_alpha_dropout_is_identity_in_eval():
    class SNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(6, 8), nn.SELU(), nn.AlphaDropout(0.2),
                                     nn.Linear(8, 4), nn.CELU(0.5), nn.FeatureAlphaDropout(0.1))

        def forward(self, x):
            return self.net(x)

    _both(_seeded(SNN), _randn(5, 6), exported=False)


@pytest.mark.parametrize("kernel,stride,pad,ceil,shape", [
    (2, 2, 0, False, (2, 3, 8, 8)), (3, 2, 1, False, (1, 2, 9, 7)), (2, 2, 0, True, (1, 2, 7, 9)),
    (3, 1, 1, False, (1, 1, 5, 5))])
def test_max_pool2d_indices(kernel, stride, pad, ceil, shape):
    """The indices as torch counts them (flat within each N, C plane), both importers; the
    input has ties (rounded values), where the first maximum in window order wins."""

    def f(x):
        v, i = F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil, return_indices=True)
        return i

    x = torch.round(_randn(*shape) * 2)
    _both(_Fn(f), x)


def test_max_pool1d_and_3d_indices():
    def f1(x):
        return F.max_pool1d(x, 3, 2, 1, return_indices=True)[1]

    def f3(x):
        return F.max_pool3d(x, 2, 2, return_indices=True)[1]

    _both(_Fn(f1), _randn(2, 3, 11))
    _both(_Fn(f3), _randn(1, 2, 4, 6, 6))


def _exported(model, *inputs):
    """torch.export -> Relay, built native; (output, the module's text) against eager."""
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        ep = torch.export.export(model, inputs)
    mod, params = from_exported_program(ep)
    names = [p.name_hint for p in mod["main"].params][:len(inputs)]
    out = build_run_native(mod, params, names, inputs)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    return mod.astext()


class Unpool(nn.Module):
    def __init__(self, kernel, stride, pad=0, size=None):
        super().__init__()
        self.args, self.size = (kernel, stride, pad), size

    def forward(self, x):
        v, i = F.max_pool2d(x, *self.args, return_indices=True)
        return F.max_unpool2d(v * 2.0, i, *self.args, output_size=self.size)


@pytest.mark.parametrize("kernel,stride,pad,size,shape", [
    (2, 2, 0, None, (2, 3, 8, 8)), (2, 2, 0, (7, 9), (1, 2, 7, 9)),
    (3, 3, 1, (7, 8), (1, 2, 7, 8)), (2, 3, 0, (8, 8), (1, 1, 8, 8))])
def test_max_unpool2d_gathers_from_disjoint_windows(kernel, stride, pad, size, shape):
    """Windows that do not overlap: each output takes its window's value where the recorded
    index is its own position (no scatter in the IR); odd sizes and gaps between windows
    included."""
    text = _exported(Unpool(kernel, stride, pad, size), _randn(*shape))
    assert "scatter" not in text and "take" in text


def test_max_unpool2d_overlapping_windows_scatter():
    text = _exported(Unpool(3, 2, 1, (6, 6)), _randn(1, 2, 6, 6))
    assert "scatter_elements" in text


def test_segnet_encoder_decoder():
    class SegNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2 = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 6, 3, padding=1)
            self.d2, self.d1 = nn.Conv2d(6, 4, 3, padding=1), nn.Conv2d(4, 5, 3, padding=1)

        def forward(self, x):
            x, i1 = F.max_pool2d(F.relu(self.e1(x)), 2, 2, return_indices=True)
            x, i2 = F.max_pool2d(F.relu(self.e2(x)), 2, 2, return_indices=True)
            x = F.relu(self.d2(F.max_unpool2d(x, i2, 2, 2)))
            return self.d1(F.max_unpool2d(x, i1, 2, 2))

    text = _exported(_seeded(SegNet), _randn(1, 3, 16, 12))
    assert "scatter" not in text


def _Fn(fn):
    from frontend_models import Fn

    return Fn(fn)


class PlainRNN(nn.Module):
    """``nn.RNN`` layers (aten::rnn_tanh / rnn_relu): two stacked layers, both directions."""

    def __init__(self, nonlinearity, batch_first, bias):
        super().__init__()
        self.rnn = nn.RNN(5, 4, 2, nonlinearity=nonlinearity, bias=bias, bidirectional=True,
                          batch_first=batch_first)
        self.batch_first = batch_first

    def forward(self, x, h0):
        y, hn = self.rnn(x, h0)
        y = y if self.batch_first else y.transpose(0, 1)
        return torch.cat([y.flatten(1), hn.transpose(0, 1).flatten(1)], 1)


@pytest.mark.parametrize("nonlinearity,batch_first,bias",
                         [("tanh", True, True), ("relu", False, False)])
def test_plain_rnn_layers_both_importers(nonlinearity, batch_first, bias):
    """nn.RNN unrolls as ONNX's RNN with its nonlinearity in every direction and layer, from a
    given state (6 steps, batch 3)."""
    x = _randn(3, 6, 5) if batch_first else _randn(6, 3, 5)
    mod = _both(_seeded(PlainRNN, nonlinearity, batch_first, bias), x, _randn(4, 3, 4, seed=1),
                rtol=1e-5, atol=1e-5)
    assert ("tanh" if nonlinearity == "tanh" else "nn.relu") in mod.astext()
