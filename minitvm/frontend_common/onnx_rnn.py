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

from .onnx_quant import DynamicQuantWeight

__all__ = ["RecurrentOps", "RNNSpec", "RowStep", "direction_cell", "direction_weight",
           "gate_width", "parse_spec", "recurrent_inputs", "unroll", "unroll_direction"]

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
    def take_row(self, x, index: int, axis: int) -> Any: ...  # one slice, the axis kept (size
    # 1), the index a tensor: one program whatever the index
    def split(self, x, parts: int, axis: int) -> list: ...  # equal parts
    def slice(self, x, begin: list[int], end: list[int], strides: list[int]) -> Any: ...
    # x[begin:end:strides] on the leading len(begin) axes
    def concat(self, xs: list, axis: int) -> Any: ...
    def stack(self, xs: list, axis: int) -> Any: ...
    def zeros(self, shape: tuple[int, ...]) -> Any: ...
    def reverse(self, x, axis: int) -> Any: ...
    def reverse_sequence(self, x, lens) -> Any: ...  # x [seq, batch, ...], per-batch lengths
    def step_mask(self, lens, t: int) -> Any: ...  # bool [batch, 1]: t < lens
    def dynamic_quantized_dense(self, x, w: DynamicQuantWeight) -> Any: ...  # x [m, k] float
    # quantized at run time, its int32 product with w's 8-bit weight scaled back: [m, n]


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
    # where each gate's rows sit in W / R / B: positions of (i, o, f, c) for LSTM and of
    # (z, r, h) for GRU; ONNX's own order by default (PyTorch: LSTM (0, 3, 1, 2), GRU (1, 0, 2))
    gate_order: tuple[int, ...] | None = None

    def gate(self, k: int) -> int:
        return k if self.gate_order is None else self.gate_order[k]


def gate_width(spec: RNNSpec) -> int:
    """The columns of a step's projection: every gate's ``hidden`` of them."""
    return _GATES[spec.kind] * spec.hidden


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


class _Step:
    """Slices of one time step: the step's rows of the input projection, a gate's columns."""

    def __init__(self, spec: RNNSpec, ops: RecurrentOps, xw, seq: int, batch: int,
                 batch_major: bool):
        self.spec, self.ops = spec, ops
        self.seq, self.batch, self.hid = seq, batch, spec.hidden
        self.width = _GATES[spec.kind] * spec.hidden
        self.axis = 1 if batch_major else 0  # the time axis of xw3
        self.xw3 = ops.reshape(xw, (batch, seq, self.width) if batch_major
                               else (seq, batch, self.width))

    def cols(self, k: int) -> tuple[int, int]:
        """Gate ``k``'s columns in a [rows, G*H] product."""
        return _gate_cols(self.spec, k)

    def x(self, t: int, k: int | None = None):
        """Step ``t``'s rows of the projection ([batch, H]: gate ``k``'s columns, or all).
        Each call builds its own row read, so each fuses into its one consumer; the step is an
        index tensor, so every step's kernels are one program."""
        row = self.ops.take_row(self.xw3, t, self.axis)
        if k is not None:
            lo, hi = self.cols(k)
            end = [1, self.batch] if self.axis == 0 else [self.batch, 1]
            row = self.ops.slice(row, [0, 0, lo], end + [hi], [1, 1, 1])
        return self.ops.reshape(row, (self.batch, self.hid if k is not None else self.width))

    def gate(self, g, k: int, packed: bool = False):
        """Gate ``k``'s columns of a per-step [batch, n*H] product: where W / R hold it, or
        the ``k``-th block when ``packed``."""
        lo, hi = (k * self.hid, (k + 1) * self.hid) if packed else self.cols(k)
        return self.ops.slice(g, [0, lo], [self.batch, hi], [1, 1])


