"""ONNX recurrent operators (RNN, GRU, LSTM) on Relay: the shared unrolling of
``frontend_common.onnx_rnn`` driven by Relay operators."""

from __future__ import annotations

from ....frontend_common.onnx_rnn import parse_spec, recurrent_inputs, unroll
from ..recurrent import RelayRecurrentOps
from .registry import Context, register


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
