"""ONNX recurrent operators (RNN, GRU, LSTM) on Relax: the shared unrolling of
``frontend_common.onnx_rnn`` driven by Relax operators. Weights known at import (the
initializers) are sliced and transposed in numpy, so only the per-step products are emitted.
A reverse direction reverses each sequence by a gather (of indices computed at import when
``sequence_lens`` is known then, at run time otherwise). A static sequence length is unrolled;
a symbolic one runs as a loop (``recurrent_loop``: a recursive function, one step a call). The
batch may be symbolic."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import dequantized_lstm_weight, dynamic_quantized_lstm_weights
from ....frontend_common.onnx_rnn import parse_spec, recurrent_inputs, unary_op, unroll
from ... import op as _op
from ...expr import TupleGetItem, const
from ..common import dynamic_quantize_uint8
from .context import CONVERTERS, Context, register
from .recurrent_loop import recurrent_loop, run_time_reverse

# products folded in numpy when both sides are known at import (weights, biases)
_NP_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}


def _numeric(v) -> bool:
    return isinstance(v, np.ndarray) and v.dtype != object


class RelaxRecurrentOps:
    """``RecurrentOps`` on Relax: known arrays stay numpy, everything else is emitted."""

    def __init__(self, ctx: Context, dtype: str):
        self.ctx = ctx
        self.dtype = dtype
        # id(weight) -> (the weight, its constants): a numpy weight's transpose, a
        # DynamicQuantWeight's set (the weight kept so that its id is not reused)
        self._consts: dict[int, tuple] = {}

    def _weight_consts(self, w):
        """One set of constants per weight, every step reading it: (weight, column sums,
        row-sum weight or None, scale). (A constant a step would be a copy a step.)"""
        got = self._consts.get(id(w))
        if got is None:
            plan = w.plan
            got = self._consts[id(w)] = (
                w, const(plan.weight), const(plan.column_sums),
                None if plan.row_sum_weight is None else const(plan.row_sum_weight),
                const(w.scale))
        return got[1:]

    def _e(self, v):
        return self.ctx.expr(v)

    def shape(self, x):
        """The dims; the batch may be symbolic (the caller checks the sequence is static)."""
        return tuple(self.ctx.shape(x))

    def static_shape(self, x, why: str):
        dims = self.ctx.shape(x)
        if not all(isinstance(d, int) for d in dims):
            raise self.ctx.fail(f"{why} needs static dims, got {dims}")
        return tuple(dims)

    def scalar(self, value):
        return np.array(value, self.dtype)

    def unary(self, name, x):
        name = unary_op(name)
        fn = getattr(_op.nn, name[3:]) if name.startswith("nn.") else getattr(_op, name)
        return self.ctx.emit(fn(self._e(x)))

    def binary(self, name, a, b):
        if _numeric(a) and _numeric(b) and name in _NP_BINARY:
            return _NP_BINARY[name](a, b).astype(self.dtype)
        return self.ctx.emit(getattr(_op, name)(self._e(a), self._e(b)))

    def where(self, cond, a, b):
        return self.ctx.emit(_op.where(self._e(cond), self._e(a), self._e(b)))

    def dense(self, x, w):
        if _numeric(x) and _numeric(w):
            return (x @ w.T).astype(self.dtype)
        if _numeric(w):  # one transposed constant per weight, every step reading it
            got = self._consts.get(id(w))
            if got is None:
                got = self._consts[id(w)] = (w, self.ctx.expr(np.ascontiguousarray(w.T)))
            wt = got[1]
        else:
            wt = _op.permute_dims(self._e(w))
        return self.ctx.emit(_op.matmul(self._e(x), self._e(wt)))

    def reshape(self, x, shape):
        if _numeric(x):
            return x.reshape(shape)
        return self.ctx.emit(_op.reshape(self._e(x), self.ctx.shape_expr(shape)))

    def transpose(self, x, axes):
        if _numeric(x):
            return np.ascontiguousarray(x.transpose(axes))
        return self.ctx.emit(_op.permute_dims(self._e(x), list(axes)))

    def take(self, x, index, axis):
        if _numeric(x):
            return np.ascontiguousarray(np.take(x, index, axis))
        return self.ctx.emit(_op.take(self._e(x), const(np.array(index, "int64")), axis))

    def take_row(self, x, index, axis):
        if _numeric(x):
            return np.ascontiguousarray(np.take(x, [index], axis))
        return self.ctx.emit(_op.take(self._e(x), const(np.array([index], "int64")), axis))

    def split(self, x, parts, axis):
        if _numeric(x):
            return [np.ascontiguousarray(p) for p in np.split(x, parts, axis)]
        tup = self.ctx.emit(_op.split(self._e(x), parts, axis))
        return [self.ctx.emit(TupleGetItem(tup, i)) for i in range(parts)]

    def slice(self, x, begin, end, strides):
        if _numeric(x):
            return np.ascontiguousarray(x[tuple(slice(b, e, s) for b, e, s in
                                                zip(begin, end, strides, strict=True))])
        # a symbolic end is the whole (batch) extent: that axis is not sliced
        kept = [i for i, e in enumerate(end) if isinstance(e, int)]
        if not kept:
            return x
        return self.ctx.emit(_op.strided_slice(self._e(x), kept, [begin[i] for i in kept],
                                               [end[i] for i in kept],
                                               [strides[i] for i in kept]))

    def concat(self, xs, axis):
        if all(_numeric(v) for v in xs):
            return np.concatenate(xs, axis)
        return self.ctx.emit(_op.concat([self._e(v) for v in xs], axis))

    def stack(self, xs, axis):
        return self.ctx.emit(_op.concat([self.ctx.emit(_op.expand_dims(self._e(v), axis))
                                         for v in xs], axis))

    def zeros(self, shape):
        if all(isinstance(d, int) for d in shape):
            return np.zeros(shape, self.dtype)
        return self.ctx.emit(_op.zeros(self.ctx.shape_expr(shape), self.dtype))

    def reverse(self, x, axis):
        n = self.static_shape(x, "a reverse direction")[axis]
        return self.ctx.emit(_op.take(self._e(x), const(np.arange(n - 1, -1, -1,
                                                                  dtype="int64")), axis))

    def reverse_sequence(self, x, lens):
        known = self.ctx.known(lens)
        if known is None:  # lengths known at run time: a gather of indices computed then
            return run_time_reverse(self.ctx, self._e(x), lens)
        shape = self.static_shape(x, "a reverse direction with sequence_lens")
        seq, batch = shape[0], shape[1]
        t = np.arange(seq)[:, None]
        ln = known.astype("int64")[None, :]
        src = np.where(t < ln, ln - 1 - t, t) * batch + np.arange(batch)[None, :]
        flat = self.ctx.emit(_op.reshape(self._e(x), self.ctx.shape_expr(
            [seq * batch] + list(shape[2:]))))
        out = self.ctx.emit(_op.take(flat, const(src.reshape(-1).astype("int64")), 0))
        return self.ctx.emit(_op.reshape(out, self.ctx.shape_expr(shape)))

    def step_mask(self, lens, t):
        t_ = const(np.array(t, self.ctx.dtype(lens)))
        return self.ctx.emit(_op.expand_dims(self.ctx.emit(_op.less(t_, self._e(lens))), 1))

    def dynamic_quantized_dense(self, x, w):
        """``DynamicQuantWeight``'s product: ``x`` quantized to uint8 over its range with 0
        (as ``DynamicQuantizeLinear``), the int32 VNNI matmul less the zero point's shares
        (``MatmulVnniPlan``), scaled by ``s_x * w.scale``."""
        emit, x = self.ctx.emit, self._e(x)
        weight, column_sums, row_sum_weight, w_scale = self._weight_consts(w)
        q, scale, zp = dynamic_quantize_uint8(self.ctx, x, "float32")
        y = emit(_op.matmul(q, weight, out_dtype="int32"))
        if row_sum_weight is not None:
            sums = emit(_op.sum(_op.astype(q, "int32"), axis=[-1], keepdims=True))
            y = emit(_op.subtract(y, _op.multiply(sums, row_sum_weight)))
        y = emit(_op.subtract(y, _op.multiply(_op.astype(zp, "int32"), column_sums)))
        return emit(_op.multiply(_op.astype(y, "float32"), _op.multiply(scale, w_scale)))


def _recurrent(kind: str):
    def convert(ctx: Context, ins, attrs, directions: int | None = None):
        x, w, r, b, lens, h0, c0, p = recurrent_inputs(kind, ins)
        spec = parse_spec(kind, attrs, ctx.shape(w)[0] if directions is None else directions,
                          ctx.fail)
        seq = ctx.shape(x)[1 if spec.layout else 0]
        ops = RelaxRecurrentOps(ctx, ctx.dtype(x))
        if not isinstance(seq, int):  # a loop over the run-time length
            y, y_h, y_c = recurrent_loop(ctx, spec, ops, x, w, r, b, lens, h0, c0, p)
            return [y, y_h] + ([y_c] if kind == "LSTM" else [])
        if lens is not None:
            known = ctx.known(lens)
            if known is not None and (known == seq).all():
                lens = None  # every sequence is full length: no masking needed
        y, y_h, y_c = unroll(spec, ops, x, w, r, b, lens, h0, c0, p)
        return [ctx.expr(y), ctx.expr(y_h)] + ([ctx.expr(y_c)] if kind == "LSTM" else [])

    return convert


for _kind in ("RNN", "GRU", "LSTM"):
    register(_kind)(_recurrent(_kind))
_lstm = _recurrent("LSTM")  # (called with the weights' directions when they are not tensors)


@register("com.microsoft.DynamicQuantizeLSTM")
def _dynamic_quantize_lstm(ctx: Context, ins, attrs):
    """What quantize_dynamic makes of an LSTM: its 8-bit weights (transposed) with their
    scales and zero points. On VNNI, run as onnxruntime runs it: the input and each step's
    state quantized at run time, int32 products (``onnx_quant.DynamicQuantWeight``); elsewhere,
    or with ``sequence_lens`` not all full, the float LSTM over the weights dequantized at
    import (``onnx_quant.dequantized_lstm_weight``)."""
    ins = list(ins) + [None] * (12 - len(ins))
    weights = [(ctx.known(ins[i]), ctx.known(ins[s]), ctx.known(ins[s + 1]), what)
               for i, s, what in ((1, 8, "W"), (2, 10, "R"))]
    lens = ctx.known(ins[4]) if ins[4] is not None else None
    seq = ctx.shape(ins[0])[1 if attrs.get("layout", 0) else 0]
    if ctx.dtype(ins[0]) == "float32" and (ins[4] is None or (
            lens is not None and lens.dtype != object and (lens == seq).all())):
        quant = [dynamic_quantized_lstm_weights(*a, ctx.fail) for a in weights]
        if all(q is not None for q in quant):
            return _lstm(ctx, [ins[0], *quant, *ins[3:8]], attrs, ctx.shape(ins[1])[0])
    w, r = (dequantized_lstm_weight(*a, ctx.fail) for a in weights)
    return CONVERTERS["LSTM"](ctx, [ins[0], w, r, *ins[3:8]], attrs)
