"""ATen's recurrent layers: ``lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu`` (``nn.LSTM``,
``nn.GRU``, ``nn.RNN``, every layer and direction) and the cells ``lstm_cell`` / ``gru_cell`` / ``rnn_tanh_cell`` / ``rnn_relu_cell``
(``nn.LSTMCell`` and kin, called once a step by a decoder loop). Both unroll through
``frontend_common.onnx_rnn``, the ONNX importers' recurrence, with PyTorch's gate order."""

from __future__ import annotations

import dataclasses

import numpy as np

from ....frontend_common.onnx_rnn import parse_spec, unroll_direction
from ... import expr as _expr
from ... import op as _op
from ..recurrent import RelayRecurrentOps
from .aten import register

# PyTorch's gate order in W / R / B, as positions of ONNX's (i, o, f, c) and (z, r, h)
_TORCH_GATES = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2)}
# the plain RNN's gates (one: W / R are [H, in] / [H, H]) and its nonlinearity by ATen op
_PLAIN_RNN = {"rnn_tanh": "Tanh", "rnn_relu": "Relu"}


@register("lstm", "gru", *_PLAIN_RNN)
def _rnn(ctx, args):
    """aten::lstm / gru / rnn_tanh / rnn_relu (the ``.input`` overloads): the shared unrolling
    of ``frontend_common.onnx_rnn`` per layer and direction (one input projection per layer
    and direction, then the recurrent product and the gate arithmetic per step); ``nn.RNN``
    is ONNX's RNN with its ``nonlinearity`` as the activation of every direction."""
    kind = ctx.op_name
    x, hx, params, has_biases, layers, _, _, bidir, batch_first = args[:9]
    if not isinstance(params, list | tuple):
        raise ctx.fail("packed (PackedSequence) inputs are not supported")
    h0, c0 = (hx[0], hx[1]) if kind == "lstm" else (hx, None)
    dirs = 2 if bidir else 1
    per = 4 if has_biases else 2
    if kind == "lstm" and len(params) == (per + 1) * dirs * int(layers):
        per += 1  # proj_size: each set ends with the projection weight_hr [P, H]
    elif len(params) != per * dirs * int(layers):
        raise ctx.fail(f"{len(params)} weights for {layers} layer(s) of {dirs} direction(s) "
                       f"{'with' if has_biases else 'without'} biases")
    proj = per in (3, 5)
    hid = int(ctx.shape(params[0])[0]) // {"lstm": 4, "gru": 3}.get(kind, 1)
    out_width = int(ctx.shape(params[1])[1])  # the hidden size, or proj_size
    attrs = {"hidden_size": hid, "direction": "bidirectional" if bidir else "forward",
             "linear_before_reset": 1}
    if kind in _PLAIN_RNN:
        attrs["activations"] = [_PLAIN_RNN[kind]] * dirs
        spec = parse_spec("RNN", attrs, dirs, ctx.fail)
    else:
        spec = dataclasses.replace(parse_spec(kind.upper(), attrs, dirs, ctx.fail),
                                   gate_order=_TORCH_GATES[kind])
    ops = RelayRecurrentOps(ctx.dtype(x))
    s = ctx.shape(x)
    seq, batch = (s[1], s[0]) if batch_first else (s[0], s[1])
    bf = bool(batch_first)
    x2d = _op.reshape(x, (seq * batch, s[2]))  # rows b*seq + t when batch first, else t*batch + b

    def pick(v, i):  # None for a zero state (torch's default): the first step skips it
        if v is None or (isinstance(v, _expr.Constant) and not v.data.numpy().any()):
            return None
        return _op.take(v, _expr.const(np.array(i, "int64")), axis=0)

    hn, cn = [], []
    for layer in range(int(layers)):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            b_ih, b_hh = (params[k + 2], params[k + 3]) if has_biases else (None, None)
            ys, h, c = unroll_direction(spec, ops, d, x2d, seq, batch, params[k], params[k + 1],
                                        b_ih, b_hh, pick(h0, layer * dirs + d),
                                        pick(c0, layer * dirs + d), reverse=d == 1,
                                        batch_major=bf,
                                        proj=params[k + per - 1] if proj else None)
            outs.append(ys)
            hn.append(h)
            cn.append(c)
        steps = outs[0] if dirs == 1 else [_op.concatenate([a, b], -1)
                                           for a, b in zip(*outs, strict=True)]
        y = _op.stack(steps, 1 if bf else 0)  # [seq, batch, dirs*H] or batch first
        x2d = _op.reshape(y, (seq * batch, dirs * out_width))
    h_n = _op.stack(hn, 0)
    return (y, h_n, _op.stack(cn, 0)) if kind == "lstm" else (y, h_n)


# an ATen cell op -> (ONNX recurrent kind, its activations): one step of ``unroll_direction``
_CELLS = {"lstm_cell": ("LSTM", None), "gru_cell": ("GRU", None),
          "rnn_tanh_cell": ("RNN", ["Tanh"]), "rnn_relu_cell": ("RNN", ["Relu"])}


@register(*_CELLS)
def _rnn_cell(ctx, args):
    """aten::lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell (``nn.LSTMCell`` and kin, as
    a decoder loop calls them once per step): one step of the shared unrolling, so a cell
    computes what one time step of ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` does. lstm_cell
    returns (h, c), the others h."""
    kind, acts = _CELLS[ctx.op_name]
    x, hx, w_ih, w_hh = args[:4]
    b_ih, b_hh = (args[4], args[5]) if len(args) > 5 else (None, None)
    h, c = (hx[0], hx[1]) if kind == "LSTM" else (hx, None)
    gates = int(ctx.shape(w_ih)[0])
    attrs = {"hidden_size": gates // {"LSTM": 4, "GRU": 3, "RNN": 1}[kind],
             "linear_before_reset": 1}
    if acts is not None:
        attrs["activations"] = acts
    spec = parse_spec(kind, attrs, 1, ctx.fail)
    if kind != "RNN":
        spec = dataclasses.replace(spec, gate_order=_TORCH_GATES[kind.lower()])
    ops = RelayRecurrentOps(ctx.dtype(x))
    _, h, c = unroll_direction(spec, ops, 0, x, 1, int(ctx.shape(x)[0]), w_ih, w_hh, b_ih,
                               b_hh, h, c)
    return (h, c) if kind == "LSTM" else h
