"""The Relay PyTorch importers (TorchScript and torch.export) on ``torch.fft`` and the complex
values between FFTs, which the tenth round of new-user models found missing (GFNet's global
filter: ``rfft2``, times ``view_as_complex`` of a learned weight, ``irfft2``). Complex values
are (real, imaginary) pairs inside the importer, each FFT dense layers of constant cosines and
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


class GlobalFilter(nn.Module):
    """GFNet's layer: a learned complex filter on the 2-D spectrum of an h x w token grid."""

    def __init__(self, h, w, c, norm):
        super().__init__()
        torch.manual_seed(3)
        self.h, self.w, self.norm = h, w, norm
        self.weight = nn.Parameter(torch.randn(h, w // 2 + 1, c, 2))

    def forward(self, x):
        b, n, c = x.shape
        xf = torch.fft.rfft2(x.view(b, self.h, self.w, c), dim=(1, 2), norm=self.norm)
        xf = xf * torch.view_as_complex(self.weight)
        y = torch.fft.irfft2(xf, s=(self.h, self.w), dim=(1, 2), norm=self.norm)
        return y.reshape(b, n, c)


@pytest.mark.parametrize("h,w,norm", [(4, 6, "ortho"), (5, 7, None), (4, 5, "forward")])
def test_global_filter(h, w, norm):
    mod = _check(GlobalFilter(h, w, 3, norm), _randn(2, h * w, 3), rtol=1e-4, atol=1e-5)
    text = mod.astext()
    assert "nn.dense(" in text and "complex" not in text


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_rfft_magnitude(norm):
    mod = _check(Fn(lambda x: torch.fft.rfft(x, norm=norm).abs()), _randn(3, 10),
                 rtol=1e-4, atol=1e-5)
    assert "sqrt(" in mod.astext()


@pytest.mark.parametrize("n", [None, 9, 10])
def test_irfft_output_length(n):
    def fn(x):
        z = torch.fft.rfft(x, dim=1)
        return torch.fft.irfft(z * 0.5 + z, n=n, dim=1)

    _check(Fn(fn), _randn(2, 10, 3), rtol=1e-4, atol=1e-5)


def test_complex_fft_roundtrip_as_real():
    def fn(x):
        z = torch.fft.fft2(x)
        z = z - torch.fft.fft2(x * 0.25)
        return torch.view_as_real(torch.fft.ifft(z, dim=-1, norm="ortho"))

    _check(Fn(fn), _randn(2, 4, 6), rtol=1e-4, atol=1e-5)


def test_rfftn_real_imag():
    def fn(x):
        z = torch.fft.rfftn(x, dim=(0, 2))
        return z.real * 2.0 + z.imag

    _check(Fn(fn), _randn(3, 2, 6), rtol=1e-4, atol=1e-5)


def test_spectral_conv_keeps_low_modes():
    """FNO's spectral convolution: the lowest modes of the spectrum sliced and multiplied per
    mode by a complex weight; irfft2 to the full size zero-pads the rest."""
    torch.manual_seed(4)
    w = torch.randn(3, 2, 2)

    def fn(x):
        z = torch.fft.rfft2(x)[:, :, :3, :2]
        return torch.fft.irfft2(z * torch.view_as_complex(w), s=(6, 6))

    _check(Fn(fn), _randn(2, 4, 6, 6), rtol=1e-4, atol=1e-5)


def _import(fn, x):
    traced = torch.jit.trace(Fn(fn), (x,))
    return relay.frontend.from_pytorch(traced, [("x", (tuple(x.shape), "float32"))])


def test_complex_output_is_refused():
    with pytest.raises(ImportError_, match="complex graph output"):
        _import(lambda x: torch.fft.rfft(x), _randn(2, 8))


def test_other_op_on_complex_is_refused():
    with pytest.raises(ImportError_, match="aten::cumsum of a complex tensor is not supported"):
        _import(lambda x: torch.view_as_real(torch.fft.rfft(x).cumsum(0)), _randn(2, 8))


@pytest.mark.parametrize("n", [12, 5])
def test_rfft_and_fft_pad_or_crop_to_n(n):
    """``n`` longer than the axis zero-pads it (only the input's rows of the n-point DFT
    matrices), shorter crops it, as torch."""
    def fn(x):
        return torch.cat([torch.fft.rfft(x, n=n).abs(), torch.fft.fft(x, n=n).abs()], -1)

    text = _check(Fn(fn), _randn(2, 8), rtol=1e-4, atol=1e-5).astext()
    assert ("strided_slice(" in text) == (n < 8)


def test_hyena_fft_convolution():
    """Hyena's long convolution: both signals padded to 2L, the filter's spectrum divided by
    2L (a complex value over a real number), the product back with irfft and cropped."""
    class FFTConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = nn.Parameter(torch.randn(3, 10))

        def forward(self, v):
            n = v.shape[-1]
            k_f = torch.fft.rfft(self.k, n=2 * n) / (2 * n)
            y = torch.fft.irfft(torch.fft.rfft(v, n=2 * n) * k_f, n=2 * n, norm="forward")
            return y[..., :n]

    _check(FFTConv(), _randn(2, 3, 10), rtol=1e-4, atol=1e-5)


def test_complex_division():
    def fn(x):
        a, b = torch.fft.rfft(x), torch.fft.rfft(x + 3.0)
        return torch.cat([torch.view_as_real(a / b), torch.view_as_real(b / 3.0)], -1)

    _check(Fn(fn), _randn(2, 8) * 0.2, rtol=1e-4, atol=1e-5)


class S4DKernelConv(nn.Module):
    """S4D's kernel as its reference computes it: a complex ``A = -exp(a) + 1j * b`` (a
    Python complex scalar times a real tensor), ``exp`` of complex values, their powers by an
    int64 ``arange``, a complex ``einsum``; then the FFT convolution with the input."""

    def __init__(self, h=3, n=4):
        super().__init__()
        torch.manual_seed(5)
        self.log_dt = nn.Parameter(torch.rand(h) * 2 - 4)
        self.c = nn.Parameter(torch.randn(h, n, 2))
        self.log_a = nn.Parameter(torch.log(0.5 * torch.ones(h, n)))
        self.a_imag = nn.Parameter(3.14159 * torch.arange(n).float().repeat(h, 1))

    def forward(self, u):
        length = u.shape[-1]
        a = -torch.exp(self.log_a) + 1j * self.a_imag
        dta = a * torch.exp(self.log_dt)[:, None]
        c = torch.view_as_complex(self.c) * (torch.exp(dta) - 1.0) / a
        k = 2 * torch.einsum("hn,hnl->hl", c, torch.exp(dta[..., None] * torch.arange(length)))
        k_f = torch.fft.rfft(k.real, n=2 * length)
        return torch.fft.irfft(torch.fft.rfft(u, n=2 * length) * k_f, n=2 * length)[..., :length]


def test_s4d_kernel_complex_exp_einsum():
    text = _check(S4DKernelConv(), _randn(2, 3, 12), rtol=1e-4, atol=1e-5).astext()
    assert "complex" not in text and "einsum" not in text  # the kernel folds to a constant


def test_complex_exp_einsum_of_input_spectra():
    """Complex values computed from the input (nothing folds): exp of a spectrum, the outer
    product of two spectra by einsum, a spectrum times an int64 tensor."""
    def fn(x):
        z = torch.fft.rfft(x)
        outer = torch.einsum("bi,bj->bi", z, torch.exp(0.1 * z))
        return torch.view_as_real(outer + z * torch.arange(z.shape[-1]))

    text = _check(Fn(fn), _randn(2, 8) * 0.5, rtol=1e-4, atol=1e-5).astext()
    assert "cos(" in text and "sin(" in text and text.count("nn.batch_matmul(") == 4


def test_complex_from_real_parts_fno_spectral_conv():
    """FNO's spectral convolution (round 17): the low modes of both signs mixed by complex
    weights held as real (re, im) pairs, the output spectrum rebuilt by ``torch.complex`` of
    zero-padded parts (one part broadcast against the other), ``irfft2`` back."""
    torch.manual_seed(5)
    w = torch.randn(2, 3, 3, 2, 2)

    def fn(x):
        z = torch.fft.rfft2(x)
        re, im = z.real[:, :, :2, :2], z.imag[:, :, :2, :2]
        out_re = torch.einsum("bixy,ioxy->boxy", re, w[0]) - \
            torch.einsum("bixy,ioxy->boxy", im, w[1])
        out_im = torch.einsum("bixy,ioxy->boxy", re, w[1]) + \
            torch.einsum("bixy,ioxy->boxy", im, w[0])
        pad = (0, 2, 0, 4)
        spec = torch.complex(torch.nn.functional.pad(out_re, pad),
                             torch.nn.functional.pad(out_im, pad)[:1])
        return torch.fft.irfft2(spec, s=(6, 6))

    text = _check(Fn(fn), _randn(1, 3, 6, 6), rtol=1e-4, atol=1e-5).astext()
    assert "complex" not in text


def test_complex_of_integer_parts_is_refused():
    """torch.complex takes float parts of one dtype (float64 imports); integer parts, declared
    so in the input infos, are refused with an error naming their dtypes."""
    traced = torch.jit.trace(Fn(lambda x, y: torch.view_as_real(torch.complex(x, y))),
                             (_randn(2, 3).double(), _randn(2, 3).double()))
    mod, _ = relay.frontend.from_pytorch(traced, [("x", ((2, 3), "float64")),
                                                  ("y", ((2, 3), "float64"))])
    assert "stack(" in mod.astext()
    with pytest.raises(ImportError_, match="two floating-point tensors of one dtype, got "
                                           "int32 and int32"):
        relay.frontend.from_pytorch(traced, [("x", ((2, 3), "int32")),
                                             ("y", ((2, 3), "int32"))])


def test_polar_rotary_frequencies():
    """torch.polar (a Llama rotary embedding's freqs_cis): magnitudes and angles from the
    input, multiplied into a complex view of the input, back to real."""
    def fn(x):
        angles = x[..., 0] * torch.arange(1, 5, dtype=torch.float32)
        z = torch.polar(x[..., 1].abs() + 1.0, angles)
        return torch.view_as_real(torch.view_as_complex(x.reshape(2, 4, 2)) * z)

    _check(Fn(fn), _randn(2, 4, 2), rtol=1e-5, atol=1e-6)


def test_conj_auto_correlation():
    """Autoformer's auto-correlation ``irfft(rfft(q) * conj(rfft(k)))`` (the tracer records the
    lazy ``aten::_conj``), conj of a real tensor (itself) and ``resolve_conj``."""
    def fn(q, k):
        corr = torch.fft.irfft(torch.fft.rfft(q, dim=-1) * torch.conj(torch.fft.rfft(k, dim=-1)),
                               n=q.shape[-1], dim=-1)
        z = torch.fft.rfft(q - k, dim=-1).conj().resolve_conj()
        return torch.cat([corr + torch.conj(q), torch.view_as_real(z).flatten(-2)], -1)

    mod = _check(Fn(fn), _randn(2, 3, 12), _randn(2, 3, 12, seed=1), rtol=1e-4, atol=1e-5)
    assert "negative(" in mod.astext()
