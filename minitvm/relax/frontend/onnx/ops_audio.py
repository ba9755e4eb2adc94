"""ONNX's audio front-end ops on Relax: ``STFT`` (frames gathered with a constant index, the
window folded into ``DFT``'s constant matrices, one matmul per part; the batch may be
symbolic) and the constant tables ``HannWindow``, ``HammingWindow``, ``BlackmanWindow`` and
``MelWeightMatrix`` (``frontend_common.onnx_audio``), constants at import."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_audio import (
    mel_node_table,
    node_scalar,
    stft_plan,
    window_node_table,
)
from ... import op as _op
from ...expr import const
from .context import Context, onnx_dtype, register
from .ops_signal import _combine


@register("STFT")
def _stft(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    shape = ctx.shape(x)
    if len(shape) == 2:  # [batch, length]: a real signal without its trailing axis (ORT
        x = ctx.emit(_op.expand_dims(x, 2))  # takes it; torch's exporter writes it so)
        shape = (*shape, 1)
    step = int(node_scalar(ctx, ins[1], "STFT's frame_step"))
    win = ins[2] if len(ins) > 2 else None
    length = ins[3] if len(ins) > 3 else None
    length = None if length is None else int(node_scalar(ctx, length, "STFT's frame_length"))
    known = ctx.known(win)
    win_len = None if win is None else ctx.shape(win)[0]
    plan = stft_plan(shape, step, length, known, win_len, bool(attrs.get("onesided", 1)),
                     ctx.fail)
    idx = const(plan.frames)
    parts = []
    for i in range(shape[-1]):  # [b, n] -> frames [b, F, L], times a run-time window
        part = ctx.emit(_op.take(x, const(np.array(i, "int64")), axis=2))
        part = ctx.emit(_op.take(part, idx, axis=1))
        if win is not None and known is None:
            part = ctx.emit(_op.multiply(part, ctx.expr(win)))
        parts.append(part)
    re, im = parts[0], parts[1] if len(parts) > 1 else None
    d = plan.dft
    out_re = _combine(ctx, [(re, d.rr), (im, d.ir)], 2)
    out_im = _combine(ctx, [(re, d.ri), (im, d.ii)], 2)
    return ctx.emit(_op.stack([out_re, out_im], 3))


def _table(table: np.ndarray, attrs):
    """A constant table in the node's ``output_datatype`` (float by default); the dtype is
    given explicitly, as ``const`` would otherwise narrow a float64 array to float32."""
    dtype = onnx_dtype(int(attrs.get("output_datatype", 1)))
    return const(table.astype(dtype), dtype)


def _window(kind: str):
    def convert(ctx: Context, ins, attrs):
        table = window_node_table(ctx, ins, attrs, kind)
        return _table(table, attrs)

    return convert


register("HannWindow")(_window("hann"))
register("HammingWindow")(_window("hamming"))
register("BlackmanWindow")(_window("blackman"))


@register("MelWeightMatrix")
def _mel_weight_matrix(ctx: Context, ins, attrs):
    table = mel_node_table(ctx, ins)
    return _table(table, attrs)
