"""numpy's run of com.microsoft DynamicQuantizeLSTM the way onnxruntime computes it, for the
importer tests: per direction, the whole input quantized to uint8 once over its range with 0
(scale ``(max - min) / 255``, zero point ``round(-min / scale)``), each step's state likewise
over the batch, integer products with the 8-bit weights less the zero points, scaled back, and
the LSTM's gates in float (no peepholes, no initial state, no sequence_lens, ONNX's default
activations). Needs only numpy."""

from __future__ import annotations

import numpy as np


def quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.float32, int]:
    """(uint8 values as int64, scale, zero point) of float32 ``x`` as DynamicQuantizeLinear."""
    lo, hi = min(np.float32(x.min()), np.float32(0)), max(np.float32(x.max()), np.float32(0))
    scale = np.float32(1) if hi == lo else np.float32((hi - lo) / np.float32(255))
    zp = int(np.clip(np.round(-lo / scale), 0, 255))
    q = np.clip(np.round(x / scale) + zp, 0, 255).astype("int64")
    return q, scale, zp


def quantized_product(x, q_w, s_w, z_w) -> np.ndarray:
    """``x [m, k] . W`` for the 8-bit ``q_w`` [k, n] with scale ``s_w`` and zero point ``z_w``
    (scalars or one per column), ``x`` quantized at run time: float32 [m, n]."""
    q, s, z = quantize_rows(x)
    w = q_w.astype("int64") - np.asarray(z_w, "int64").reshape(1, -1)
    acc = (q - z) @ w  # (exact in int64)
    return acc.astype("float32") * (s * np.asarray(s_w, "float32").reshape(1, -1))


def _sigmoid(v):
    return (1 / (1 + np.exp(-v.astype("float64")))).astype("float32")


def dynamic_quantize_lstm(x, w, w_s, w_z, r, r_s, r_z, b, direction: str = "forward"):
    """(Y [seq, dirs, batch, H], Y_h, Y_c) of a DynamicQuantizeLSTM over ``x`` [seq, batch,
    input]: ``w`` [dirs, input, 4H] and ``r`` [dirs, H, 4H] 8-bit, their scales and zero points
    [dirs] or [dirs, 4H], ``b`` [dirs, 8H] (gates in ONNX's order i, o, f, c)."""
    seq, batch, _ = x.shape
    dirs = w.shape[0]
    hid = r.shape[1]
    ys, hs, cs = [], [], []
    for d in range(dirs):
        rev = direction == "reverse" or (direction == "bidirectional" and d == 1)
        sw, zw = np.reshape(w_s[d], -1), np.reshape(w_z[d], -1)
        sr, zr = np.reshape(r_s[d], -1), np.reshape(r_z[d], -1)
        xw = quantized_product(x.reshape(seq * batch, -1), w[d], sw, zw).reshape(seq, batch, -1)
        xw = xw + b[d, :4 * hid] + b[d, 4 * hid:]
        h = np.zeros((batch, hid), "float32")
        c = np.zeros((batch, hid), "float32")
        y = [None] * seq
        for t in (range(seq - 1, -1, -1) if rev else range(seq)):
            g = xw[t] + quantized_product(h, r[d], sr, zr)
            i, o, f, cc = np.split(g, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
            h = _sigmoid(o) * np.tanh(c)
            y[t] = h
        ys.append(np.stack(y))
        hs.append(h)
        cs.append(c)
    return np.stack(ys, 1), np.stack(hs), np.stack(cs)


def from_model(model, x):
    """``dynamic_quantize_lstm`` over a one-node DynamicQuantizeLSTM model's initializers
    (inputs x, w, r, b, then w_s, w_z, r_s, r_z as ``onnx_quant_cases`` names them)."""
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    node = model.graph.node[0]
    direction = next((a.s.decode() for a in node.attribute if a.name == "direction"),
                     "forward")
    return dynamic_quantize_lstm(x, inits["w"], inits["w_s"], inits["w_z"], inits["r"],
                                 inits["r_s"], inits["r_z"], inits["b"], direction)


def ort_one_thread(model, feeds) -> list:
    """onnxruntime's outputs on one thread: with more, its LSTM quantizes each thread's rows
    of the state on their own (another rounding than one thread's whole batch)."""
    from ort_int8_reference import ort_run  # (exact 8-bit products on hosts without VNNI)

    return ort_run(model, feeds, threads=1)


def with_sequence_lens(model, lens: np.ndarray):
    """A copy of a one-node (DynamicQuantize)LSTM model whose node reads ``lens`` (int32, a
    constant) as its sequence_lens."""
    from onnx import numpy_helper

    out = type(model)()
    out.CopyFrom(model)
    node = out.graph.node[0]
    ins = list(node.input) + [""] * (5 - len(node.input))
    ins[4] = "lens"
    del node.input[:]
    node.input.extend(ins)
    out.graph.initializer.append(numpy_helper.from_array(np.asarray(lens, "int32"), "lens"))
    return out


def with_states(model, rng, clip: float | None = None):
    """A copy of a one-node DynamicQuantizeLSTM (or LSTM) model (``onnx_quant_cases``) with
    constant initial_h, initial_c, peepholes and optionally ``clip``: the same ones for the
    same ``rng`` state."""
    from onnx import helper, numpy_helper

    out = type(model)()
    out.CopyFrom(model)
    node = out.graph.node[0]
    hid = next(a.i for a in node.attribute if a.name == "hidden_size")
    dirs = 2 if any(a.name == "direction" and a.s == b"bidirectional"
                    for a in node.attribute) else 1
    batch = out.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    ins = list(node.input) + [""] * (5 - len(node.input))
    ins[5:8] = ["h0", "c0", "p"]
    del node.input[:]
    node.input.extend(ins)
    for name, shape, k in (("h0", (dirs, batch, hid), 1.0), ("c0", (dirs, batch, hid), 1.0),
                           ("p", (dirs, 3 * hid), 0.3)):
        value = (rng.standard_normal(shape) * k).astype("float32")
        out.graph.initializer.append(numpy_helper.from_array(value, name))
    if clip is not None:
        node.attribute.append(helper.make_attribute("clip", clip))
    return out