def unroll_direction(spec: RNNSpec, ops: RecurrentOps, d: int, x2d, seq: int, batch: int, w, r,
                     wb=None, rb=None, h=None, c=None, p=None, lens=None, reverse: bool = False,
                     batch_major: bool = False, proj=None) -> tuple[list, Any, Any]:
    """One direction of one recurrent layer, the way fast RNN implementations run it: the input
    projection of every step in one product ``x2d . W^T + biases``, then per step only the
    recurrent product ``h . R^T`` and elementwise gate arithmetic. Every gate slice is used
    once, so FuseOps turns an LSTM step into three kernels (the product, the cell state, the
    output), a GRU step (``linear_before_reset``) into two.

    ``x2d`` is [seq*batch, input], rows ``t*batch + b`` (or ``b*seq + t`` when
    ``batch_major``); ``w`` [G*H, input], ``r`` [G*H, H], ``wb`` / ``rb`` [G*H], ``h`` / ``c``
    [batch, H] and ``p`` [3H] (None where absent: zero). ``reverse`` runs from the last step
    down (with ``lens`` the caller reverses each sequence instead and passes it forward).
    ``proj`` [P, H] (an LSTM with projections, PyTorch's ``proj_size``) maps each step's output
    to ``h . proj^T``, the state carried on: ``r`` is then [4H, P] and ``h`` [batch, P].
    Returns (the step outputs in time order, the last h, the last c)."""
    xw, cell = direction_cell(spec, ops, d, x2d, w, r, wb, rb, p, proj)
    st = _Step(spec, ops, xw, seq, batch, batch_major)
    ys: list = [None] * seq
    for i, t in enumerate(range(seq - 1, -1, -1) if reverse else range(seq)):
        mask = ops.step_mask(lens, i) if lens is not None else None
        ys[t], h, c = cell(st, t, h, c, mask)
    return ys, h, c


class RowStep(_Step):
    """``_Step``'s reads from one step's projection row ``[batch, G*H]`` given at once (the
    body of a loop over a run-time number of steps, which reads its row itself)."""

    def __init__(self, spec: RNNSpec, ops: RecurrentOps, row, batch: int):
        self.spec, self.ops, self.row = spec, ops, row
        self.batch, self.hid = batch, spec.hidden
        self.width = _GATES[spec.kind] * spec.hidden

    def x(self, t, k: int | None = None):
        if k is None:
            return self.row
        lo, hi = self.cols(k)
        return self.ops.slice(self.row, [0, lo], [self.batch, hi], [1, 1])


