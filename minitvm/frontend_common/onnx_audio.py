"""What the Relay and Relax ONNX importers share of the audio front-end ops: the window tables
(``HannWindow``, ``HammingWindow``, ``BlackmanWindow``), ``MelWeightMatrix`` and the plan of
``STFT``, which reuses ``DFT``'s constant matrices with the window folded into their rows.

STFT of a signal [b, n, 1 or 2] with frames of ``length`` points every ``step``::

    frames = x[:, f * step + t]                 a gather with a constant [frames, length] index
    out_re = re @ (w * rr) + im @ (w * ir)      one product per part, w the window
    out_im = re @ (w * ri) + im @ (w * ii)

Everything here is numpy; the windows and the mel matrix are constants at import."""

from __future__ import annotations

import numpy as np

from .dft import OnnxDftPlan, onnx_dft_plan

__all__ = ["window", "mel_weight_matrix", "StftPlan", "stft_plan", "node_scalar",
           "window_node_table", "mel_node_table"]


def window(kind: str, size: int, periodic: bool) -> np.ndarray:
    """ONNX's ``HannWindow`` / ``HammingWindow`` / ``BlackmanWindow`` of ``size`` points
    (float64): the periodic form divides by ``size``, the symmetric one by ``size - 1``."""
    n = np.arange(size, dtype=np.float64)
    denom = size if periodic else size - 1
    a = 2 * np.pi * n / denom if denom else np.zeros(size)
    if kind == "hann":
        return np.sin(a / 2) ** 2
    if kind == "hamming":
        alpha = 25.0 / 46.0
        return alpha - (1 - alpha) * np.cos(a)
    if kind == "blackman":
        return 0.42 - 0.5 * np.cos(a) + 0.08 * np.cos(2 * a)
    raise ValueError(f"unknown window {kind!r}")


def mel_weight_matrix(num_mel_bins: int, dft_length: int, sample_rate: int,
                      lower_hz: float, upper_hz: float) -> np.ndarray:
    """ONNX's ``MelWeightMatrix`` [dft_length // 2 + 1, num_mel_bins] (float64): triangles
    with peak 1 between mel-spaced edges, each edge rounded down to a DFT bin, as the onnx
    reference computes them (its mel step divides the range by ``num_mel_bins + 2``)."""
    bins = dft_length // 2 + 1
    edges = np.arange(num_mel_bins + 2)
    low = 2595 * np.log1p(lower_hz / 700) / np.log(10)
    high = 2595 * np.log1p(upper_hz / 700) / np.log(10)
    step = (high - low) / edges.shape[0]
    hz = 700 * np.expm1((edges * step + low) / 2595 * np.log(10))
    edges = (((dft_length + 1) * hz) // sample_rate).astype(int)
    out = np.zeros((bins, num_mel_bins))
    for i in range(num_mel_bins):
        lo, mid, hi = edges[i], edges[i + 1], edges[i + 2]
        if mid == lo:
            out[mid, i] = 1.0
        else:
            j = np.arange(lo, mid + 1)
            out[j, i] = (j - lo) / (mid - lo)
        if hi > mid:
            j = np.arange(mid, hi)
            out[j, i] = (hi - j) / (hi - mid)
    return out


class StftPlan:
    """``frames`` [n_frames, length] (int64 indices into the signal axis) and the DFT ``dft``
    plan of one frame (its matrices scaled by the window when it is known at import)."""

    __slots__ = ("frames", "dft")

    def __init__(self, frames: np.ndarray, dft: OnnxDftPlan):
        self.frames, self.dft = frames, dft


def stft_plan(signal_shape, step: int, length: int | None, win: np.ndarray | None,
              win_len: int | None, onesided: bool, fail) -> StftPlan:
    """The plan of ``STFT`` on a signal of ``signal_shape`` [b, n, 1 or 2]; ``win`` is the
    window's value when known (folded into the matrices), ``win_len`` its length otherwise."""
    if len(signal_shape) != 3 or signal_shape[-1] not in (1, 2):
        raise fail(f"the signal must be [batch, length, 1 or 2] (or [batch, length], real), "
                   f"got {list(signal_shape)}")
    n = signal_shape[1]
    if not isinstance(n, int | np.integer):
        raise fail(f"the signal length must be static, got {n}")
    n = int(n)
    if win is not None:
        win_len = len(win)
    if length is None:
        length = n if win_len is None else win_len
    if win_len is not None and win_len != length:
        raise fail(f"the window has {win_len} points but frame_length is {length}")
    if step < 1 or not 1 <= length <= n:
        raise fail(f"frame_step {step} and frame_length {length} do not fit a signal of {n}")
    count = 1 + (n - length) // step
    frames = np.arange(count)[:, None] * step + np.arange(length)[None, :]
    shape = (signal_shape[0], count, length, signal_shape[-1])
    plan = onnx_dft_plan(shape, 2, False, onesided, None, fail)
    if win is not None:
        w = np.asarray(win, np.float64)[:, None]
        plan = OnnxDftPlan(plan.axis, *(None if m is None else m * w
                                         for m in (plan.rr, plan.ir, plan.ri, plan.ii)))
    return StftPlan(frames.astype("int64"), plan)


def node_scalar(ctx, v, what: str):
    """The import-time scalar value of input ``v`` (``ctx.value``: either importer's)."""
    return np.asarray(ctx.value(v, what)).reshape(-1)[0]


def window_node_table(ctx, ins, attrs, kind: str) -> np.ndarray:
    """The table of the window node ``ctx`` converts (HannWindow, ...): its size input, its
    ``periodic`` attribute; a negative size is an error."""
    size = int(node_scalar(ctx, ins[0], f"{ctx.node.op_type}'s size"))
    if size < 0:
        raise ctx.fail(f"the window size must be non-negative, got {size}")
    return window(kind, size, bool(attrs.get("periodic", 1)))


def mel_node_table(ctx, ins) -> np.ndarray:
    """The table of the MelWeightMatrix node ``ctx`` converts, its five inputs checked."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
             "upper_edge_hertz")
    mel, n_fft, rate, lo, hi = (node_scalar(ctx, v, f"MelWeightMatrix's {w}")
                                for v, w in zip(ins[:5], names, strict=True))
    if int(mel) < 1 or int(n_fft) < 1 or int(rate) < 1 or not 0 <= float(lo) < float(hi):
        raise ctx.fail(f"invalid mel bins {mel}, dft_length {n_fft}, sample_rate {rate} or "
                       f"edges [{lo}, {hi}] Hz")
    return mel_weight_matrix(int(mel), int(n_fft), int(rate), float(lo), float(hi))
