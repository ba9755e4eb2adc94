"""ONNX's recurrent operators (RNN, GRU, LSTM) unrolled over a static sequence length.

The algorithm is written once, here, against a small table of tensor operations that each
dialect supplies (``RecurrentOps``): the Relay and Relax importers pass adapters building
their own IR. Covered: forward / reverse / bidirectional, initial states, ``sequence_lens``
(steps past a sequence's length keep the state and give zero output, a reverse pass starts at
each sequence's own end), LSTM peepholes and ``input_forget``, GRU ``linear_before_reset``,
``clip``, custom activations with their alpha/beta, and ``layout=1`` (batch first)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["RecurrentOps", "RNNSpec", "parse_spec", "recurrent_inputs", "unroll"]

# gates per cell, and the activations each direction uses by default
_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
# activation -> (default alpha, default beta); None where it takes none
_ACT_PARAMS: dict[str, tuple[float | None, float | None]] = {
    "Relu": (None, None), "Tanh": (None, None), "Sigmoid": (None, None),
    "Softsign": (None, None), "Softplus": (None, None), "Affine": (1.0, 0.0),
    "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None), "ScaledTanh": (1.0, 1.0),
    "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None),
}


class RecurrentOps(Protocol):
    """The tensor operations the unrolling needs; every shape here is static."""

    def shape(self, x) -> tuple[int, ...]: ...
    def scalar(self, value: float) -> Any: ...  # a 0-d constant of the data dtype
    def unary(self, name: str, x) -> Any: ...  # sigmoid, tanh, relu, exp, log, abs
    def binary(self, name: str, a, b) -> Any: ...  # add, subtract, multiply, divide,
    # maximum, minimum, greater (numpy broadcasting)
    def where(self, cond, a, b) -> Any: ...
    def dense(self, x, w) -> Any: ...  # x [m, k] . w [n, k]^T -> [m, n]
    def reshape(self, x, shape: tuple[int, ...]) -> Any: ...
    def transpose(self, x, axes: tuple[int, ...]) -> Any: ...
    def take(self, x, index: int, axis: int) -> Any: ...  # one slice, the axis dropped
    def split(self, x, parts: int, axis: int) -> list: ...  # equal parts
    def stack(self, xs: list, axis: int) -> Any: ...
    def zeros(self, shape: tuple[int, ...]) -> Any: ...
    def reverse(self, x, axis: int) -> Any: ...
    def reverse_sequence(self, x, lens) -> Any: ...  # x [seq, batch, ...], per-batch lengths
    def step_mask(self, lens, t: int) -> Any: ...  # bool [batch, 1]: t < lens


@dataclass
class RNNSpec:
    kind: str
    hidden: int
    directions: list[str]
    activations: list[list[tuple[str, float | None, float | None]]] = field(default_factory=list)
    clip: float | None = None
    linear_before_reset: bool = False
    input_forget: bool = False
    layout: int = 0


def recurrent_inputs(kind: str, ins: list) -> tuple:
    """(X, W, R, B, sequence_lens, initial_h, initial_c, P) of a node's inputs, None where
    omitted (initial_c and P exist only for LSTM)."""
    ins = list(ins) + [None] * (8 - len(ins))
    lstm = kind == "LSTM"
    return (*ins[:6], ins[6] if lstm else None, ins[7] if lstm else None)


def unary_op(name: str) -> str:
    """The operator an ``RecurrentOps.unary`` name is in both dialects (relu lives in nn)."""
    return "nn.relu" if name == "relu" else name


def parse_spec(kind: str, attrs: dict, num_directions_w: int, fail) -> RNNSpec:
    """Check and decode a recurrent node's attributes; ``fail(msg)`` builds the error."""
    direction = attrs.get("direction", "forward")
    dirs = {"forward": ["forward"], "reverse": ["reverse"],
            "bidirectional": ["forward", "reverse"]}.get(direction)
    if dirs is None:
        raise fail(f"direction={direction!r} is not one of forward, reverse, bidirectional")
    if len(dirs) != num_directions_w:
        raise fail(f"direction={direction!r} needs {len(dirs)} weight set(s), W has "
                   f"{num_directions_w}")
    if "hidden_size" not in attrs:
        raise fail("the hidden_size attribute is required")
    per_dir = len(_DEFAULT_ACTS[kind])
    names = list(attrs.get("activations", _DEFAULT_ACTS[kind] * len(dirs)))
    if len(names) == per_dir and len(dirs) == 2:  # one list given for both directions
        names = names * 2
    if len(names) != per_dir * len(dirs):
        raise fail(f"{len(names)} activations given, {kind} with {len(dirs)} direction(s) "
                   f"takes {per_dir * len(dirs)}")
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    acts = []
    for name in names:
        canon = next((k for k in _ACT_PARAMS if k.lower() == str(name).lower()), None)
        if canon is None:
            raise fail(f"activation {name!r} is not supported (supported: "
                       f"{', '.join(sorted(_ACT_PARAMS))})")
        da, db = _ACT_PARAMS[canon]
        a = (alphas.pop(0) if alphas else da) if da is not None else None
        b = (betas.pop(0) if betas else db) if db is not None else None
        acts.append((canon, a, b))
    return RNNSpec(kind, int(attrs["hidden_size"]), dirs,
                   [acts[i * per_dir:(i + 1) * per_dir] for i in range(len(dirs))],
                   float(attrs["clip"]) if "clip" in attrs else None,
                   bool(attrs.get("linear_before_reset", 0)), bool(attrs.get("input_forget", 0)),
                   int(attrs.get("layout", 0)))