def direction_cell(spec: RNNSpec, ops: RecurrentOps, d: int, x2d, w, r, wb=None, rb=None,
                   p=None, proj=None):
    """``(xw, cell)`` of one direction (arguments as ``unroll_direction``'s): the input
    projection ``[rows, G*H]`` with its biases, and ``cell(st, t, h, c, mask)`` -> ``(y, h,
    c)``, one step reading its projection through ``st`` (a ``_Step`` at step ``t`` or a
    ``RowStep``); with a bool ``[batch, 1]`` ``mask``, masked-out rows keep their state and
    give zero output. ``h`` / ``c`` None stand for zeros."""
    kind, hid = spec.kind, spec.hidden
    add, mul = (lambda a, b: ops.binary("add", a, b)), (lambda a, b: ops.binary("multiply", a, b))
    xw = _product(ops, x2d, w)
    # the projection takes both biases, except the recurrent bias of a GRU's h gate (it sits
    # inside the reset gate's product, or the reset-scaled product)
    rb_h = None
    if rb is not None and kind == "GRU":
        parts = ops.split(rb, 3, 0)
        rb_h = parts[spec.gate(2)]
        rb = ops.concat([ops.zeros((hid,)) if k == spec.gate(2) else parts[k] for k in range(3)],
                        0)
    bias = rb if wb is None else wb if rb is None else add(wb, rb)
    if bias is not None:
        xw = add(xw, bias)
    acts = spec.activations[d]

    def act(k, x):
        return _activate(ops, acts[k], _clip(ops, spec, x))

    if kind == "GRU" and not spec.linear_before_reset:  # z and r first, then (r * h) . R_h
        rows = [ops.slice(r, [lo], [hi], [1]) for lo, hi in
                (_gate_cols(spec, 0), _gate_cols(spec, 1))]
        lo_h, hi_h = _gate_cols(spec, 2)
        r_zr, r_h = ops.concat(rows, 0), ops.slice(r, [lo_h], [hi_h], [1])
    p_parts = ops.split(p, 3, 0) if p is not None else None
    one = ops.scalar(1.0)

    def cell(st, t, h, c, mask=None):
        def pre(k, g, packed=False):  # a gate's pre-activation: projection + recurrent product
            xk = st.x(t, k)
            return xk if g is None else add(xk, st.gate(g, k, packed))

        if kind == "RNN":
            g = st.x(t) if h is None else add(st.x(t), _product(ops, h, r))
            h_new, c_new = act(0, g), None
        elif kind == "LSTM":  # gates i, o, f, c
            g = _product(ops, h, r) if h is not None else None
            gi, go, gf, gc = (pre(k, g) for k in range(4))
            if p_parts is not None and c is not None:
                gi = add(gi, mul(c, p_parts[0]))
                gf = add(gf, mul(c, p_parts[2]))
            ig = act(0, gi)
            c_new = mul(ig, act(1, gc))
            if c is not None:
                f = ops.binary("subtract", one, ig) if spec.input_forget else act(0, gf)
                c_new = add(mul(f, c), c_new)
            if p_parts is not None:
                go = add(go, mul(c_new, p_parts[1]))
            h_new = mul(act(0, go), _activate(ops, acts[2], c_new))
            if proj is not None:
                h_new = ops.dense(h_new, proj)
        elif spec.linear_before_reset:  # GRU: gates z, r, h
            g = ops.dense(h, r) if h is not None else None
            z, rg = act(0, pre(0, g)), act(0, pre(1, g))
            hh = st.gate(g, 2) if g is not None else None
            hh = rb_h if hh is None else hh if rb_h is None else add(hh, rb_h)
            cand = act(1, st.x(t, 2) if hh is None else add(st.x(t, 2), mul(rg, hh)))
            h_new, c_new = _gru_out(ops, one, z, cand, h), None
        else:
            g = ops.dense(h, r_zr) if h is not None else None
            z, rg = act(0, pre(0, g, True)), act(0, pre(1, g, True))
            hh = ops.dense(mul(rg, h), r_h) if h is not None else None
            hh = rb_h if hh is None else hh if rb_h is None else add(hh, rb_h)
            cand = act(1, st.x(t, 2) if hh is None else add(st.x(t, 2), hh))
            h_new, c_new = _gru_out(ops, one, z, cand, h), None
        if mask is None:
            return h_new, h_new, c_new
        zero = ops.scalar(0.0)
        y = ops.where(mask, h_new, zero)
        h = ops.where(mask, h_new, zero if h is None else h)
        if c_new is not None:
            c = ops.where(mask, c_new, zero if c is None else c)
        return y, h, c

    return xw, cell


def _gate_cols(spec: RNNSpec, k: int) -> tuple[int, int]:
    """Gate ``k``'s columns in a [rows, G*H] product (its rows in W / R)."""
    pos = spec.gate(k)
    return pos * spec.hidden, (pos + 1) * spec.hidden


def _product(ops: RecurrentOps, x, w):
    """``x . w^T``: ``w`` a float [n, k] tensor, or a ``DynamicQuantWeight`` (the rows
    quantized at run time, as onnxruntime's DynamicQuantizeLSTM runs)."""
    if isinstance(w, DynamicQuantWeight):
        return ops.dynamic_quantized_dense(x, w)
    return ops.dense(x, w)


def direction_weight(ops: RecurrentOps, w, d: int):
    """Direction ``d``'s weight: of a [dirs, ...] tensor, or of a list of
    ``DynamicQuantWeight`` (one per direction)."""
    return w[d] if isinstance(w, list) else ops.take(w, d, 0)


def weights_input_size(ops: RecurrentOps, w) -> int | None:
    """The input size a recurrent layer's ``W`` fixes (``[dirs, G*H, input]``: its last axis;
    a ``DynamicQuantWeight``'s rows), or None when that is not static either: the input's
    last axis when the importer knows it at run time only."""
    if isinstance(w, list):
        return int(w[0].plan.weight.shape[0])
    size = ops.shape(w)[-1]
    return size if type(size) is int else None


