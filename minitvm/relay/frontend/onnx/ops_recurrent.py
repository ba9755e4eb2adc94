"""ONNX recurrent operators (RNN, GRU, LSTM) on Relay: the shared unrolling of
``frontend_common.onnx_rnn`` driven by Relay operators."""

from __future__ import annotations

from ....frontend_common.onnx_quant import dequantized_lstm_weight
from ....frontend_common.onnx_rnn import parse_spec, recurrent_inputs, unroll
from ..recurrent import RelayRecurrentOps
from .registry import CONVERTERS, Context, register


def _recurrent(kind: str):
    def convert(ctx: Context, ins, attrs):
        x, w, r, b, lens, h0, c0, p = recurrent_inputs(kind, ins)
        spec = parse_spec(kind, attrs, ctx.shape(w)[0], ctx.fail)
        if lens is not None:
            if ctx.dtype(lens) not in ("int32", "int64"):
                raise ctx.fail(f"sequence_lens must be int32, got {ctx.dtype(lens)}")
            known = ctx.maybe_value(lens)
            seq = ctx.shape(x)[1 if spec.layout else 0]
            if known is not None and (known == seq).all():
                lens = None  # every sequence is full length: no masking needed
        y, y_h, y_c = unroll(spec, RelayRecurrentOps(ctx.dtype(x)), x, w, r, b, lens,
                             h0, c0, p)
        return [y, y_h] + ([y_c] if kind == "LSTM" else [])

    return convert


for _kind in ("RNN", "GRU", "LSTM"):
    register(_kind)(_recurrent(_kind))


@register("com.microsoft.DynamicQuantizeLSTM")
def _dynamic_quantize_lstm(ctx: Context, ins, attrs):
    """What quantize_dynamic makes of an LSTM: its 8-bit weights (transposed) with their
    scales and zero points, dequantized at import (``onnx_quant.dequantized_lstm_weight``),
    then the float LSTM."""
    ins = list(ins) + [None] * (12 - len(ins))
    w, r = (ctx.const(dequantized_lstm_weight(
        ctx.maybe_value(ins[i]), None if ins[s] is None else ctx.maybe_value(ins[s]),
        None if ins[s + 1] is None else ctx.maybe_value(ins[s + 1]), what, ctx.fail))
        for i, s, what in ((1, 8, "W"), (2, 10, "R")))
    return CONVERTERS["LSTM"](ctx, [ins[0], w, r, *ins[3:8]], attrs)
