"""ONNX's audio front-end ops on Relay: ``STFT`` (frames gathered with a constant index, the
window folded into ``DFT``'s constant matrices, one dense product per part) and the constant
tables ``HannWindow``, ``HammingWindow``, ``BlackmanWindow`` and ``MelWeightMatrix``
(``frontend_common.onnx_audio``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_audio import mel_weight_matrix, stft_plan, window
from ... import op as _op
from .ops_signal import _combine
from .registry import onnx_dtype, register


def _scalar(ctx, v, what: str):
    return np.asarray(ctx.value(v, what)).reshape(-1)[0]


@register("STFT")
def _stft(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    step = int(_scalar(ctx, ins[1], "STFT's frame_step"))
    win = ins[2] if len(ins) > 2 else None
    length = ins[3] if len(ins) > 3 else None
    length = None if length is None else int(_scalar(ctx, length, "STFT's frame_length"))
    known = None if win is None else ctx.maybe_value(win)
    win_len = None if win is None else ctx.shape(win)[0]
    plan = stft_plan(shape, step, length, known, win_len, bool(attrs.get("onesided", 1)),
                     ctx.fail)
    idx = ctx.const(plan.frames)
    parts = []
    for i in range(shape[-1]):  # [b, n] -> frames [b, F, L], times a run-time window
        part = _op.take(_op.take(x, ctx.const(i, "int64"), axis=2), idx, axis=1)
        if win is not None and known is None:
            part = _op.multiply(part, win)
        parts.append(part)
    re, im = parts[0], parts[1] if len(parts) > 1 else None
    d = plan.dft
    out_re = _combine(ctx, [(re, d.rr), (im, d.ir)], 2)
    out_im = _combine(ctx, [(re, d.ri), (im, d.ii)], 2)
    return _op.stack([out_re, out_im], 3)


def _window(kind: str):
    def convert(ctx, ins, attrs):
        size = int(_scalar(ctx, ins[0], f"{ctx.node.op_type}'s size"))
        if size < 0:
            raise ctx.fail(f"the window size must be non-negative, got {size}")
        table = window(kind, size, bool(attrs.get("periodic", 1)))
        return ctx.const(table.astype(onnx_dtype(int(attrs.get("output_datatype", 1)))))

    return convert


register("HannWindow")(_window("hann"))
register("HammingWindow")(_window("hamming"))
register("BlackmanWindow")(_window("blackman"))


@register("MelWeightMatrix")
def _mel_weight_matrix(ctx, ins, attrs):
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
             "upper_edge_hertz")
    mel, n_fft, rate, lo, hi = (_scalar(ctx, v, f"MelWeightMatrix's {w}")
                                for v, w in zip(ins[:5], names, strict=True))
    if int(mel) < 1 or int(n_fft) < 1 or int(rate) < 1 or not 0 <= float(lo) < float(hi):
        raise ctx.fail(f"invalid mel bins {mel}, dft_length {n_fft}, sample_rate {rate} or "
                       f"edges [{lo}, {hi}] Hz")
    table = mel_weight_matrix(int(mel), int(n_fft), int(rate), float(lo), float(hi))
    return ctx.const(table.astype(onnx_dtype(int(attrs.get("output_datatype", 1)))))