def _activate(ops: RecurrentOps, act, x):
    name, alpha, beta = act
    if name in ("Relu", "Tanh", "Sigmoid"):
        return ops.unary(name.lower(), x)
    if name == "Affine":
        return ops.binary("add", ops.binary("multiply", x, ops.scalar(alpha)), ops.scalar(beta))
    if name == "LeakyRelu":
        neg = ops.binary("minimum", x, ops.scalar(0.0))
        return ops.binary("add", ops.unary("relu", x),
                          ops.binary("multiply", neg, ops.scalar(alpha)))
    if name == "ThresholdedRelu":
        return ops.where(ops.binary("greater", x, ops.scalar(alpha)), x, ops.scalar(0.0))
    if name == "ScaledTanh":
        inner = ops.unary("tanh", ops.binary("multiply", x, ops.scalar(beta)))
        return ops.binary("multiply", inner, ops.scalar(alpha))
    if name == "HardSigmoid":
        lin = ops.binary("add", ops.binary("multiply", x, ops.scalar(alpha)), ops.scalar(beta))
        return ops.binary("maximum", ops.binary("minimum", lin, ops.scalar(1.0)),
                          ops.scalar(0.0))
    if name == "Elu":
        neg = ops.unary("exp", ops.binary("minimum", x, ops.scalar(0.0)))
        neg = ops.binary("multiply", ops.binary("subtract", neg, ops.scalar(1.0)),
                         ops.scalar(alpha))
        return ops.binary("add", ops.unary("relu", x), neg)
    if name == "Softsign":
        return ops.binary("divide", x,
                          ops.binary("add", ops.unary("abs", x), ops.scalar(1.0)))
    assert name == "Softplus"
    return ops.unary("log", ops.binary("add", ops.unary("exp", x), ops.scalar(1.0)))


def _clip(ops: RecurrentOps, spec: RNNSpec, x):
    if spec.clip is None:
        return x
    c = spec.clip
    return ops.binary("maximum", ops.binary("minimum", x, ops.scalar(c)), ops.scalar(-c))


def _direction(spec: RNNSpec, ops: RecurrentOps, d: int, steps: list, r, rb, h, c, p, lens):
    """One direction over the time steps ``steps`` (each [batch, gates*hidden]: X.W^T plus the
    biases, GRU's recurrent bias excepted). Returns (per-step outputs, last h, last c)."""
    acts = spec.activations[d]
    add, mul = (lambda a, b: ops.binary("add", a, b)), (lambda a, b: ops.binary("multiply", a, b))
    one = ops.scalar(1.0)
    r_parts = ops.split(r, _GATES[spec.kind], 0) if spec.kind == "GRU" else None
    rb_parts = ops.split(rb, _GATES[spec.kind], 0) if spec.kind == "GRU" else None
    p_parts = ops.split(p, 3, 0) if p is not None else None
    ys = []
    for t, xw in enumerate(steps):
        if spec.kind == "RNN":
            h_new = _activate(ops, acts[0], _clip(ops, spec, add(xw, ops.dense(h, r))))
            c_new = None
        elif spec.kind == "LSTM":
            g = add(xw, ops.dense(h, r))
            gi, go, gf, gc = ops.split(g, 4, 1)
            if p_parts is not None:
                gi = add(gi, mul(c, p_parts[0]))
                gf = add(gf, mul(c, p_parts[2]))
            i = _activate(ops, acts[0], _clip(ops, spec, gi))
            f = (ops.binary("subtract", one, i) if spec.input_forget
                 else _activate(ops, acts[0], _clip(ops, spec, gf)))
            cand = _activate(ops, acts[1], _clip(ops, spec, gc))
            c_new = add(mul(f, c), mul(i, cand))
            if p_parts is not None:
                go = add(go, mul(c_new, p_parts[1]))
            o = _activate(ops, acts[0], _clip(ops, spec, go))
            h_new = mul(o, _activate(ops, acts[2], c_new))
        else:  # GRU: gates z, r, h
            xz, xr, xh = ops.split(xw, 3, 1)
            z = _activate(ops, acts[0], _clip(ops, spec, add(add(
                xz, ops.dense(h, r_parts[0])), rb_parts[0])))
            rg = _activate(ops, acts[0], _clip(ops, spec, add(add(
                xr, ops.dense(h, r_parts[1])), rb_parts[1])))
            if spec.linear_before_reset:
                hh = mul(rg, add(ops.dense(h, r_parts[2]), rb_parts[2]))
            else:
                hh = add(ops.dense(mul(rg, h), r_parts[2]), rb_parts[2])
            cand = _activate(ops, acts[1], _clip(ops, spec, add(xh, hh)))
            h_new = add(mul(ops.binary("subtract", one, z), cand), mul(z, h))
            c_new = None
        if lens is not None:
            m = ops.step_mask(lens, t)
            ys.append(ops.where(m, h_new, ops.scalar(0.0)))
            h = ops.where(m, h_new, h)
            if c_new is not None:
                c = ops.where(m, c_new, c)
        else:
            ys.append(h_new)
            h, c = h_new, c_new
    return ys, h, c


