"""The Relay PyTorch importers (TorchScript and torch.export) on ``torch.stft`` and the window
factories, which the sixteenth round of new-user models found missing (ECAPA-TDNN computing
its log-mel front end from the waveform: ``torch.stft(wave, window=torch.hann_window(n))``).
Each STFT is one strided conv1d whose filters are the window times the DFT's cosines and
sines; checked against eager with every kernel native, plus the IR's form and the errors of
what stays unsupported."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.common import ImportError_  # noqa: E402


class LogPower(nn.Module):
    """A log power spectrogram with the window a buffer (as torchaudio keeps it)."""

    def __init__(self, n_fft, hop, win_length):
        super().__init__()
        self.n_fft, self.hop, self.win_length = n_fft, hop, win_length
        self.register_buffer("window", torch.hann_window(win_length))

    def forward(self, wave):
        spec = torch.stft(wave, self.n_fft, self.hop, self.win_length, self.window,
                          return_complex=True)
        return torch.log(spec.abs().pow(2) + 1e-6)


@pytest.mark.parametrize("n_fft,hop,win_length", [(16, 4, 16), (15, 5, 9)])
def test_buffer_window_log_power(n_fft, hop, win_length):
    mod = _check(LogPower(n_fft, hop, win_length), _randn(2, 60), rtol=1e-4, atol=1e-4)
    text = mod.astext()
    assert "nn.conv1d(" in text and "stft" not in text


@pytest.mark.parametrize("kind", ["hann", "hamming", "blackman"])
def test_factory_window_no_center_1d(kind):
    def fn(x):
        win = getattr(torch, f"{kind}_window")(12, periodic=False)
        return torch.stft(x, 12, 3, window=win, center=False, return_complex=True).abs()

    _check(Fn(fn), _randn(50), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pad_mode", ["reflect", "constant", "replicate"])
def test_center_pad_modes_real_output(pad_mode):
    def fn(x):
        return torch.stft(x, 8, 2, window=torch.ones(8), pad_mode=pad_mode, normalized=True,
                          return_complex=False)

    _check(Fn(fn), _randn(3, 40), rtol=1e-4, atol=1e-5)


def test_runtime_window_and_view_as_real():
    def fn(x, w):
        return torch.view_as_real(torch.stft(x, 10, 4, window=w.sigmoid(), return_complex=True))

    _check(Fn(fn), _randn(2, 30), _randn(10, seed=1), rtol=1e-4, atol=1e-5)


def test_hamming_alpha_beta():
    _check(Fn(lambda x: x * torch.hamming_window(9, True, 0.6, 0.3)), _randn(2, 9))


def _import(fn, *shapes):
    traced = torch.jit.trace(Fn(fn), tuple(torch.zeros(s) for s in shapes))
    return relay.frontend.from_pytorch(traced, [(f"i{k}", (s, "float32"))
                                                for k, s in enumerate(shapes)])


def test_two_sided_is_refused():
    with pytest.raises(ImportError_, match="onesided=False"):
        _import(lambda x: torch.stft(x, 8, 2, window=torch.ones(8), onesided=False,
                                     return_complex=True).abs(), (2, 32))

