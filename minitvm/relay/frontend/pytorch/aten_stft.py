"""ATen's short-time Fourier transform (``torch.stft``) and the window factories an audio
front end builds its window with (``torch.hann_window`` / ``hamming_window`` /
``blackman_window``).

``torch.stft`` pads the signal itself (``center=True``: a reflect pad of ``n_fft // 2`` that
the trace records as its own ``pad``) and then calls ``aten::stft`` on the padded signal.
Here that call is one strided ``conv1d``: the window times the cosine and sine rows of the
one-sided DFT form ``2 * bins`` filters of ``n_fft`` taps, the hop is the stride, so the
output already has torch's (batch, frequency, frame) layout; its two halves are the real and
imaginary parts of a :class:`ComplexValue` (``aten_fft``), which ``abs`` / ``view_as_real`` /
``real`` end as real tensors.
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.complex_values import ComplexValue, handles_complex
from ....frontend_common.dft import r2c_matrices
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _is_expr, register, torch_dtype


def _window_table(kind: str, size: int, periodic: bool, alpha: float, beta: float):
    """torch's window of ``size`` points (float64): periodic divides by ``size``, symmetric
    by ``size - 1``; Hamming is ``alpha - beta * cos``."""
    if size == 1:
        return np.ones(1)
    n = np.arange(size, dtype=np.float64)
    a = 2 * np.pi * n / (size if periodic else size - 1)
    if kind == "hann":
        return 0.5 - 0.5 * np.cos(a)
    if kind == "hamming":
        return alpha - beta * np.cos(a)
    return 0.42 - 0.5 * np.cos(a) + 0.08 * np.cos(2 * a)


def _window(kind: str):
    def convert(ctx, args):
        size = args[0]
        if not isinstance(size, int | np.integer) or size < 0:
            raise ctx.fail(f"the window length must be a known non-negative int, got {size!r}")
        rest = list(args[1:])
        periodic = rest.pop(0) if rest and isinstance(rest[0], bool) else True
        alpha = beta = None
        if kind == "hamming" and rest and isinstance(rest[0], float):  # (periodic, alpha[, beta])
            alpha = rest.pop(0)
            if rest and isinstance(rest[0], float):
                beta = rest.pop(0)
        alpha = 0.54 if alpha is None else alpha
        beta = 1.0 - alpha if beta is None else beta
        dtype = torch_dtype(rest[0]) if rest and rest[0] is not None else "float32"
        table = _window_table(kind, int(size), bool(periodic), float(alpha), float(beta))
        return _expr.const(table.astype(dtype), dtype)

    return convert


register("hann_window")(_window("hann"))
register("hamming_window")(_window("hamming"))
register("blackman_window")(_window("blackman"))


def _stft_args(ctx, args):
    """(signal, n_fft, hop, win_length, window, normalized, onesided, return_complex) from
    either schema: ``stft(self, n_fft, hop, win, window, normalized, onesided, return_complex
    [, align_to_window])`` or ``stft.center(self, n_fft, hop, win, window, center, pad_mode,
    normalized, onesided, return_complex[, align_to_window])`` (its padding done here)."""
    x, n_fft, hop, win_len, window = args[:5]
    rest = list(args[5:])
    if len(rest) >= 5 and isinstance(rest[1], str):  # the center overload
        center, pad_mode = rest.pop(0), rest.pop(0)
        if center:
            x = _center_pad(ctx, x, int(n_fft), pad_mode)
    normalized = bool(rest[0]) if rest and rest[0] is not None else False
    onesided = rest[1] if len(rest) > 1 else None
    return_complex = rest[2] if len(rest) > 2 else None
    if len(rest) > 3 and rest[3]:
        raise ctx.fail("align_to_window=True is not supported")
    return x, int(n_fft), hop, win_len, window, normalized, onesided, return_complex


def _center_pad(ctx, x, n_fft: int, pad_mode: str):
    if pad_mode not in ("reflect", "constant", "replicate"):
        raise ctx.fail(f"center padding mode {pad_mode!r} is not supported")
    nd = len(ctx.shape(x))
    width = [(0, 0)] * (nd - 1) + [(n_fft // 2, n_fft // 2)]
    mode = {"reflect": "reflect", "constant": "constant", "replicate": "edge"}[pad_mode]
    return _nn.pad(x, width, pad_mode=mode)


@register("stft")
@handles_complex
def _stft(ctx, args):
    x, n_fft, hop, win_len, window, normalized, onesided, return_complex = _stft_args(ctx, args)
    if isinstance(x, ComplexValue):
        raise ctx.fail("the STFT of a complex signal is not supported")
    if onesided is False:
        raise ctx.fail("onesided=False (the full two-sided spectrum) is not supported")
    shape = ctx.shape(x)
    if len(shape) not in (1, 2):
        raise ctx.fail(f"needs a 1-D or (batch, time) signal, got shape {list(shape)}")
    hop = n_fft // 4 if hop is None else int(hop)
    win_len = n_fft if win_len is None else int(win_len)
    if not 0 < win_len <= n_fft or hop < 1 or n_fft > shape[-1]:
        raise ctx.fail(f"n_fft {n_fft}, hop {hop} and win_length {win_len} do not fit a signal "
                       f"of {shape[-1]} samples")
    dt = ctx.dtype(x)
    cos, sin = r2c_matrices(n_fft, True, n_fft ** -0.5 if normalized else 1.0)  # [n_fft, bins]
    bins = cos.shape[1]
    filters = np.concatenate([cos, sin], 1).T[:, None, :]                    # [2 bins, 1, n_fft]
    left = (n_fft - win_len) // 2
    if window is None:
        taps = np.zeros(n_fft)
        taps[left:left + win_len] = 1.0
        weight = _expr.const((filters * taps).astype(dt), dt)
    elif _is_expr(window):
        if tuple(ctx.shape(window)) != (win_len,):
            raise ctx.fail(f"the window has shape {list(ctx.shape(window))}, not "
                           f"[{win_len}] (win_length)")
        if win_len < n_fft:
            window = _nn.pad(window, [(left, n_fft - win_len - left)])
        weight = _op.multiply(_expr.const(filters.astype(dt), dt),
                              _op.reshape(_op.cast(window, dt), (1, 1, n_fft)))
    else:
        raise ctx.fail(f"the window must be a tensor or None, got {type(window).__name__}")
    signal = _op.expand_dims(x, 0 if len(shape) == 1 else 1)                 # [b, 1, n]
    if len(shape) == 1:
        signal = _op.expand_dims(signal, 0)
    spec = _nn.conv1d(signal, weight, strides=(hop,), channels=2 * bins, kernel_size=(n_fft,))
    re = _op.strided_slice(spec, [0], [bins], axes=[1])
    im = _op.strided_slice(spec, [bins], [2 * bins], axes=[1])
    if len(shape) == 1:
        re, im = _op.squeeze(re, [0]), _op.squeeze(im, [0])
    if return_complex is False:
        return _op.stack([re, im], -1)
    return ComplexValue(re, im)