def unroll(spec: RNNSpec, ops: RecurrentOps, x, w, r, b=None, lens=None, h0=None, c0=None,
           p=None) -> tuple:
    """(Y, Y_h, Y_c) of an ONNX RNN/GRU/LSTM node (Y_c is None except for LSTM).

    Shapes as in the ONNX spec: x [seq, batch, input] (layout 0), w [dirs, G*H, input],
    r [dirs, G*H, H], b [dirs, 2*G*H], h0/c0 [dirs, batch, H], p [dirs, 3*H]."""
    if spec.layout == 1:
        x = ops.transpose(x, (1, 0, 2))
        h0 = ops.transpose(h0, (1, 0, 2)) if h0 is not None else None
        c0 = ops.transpose(c0, (1, 0, 2)) if c0 is not None else None
    seq, batch, width = ops.shape(x)
    hid = spec.hidden
    gh = _GATES[spec.kind] * hid
    flat = ops.reshape(x, (seq * batch, width))
    ys_all, hs, cs = [], [], []
    for d, direction in enumerate(spec.directions):
        w_d, r_d = ops.take(w, d, 0), ops.take(r, d, 0)
        if b is not None:
            wb, rb = ops.split(ops.take(b, d, 0), 2, 0)
        else:
            wb = rb = ops.zeros((gh,))
        h = ops.take(h0, d, 0) if h0 is not None else ops.zeros((batch, hid))
        c = ops.take(c0, d, 0) if c0 is not None else ops.zeros((batch, hid))
        p_d = ops.take(p, d, 0) if p is not None and spec.kind == "LSTM" else None
        xin = flat
        if direction == "reverse":
            xr = ops.reverse_sequence(x, lens) if lens is not None else ops.reverse(x, 0)
            xin = ops.reshape(xr, (seq * batch, width))
        # the input projection of every step in one product; GRU keeps its recurrent bias
        # apart (it sits inside the reset gate's product with linear_before_reset)
        bias = wb if spec.kind == "GRU" else ops.binary("add", wb, rb)
        xw = ops.reshape(ops.binary("add", ops.dense(xin, w_d), bias), (seq, batch, gh))
        steps = [ops.take(xw, t, 0) for t in range(seq)]
        ys, h, c = _direction(spec, ops, d, steps, r_d, rb, h, c, p_d, lens)
        y = ops.stack(ys, 0)  # [seq, batch, H]
        if direction == "reverse":
            y = ops.reverse_sequence(y, lens) if lens is not None else ops.reverse(y, 0)
        ys_all.append(y)
        hs.append(h)
        cs.append(c)
    y = ops.stack(ys_all, 1)  # [seq, dirs, batch, H]
    y_h = ops.stack(hs, 0)
    y_c = ops.stack(cs, 0) if spec.kind == "LSTM" else None
    if spec.layout == 1:
        y = ops.transpose(y, (2, 0, 1, 3))
        y_h = ops.transpose(y_h, (1, 0, 2))
        y_c = ops.transpose(y_c, (1, 0, 2)) if y_c is not None else None
    return y, y_h, y_c
