"""ONNX recurrent operators (RNN, GRU, LSTM) on Relay: the shared unrolling of
``frontend_common.onnx_rnn`` driven by Relay operators over a static sequence length, and a
loop (``recurrent.recurrent_loop``, for ``relay.vm.compile``) over a run-time one."""

from __future__ import annotations

from ....frontend_common.onnx_quant import dequantized_lstm_weight, dynamic_quantized_lstm_weights
from ....frontend_common.onnx_rnn import parse_spec, recurrent_inputs, unroll
from ..recurrent import RelayRecurrentOps, is_run_time_length, recurrent_loop
from .registry import CONVERTERS, Context, register


def _recurrent(kind: str):
    def convert(ctx: Context, ins, attrs, directions: int | None = None):
        x, w, r, b, lens, h0, c0, p = recurrent_inputs(kind, ins)
        spec = parse_spec(kind, attrs, ctx.shape(w)[0] if directions is None else directions,
                          ctx.fail)
        if lens is not None:
            if ctx.dtype(lens) not in ("int32", "int64"):
                raise ctx.fail(f"sequence_lens must be int32, got {ctx.dtype(lens)}")
            known = ctx.maybe_value(lens)
            seq = ctx.shape(x)[1 if spec.layout else 0]
            if known is not None and (known == seq).all():
                lens = None  # every sequence is full length: no masking needed
        ops = RelayRecurrentOps(ctx.dtype(x))
        if is_run_time_length(ops, x, spec.layout):  # a loop for the VM, one step a call
            y, y_h, y_c = recurrent_loop(spec, ops, x, w, r, b, lens, h0, c0, p,
                                         narrow=ctx.narrow_input)
        else:
            y, y_h, y_c = unroll(spec, ops, x, w, r, b, lens, h0, c0, p)
        return [y, y_h] + ([y_c] if kind == "LSTM" else [])

    return convert


for _kind in ("RNN", "GRU", "LSTM"):
    register(_kind)(_recurrent(_kind))
_lstm = _recurrent("LSTM")  # (called with the weights' directions when they are not tensors)


@register("com.microsoft.DynamicQuantizeLSTM")
def _dynamic_quantize_lstm(ctx: Context, ins, attrs):
    """What quantize_dynamic makes of an LSTM: its 8-bit weights (transposed) with their
    scales and zero points. On VNNI, run as onnxruntime runs it: the input and each step's
    state quantized at run time, int32 products (``onnx_quant.DynamicQuantWeight``); elsewhere,
    or with ``sequence_lens``, the float LSTM over the weights dequantized at import
    (``onnx_quant.dequantized_lstm_weight``)."""
    ins = list(ins) + [None] * (12 - len(ins))

    def value(i):
        return None if ins[i] is None else ctx.maybe_value(ins[i])

    weights = [(value(i), value(s), value(s + 1), what)
               for i, s, what in ((1, 8, "W"), (2, 10, "R"))]
    lens = value(4) if ins[4] is not None else None
    seq = ctx.shape(ins[0])[1 if attrs.get("layout", 0) else 0]
    if ctx.dtype(ins[0]) == "float32" and (ins[4] is None or (lens is not None and
                                                             (lens == seq).all())):
        quant = [dynamic_quantized_lstm_weights(*a, ctx.fail) for a in weights]
        if all(q is not None for q in quant):
            return _lstm(ctx, [ins[0], *quant, *ins[3:8]], attrs, ctx.shape(ins[1])[0])
    w, r = (ctx.const(dequantized_lstm_weight(*a, ctx.fail)) for a in weights)
    return CONVERTERS["LSTM"](ctx, [ins[0], w, r, *ins[3:8]], attrs)
