"""frontend_common.dft, the cosine / sine matrices both PyTorch importers lower torch.fft to,
against numpy.fft on random data: full and one-sided forward transforms, the inverse, the
real inverse of a one-sided spectrum (odd and even lengths, shorter spectra) and the
normalization factors of torch's string and ATen's integer modes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minitvm.frontend_common.dft import c2c_matrices, c2r_matrices, r2c_matrices, scale


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_matches_numpy(n, forward):
    z = _rng().standard_normal((3, n)) + 1j * _rng(1).standard_normal((3, n))
    c, s = c2c_matrices(n, forward, 1.0)
    re = z.real @ c + z.imag @ s
    im = z.imag @ c - z.real @ s
    ref = np.fft.fft(z, axis=-1) if forward else np.fft.ifft(z, axis=-1) * n
    np.testing.assert_allclose(re + 1j * im, ref, atol=1e-10)


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("onesided", [True, False])
def test_r2c_matches_numpy(n, onesided):
    x = _rng().standard_normal((2, n))
    c, s = r2c_matrices(n, onesided, 1.0)
    ref = np.fft.rfft(x) if onesided else np.fft.fft(x)
    np.testing.assert_allclose(x @ c + 1j * (x @ s), ref, atol=1e-10)


@pytest.mark.parametrize("n", [2, 6, 7, 9])
def test_c2r_inverts_a_onesided_spectrum(n):
    spec = np.fft.rfft(_rng().standard_normal((2, n)))
    spec += 1j * 0.3  # imaginary parts of bin 0 (and n/2) must drop out, as numpy's do
    c, s = c2r_matrices(spec.shape[-1], n, 1.0 / n)
    np.testing.assert_allclose(spec.real @ c + spec.imag @ s, np.fft.irfft(spec, n),
                               atol=1e-10)


@pytest.mark.parametrize("k,n", [(3, 10), (6, 6), (8, 9)])
def test_c2r_shorter_or_longer_spectrum(k, n):
    """Fewer bins than n // 2 + 1 mean zeros above them; more are ignored (numpy.fft.irfft
    crops or pads the same way)."""
    spec = _rng().standard_normal((2, k)) + 1j * _rng(1).standard_normal((2, k))
    c, s = c2r_matrices(k, n, 1.0 / n)
    np.testing.assert_allclose(spec.real @ c + spec.imag @ s, np.fft.irfft(spec, n),
                               atol=1e-10)


def test_scales():
    assert scale(None, 8, True) == 1.0 and scale("backward", 8, False) == 1.0 / 8
    assert scale("forward", 8, True) == 1.0 / 8 and scale("forward", 8, False) == 1.0
    assert scale("ortho", 8, True) == scale("ortho", 8, False) == 1.0 / math.sqrt(8)
    assert [scale(m, 4, True) for m in (0, 1, 2)] == [1.0, 0.5, 0.25]
    with pytest.raises(ValueError, match="unknown FFT norm"):
        scale("half", 4, True)
    with pytest.raises(ValueError, match="normalization mode 3"):
        scale(3, 4, True)