def direction_params(spec: RNNSpec, ops: RecurrentOps, d: int, w, r, b=None, p=None) -> tuple:
    """Direction ``d``'s ``(w, r, wb, rb, p)``: its input and recurrent weights
    (``direction_weight``), its two biases (halves of ``b[d]``; None without ``b``) and its
    LSTM peepholes (None otherwise): what every way of running a direction starts from."""
    wb = rb = None
    if b is not None:
        wb, rb = ops.split(ops.take(b, d, 0), 2, 0)
    p_d = ops.take(p, d, 0) if p is not None and spec.kind == "LSTM" else None
    return direction_weight(ops, w, d), direction_weight(ops, r, d), wb, rb, p_d


def _gru_out(ops: RecurrentOps, one, z, cand, h):
    """(1 - z) * cand + z * h."""
    if h is None:
        return ops.binary("multiply", ops.binary("subtract", one, z), cand)
    return ops.binary("add", ops.binary("multiply", ops.binary("subtract", one, z), cand),
                      ops.binary("multiply", z, h))


def unroll(spec: RNNSpec, ops: RecurrentOps, x, w, r, b=None, lens=None, h0=None, c0=None,
           p=None) -> tuple:
    """(Y, Y_h, Y_c) of an ONNX RNN/GRU/LSTM node (Y_c is None except for LSTM).

    Shapes as in the ONNX spec: x [seq, batch, input] (layout 0; layout 1 swaps seq and batch
    in x, Y, and batch and dirs in the states), w [dirs, G*H, input], r [dirs, G*H, H],
    b [dirs, 2*G*H], h0/c0 [dirs, batch, H], p [dirs, 3*H]. An LSTM's (or RNN's) ``w`` and
    ``r`` may instead be lists of ``DynamicQuantWeight``, one per direction (a
    DynamicQuantizeLSTM's, its rows quantized at run time)."""
    bm = spec.layout == 1
    reversed_lens = lens is not None and "reverse" in spec.directions
    if bm and reversed_lens:  # reverse_sequence works on [seq, batch, ...]
        x, bm = ops.transpose(x, (1, 0, 2)), False
    seq, batch, width = ops.shape(x) if not bm else (lambda s: (s[1], s[0], s[2]))(ops.shape(x))
    flat = ops.reshape(x, (seq * batch, width))
    state_axis = 1 if spec.layout == 1 else 0
    ys_all, hs, cs = [], [], []
    for d, direction in enumerate(spec.directions):
        w_d, r_d, wb, rb, p_d = direction_params(spec, ops, d, w, r, b, p)
        h = ops.take(h0, d, state_axis) if h0 is not None else None
        c = ops.take(c0, d, state_axis) if c0 is not None and spec.kind == "LSTM" else None
        rev = direction == "reverse"
        xin = flat
        if rev and lens is not None:  # each sequence from its own end: reversed, run forward
            xin = ops.reshape(ops.reverse_sequence(x, lens), (seq * batch, width))
        ys, h, c = unroll_direction(spec, ops, d, xin, seq, batch, w_d, r_d, wb, rb, h, c, p_d,
                                    lens, rev and lens is None, bm)
        if rev and lens is not None:
            ys = ops.reverse_sequence(ops.stack(ys, 0), lens)
        ys_all.append(ys)
        hs.append(h if h is not None else ops.zeros((batch, spec.hidden)))
        if spec.kind == "LSTM":  # (only an LSTM has a cell state to return)
            cs.append(c if c is not None else ops.zeros((batch, spec.hidden)))
    ndir, hid = len(spec.directions), spec.hidden
    if reversed_lens:  # some directions are [seq, batch, H] tensors already
        y = ops.stack([v if not isinstance(v, list) else ops.stack(v, 0) for v in ys_all], 1)
        if spec.layout == 1:
            y = ops.transpose(y, (2, 0, 1, 3))
    else:  # one stack of every (step, direction) output
        items = [ys_all[d][t] for t in range(seq) for d in range(ndir)]
        if spec.layout == 1:
            y = ops.reshape(ops.stack(items, 1), (batch, seq, ndir, hid))
        else:
            y = ops.reshape(ops.stack(items, 0), (seq, ndir, batch, hid))
    y_h = ops.stack(hs, state_axis)
    y_c = ops.stack(cs, state_axis) if spec.kind == "LSTM" else None
    return y, y_h, y_c
