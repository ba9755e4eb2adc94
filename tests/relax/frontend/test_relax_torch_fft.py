"""relax.frontend.torch.from_exported_program on torch.fft (``_fft_r2c`` / ``_fft_c2r`` /
``_fft_c2c`` after decomposition) and the complex values between FFTs, which the tenth round
of new-user models found missing (GFNet's global filter). Complex values are (real, imaginary)
pairs inside the importer, each FFT matmuls with constant cosines and sines; built and run on
the Relax VM against eager, plus the module's form and the errors of what stays unsupported."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from torch import nn  # noqa: E402

from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402
from minitvm.relax.frontend.torch.context import TorchImportError  # noqa: E402

from .exported_program_run import Fn  # noqa: E402
from .exported_program_run import run_exported as _run  # noqa: E402
from .exported_program_run import run_exported_module as _run_module  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


class GlobalFilter(nn.Module):
    def __init__(self, h, w, c, norm):
        super().__init__()
        torch.manual_seed(3)
        self.h, self.w, self.norm = h, w, norm
        self.weight = nn.Parameter(torch.randn(h, w // 2 + 1, c, 2))

    def forward(self, x):
        b, n, c = x.shape
        xf = torch.fft.rfft2(x.view(b, self.h, self.w, c), dim=(1, 2), norm=self.norm)
        xf = xf * torch.view_as_complex(self.weight)
        return torch.fft.irfft2(xf, s=(self.h, self.w), dim=(1, 2), norm=self.norm).reshape(
            b, n, c)


@pytest.mark.parametrize("h,w,norm", [(4, 6, "ortho"), (5, 7, None), (4, 5, "forward")])
def test_global_filter(h, w, norm):
    text = _run_module(GlobalFilter(h, w, 3, norm), _rand(2, h * w, 3))
    assert "R.matmul(" in text and "complex" not in text


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_rfft_magnitude(norm):
    assert "R.sqrt(" in _run(lambda x: torch.fft.rfft(x, norm=norm).abs(), _rand(3, 10))


@pytest.mark.parametrize("n", [None, 9, 10])
def test_irfft_output_length(n):
    def fn(x):
        z = torch.fft.rfft(x, dim=1)
        return torch.fft.irfft(z * 0.5 + z, n=n, dim=1)

    _run(fn, _rand(2, 10, 3))


def test_complex_fft_roundtrip_as_real():
    def fn(x):
        z = torch.fft.fft2(x)
        z = z - torch.fft.fft2(x * 0.25)
        return torch.view_as_real(torch.fft.ifft(z, dim=-1, norm="ortho"))

    _run(fn, _rand(2, 4, 6))


def test_spectral_conv_keeps_low_modes():
    """FNO's spectral convolution: the lowest modes of the spectrum sliced, mixed by a
    complex einsum-free product per mode, the rest zero (irfft2 of a smaller spectrum)."""
    torch.manual_seed(4)
    w = torch.randn(3, 2, 2)

    def fn(x):
        z = torch.fft.rfft2(x)[:, :, :3, :2]
        return torch.fft.irfft2(z * torch.view_as_complex(w), s=(6, 6))

    _run(fn, _rand(2, 4, 6, 6))


def _import(fn, x):
    return from_exported_program(torch.export.export(Fn(fn).eval(), (x,)))


def test_complex_output_is_refused():
    with pytest.raises(TorchImportError, match="complex program output"):
        _import(lambda x: torch.fft.rfft(x), _rand(2, 8))


def test_other_op_on_complex_is_refused():
    with pytest.raises(TorchImportError, match="of a complex tensor is not supported"):
        _import(lambda x: torch.view_as_real(torch.fft.rfft(x).cumsum(0)), _rand(2, 8))


def test_hyena_fft_convolution_complex_division():
    """Hyena's long convolution: signals padded to 2L (constant_pad_nd before ``_fft_r2c``),
    the filter's spectrum divided by 2L, a complex by a complex quotient too."""
    def fn(v):
        n = v.shape[-1]
        k_f = torch.fft.rfft(v.flip(-1), n=2 * n) / (2 * n)
        y = torch.fft.irfft(torch.fft.rfft(v, n=2 * n) * k_f, n=2 * n, norm="forward")[..., :n]
        q = torch.fft.rfft(v) / torch.fft.rfft(v + 3.0)
        return torch.cat([y, torch.fft.irfft(q, n=n)], -1)

    _run(fn, _rand(2, 3, 10) * 0.2)



def test_s4d_kernel_complex_exp_and_bmm():
    """S4D's kernel from complex parameters (``1j * b``, complex ``exp``, an int64 ``arange``
    operand, an ``einsum`` that torch.export decomposes to a complex ``bmm``), then the FFT
    convolution; and the same ops on complex values computed from the input."""
    class S4DKernelConv(nn.Module):
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
            k = 2 * torch.einsum("hn,hnl->hl", c, torch.exp(dta[..., None]
                                                            * torch.arange(length)))
            k_f = torch.fft.rfft(k.real, n=2 * length)
            y = torch.fft.irfft(torch.fft.rfft(u, n=2 * length) * k_f, n=2 * length)
            return y[..., :length]

    _run_module(S4DKernelConv(), _rand(2, 3, 12))

    def fn(x):
        z = torch.fft.rfft(x)
        outer = torch.einsum("bi,bj->bi", z, torch.exp(0.1 * z))
        return torch.view_as_real(outer + z * torch.arange(z.shape[-1]))

    _run(fn, _rand(2, 8) * 0.5)


def test_complex_from_real_parts():
    """``torch.complex`` of two real parts (FNO's rebuilt spectrum, round 17), one broadcast
    against the other, then ``irfft2``."""
    def fn(x):
        z = torch.fft.rfft2(x)
        re = torch.nn.functional.pad(z.real[:, :, :2, :2] * 2.0, (0, 2, 0, 4))
        im = torch.nn.functional.pad(z.imag[:1, :, :2, :2], (0, 2, 0, 4))
        return torch.fft.irfft2(torch.complex(re, im), s=(6, 6))

    _run(fn, _rand(2, 3, 6, 6))


def test_polar_rotary_frequencies():
    def fn(x):
        angles = x[..., 0] * torch.arange(1, 5, dtype=torch.float32)
        z = torch.polar(x[..., 1].abs() + 1.0, angles)
        return torch.view_as_real(torch.view_as_complex(x.reshape(2, 4, 2)) * z)

    _run(fn, _rand(2, 4, 2))


def test_conj_auto_correlation():
    """Autoformer's ``irfft(rfft(q) * conj(rfft(k)))``: torch.export records ``_conj``; conj of
    a real tensor is the tensor; ``resolve_conj`` materializes nothing."""
    def fn(q, k):
        corr = torch.fft.irfft(torch.fft.rfft(q, dim=-1) * torch.conj(torch.fft.rfft(k, dim=-1)),
                               n=q.shape[-1], dim=-1)
        z = torch.fft.rfft(q - k, dim=-1).conj().resolve_conj()
        return torch.cat([corr + torch.conj(q), torch.view_as_real(z).flatten(-2)], -1)

    text = _run(fn, _rand(2, 3, 12), _rand(2, 3, 12, seed=1))
    assert "R.negative(" in text
