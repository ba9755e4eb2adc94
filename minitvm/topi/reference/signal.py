"""Numpy references of device_copy (an identity on the host), the Relay VM helpers vm.shape_of,
vm.reshape_tensor and vm.update_row, and the signal ops dft and stft in TVM's semantics (dft
over the last axis of (re, im); stft as (..., freq, frames, [re, im]))."""

from __future__ import annotations

import numpy as np

from ..utils import reference

__all__ = ["dft_np", "stft_np"]


@reference("device_copy")
def _device_copy(attrs, args, out_type):
    return args[0]


def dft_np(re, im, inverse: bool):
    """DFT (or the unnormalized-forward / 1/N inverse) of re + i im along the last axis."""
    z = re.astype(np.float64) + 1j * im.astype(np.float64)
    out = np.fft.ifft(z, axis=-1) if inverse else np.fft.fft(z, axis=-1)
    return out.real.astype(re.dtype), out.imag.astype(re.dtype)


@reference("dft")
def _dft(attrs, args, out_type):
    return dft_np(args[0], args[1], bool(attrs.inverse))


def stft_np(data, window, n_fft, hop_length, win_length, normalized, onesided):
    """Short-time Fourier transform of 1-D or (batch, T) signals as TVM's kernel computes it:
    frame c starts at c * hop_length; bin k sums window[w] * x[c * hop + w] *
    exp(-2 pi i k w / win_length) over the win_length samples; normalized divides by
    sqrt(n_fft). Returns (batch?, freqs, frames, [re, im])."""
    x = data.astype(np.float64)
    squeeze = x.ndim == 1
    x = x[None] if squeeze else x
    frames = 1 + (x.shape[1] - n_fft) // hop_length
    freqs = n_fft // 2 + 1 if onesided else n_fft
    idx = np.arange(frames)[:, None] * hop_length + np.arange(win_length)[None, :]
    seg = x[:, idx] * window.astype(np.float64)  # (batch, frames, win_length)
    k = np.arange(freqs)[:, None] * np.arange(win_length)[None, :]
    basis = np.exp(-2j * np.pi * k / win_length)  # (freqs, win_length)
    spec = np.einsum("bfw,kw->bkf", seg, basis)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    out = np.stack([spec.real, spec.imag], axis=-1)
    return (out[0] if squeeze else out).astype(data.dtype)


@reference("stft")
def _stft(attrs, args, out_type):
    data, window = args
    return stft_np(data, window, int(attrs.n_fft), int(attrs.hop_length),
                   int(attrs.win_length), bool(attrs.normalized), bool(attrs.onesided))


# ------------------------------------------------------------------ Relay VM helpers
@reference("vm.shape_of")
def _vm_shape_of(attrs, args, out_type):
    return np.array(np.shape(args[0]), dtype=out_type.dtype)


@reference("vm.update_row")
def _vm_update_row(attrs, args, out_type):
    data, row, index = args
    k = int(np.asarray(index))
    if not 0 <= k < data.shape[0]:
        raise IndexError(f"vm.update_row: row {k} of a tensor of {data.shape[0]} rows")
    out = np.array(data, copy=True)  # (a copy: the VM's in-place write needs no other use)
    out[k] = row
    return out


@reference("vm.reshape_tensor")
def _vm_reshape_tensor(attrs, args, out_type):
    return np.reshape(args[0], tuple(int(s) for s in attrs.newshape))
