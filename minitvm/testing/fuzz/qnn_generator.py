"""Quantized Relay programs (``qnn.quantize`` / ``dequantize`` / ``requantize`` / ``conv2d`` /
``dense`` / ``add``, int8 and uint8, random scales and zero points) against a numpy oracle.

The generator builds each program and, on the seed's one input, its expected values at the same
time, with numpy by the quantization rules minitvm follows (``relay/qnn/op/canonicalize.py``,
TVM's QNN semantics):

* quantize: ``clip(round_half_even(x / scale) + zp)`` in float32, then the cast;
* dequantize: ``(q - zp) * scale`` in float32;
* requantize: TVM's fixed-point rule (its ``int64`` compute dtype, the default), written here
  independently of minitvm with Python integers: the scale ratio ``in_scale / out_scale`` (the
  float32 scales in float64) as ``m * 2**(e - 31)`` from ``math.frexp`` (``m`` the significand
  times 2**31 rounded half away from zero), ``((q - in_zp) << max(e, 0)) * m`` plus half of
  ``2**(31 + max(-e, 0))`` (half up, "UPWARD", TVM's default) or, below zero, one less (half
  away from zero, "TONEAREST"), floor-shifted right, plus ``out_zp``, saturated;
* conv2d / dense: int32 sums of ``(q - in_zp) * (w - w_zp)`` (padding holds the input's zero
  point, so it adds nothing);
* add: both operands requantized to the output's scale and zero point (half up, unsaturated,
  an operand already in the output's parameters as it is), summed, the output zero point
  subtracted once, saturated.

Every value is an integer or a float32 product computed the same way on both sides, so the
interpreter, relay.build + the graph executor (at the seed's opt level) and relay.vm.compile
+ the VM must give the oracle's values exactly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from .differential import Finding, compare_values, flatten

QDTYPES = ("int8", "uint8")


@dataclass
class QValue:
    """A value of the program: its Relay expression, its expected numpy value and, for a
    quantized tensor, its scale (a float32 scalar or per-channel vector), zero point and the
    channel axis of a per-channel scale."""

    expr: object
    value: np.ndarray
    scale: np.ndarray | None = None
    zp: int = 0
    axis: int = 1


@dataclass
class QnnProgram:
    """A generated quantized program, its input and the oracle's outputs."""

    seed: int
    mod: object
    inputs: list
    expected: list
    features: set = field(default_factory=set)


def _range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _scale(rng: random.Random) -> np.float32:
    """A random float32 scale; some with a short significand (12 bits), whose products by 5
    or 10 are exact (the near-tie ratios of ``requantize``)."""
    short = round(rng.uniform(0.5, 1.0) * 2 ** 12) / 2 ** 12 * 2.0 ** -rng.randint(1, 7)
    return np.float32(rng.choice([rng.uniform(0.002, 0.3), 2.0 ** -rng.randint(2, 8),
                                  rng.uniform(0.3, 2.0), short]))


def _zp(rng: random.Random, dtype: str) -> int:
    return rng.randint(-20, 20) if dtype == "int8" else rng.randint(100, 156)


def fixed_point(ratio: float) -> tuple[int, int]:
    """``ratio`` as ``(m, e)`` with ``ratio ~= m * 2**(e - 31)``: the frexp significand times
    2**31, rounded half away from zero (a carry to 2**31 halves it and raises ``e``)."""
    if ratio == 0.0:
        return 0, 0
    sig, e = math.frexp(ratio)
    m = int(math.floor(abs(sig) * 2 ** 31 + 0.5))
    if m == 2 ** 31:
        m, e = m // 2, e + 1
    return (m if sig > 0 else -m), e


def fixed_point_requant(x: int, ratio: float, rounding: str) -> int:
    """The integer ``x`` times ``ratio`` by TVM's fixed-point rule, in exact integers."""
    m, e = fixed_point(ratio)
    right = 31 + max(-e, 0)
    prod = (x << max(e, 0)) * m
    half = 1 << (right - 1)
    if rounding == "TONEAREST" and prod < 0:
        half -= 1
    return (prod + half) >> right


def _requant(q, in_scale, in_zp, out_scale, out_zp, axis, rounding, out_dtype=None):
    """The requantized values by TVM's fixed-point rule (saturated to ``out_dtype``;
    unsaturated int64 when None)."""
    q = np.asarray(q).astype("int64") - in_zp
    scales = np.asarray(in_scale, "float32").reshape(-1)
    out = np.float32(out_scale)
    chan = np.zeros(q.shape, "int64")
    if scales.size > 1:
        shape = [1] * q.ndim
        shape[axis] = scales.size
        chan = chan + np.arange(scales.size).reshape(shape)
    v = np.empty(q.shape, "int64")
    for idx in np.ndindex(q.shape):
        s = scales[chan[idx]]
        x = int(q[idx])
        v[idx] = x if s == out else fixed_point_requant(x, float(s) / float(out), rounding)
    v = v + out_zp
    if out_dtype is None:
        return v
    lo, hi = _range(out_dtype)
    return np.clip(v, lo, hi).astype(out_dtype)


def _conv2d(x, w, stride: int, pad: int) -> np.ndarray:
    """int64 NCHW x OIHW convolution of already zero-point-shifted values."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), "int64")
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


class _Builder:
    def __init__(self, seed: int):
        from minitvm import relay

        self.relay = relay
        self.rng = random.Random(seed * 7919 + 11)
        self.np_rng = np.random.default_rng(seed)
        self.features: set = set()
        self.conv = self.rng.random() < 0.6
        shape = ((1, self.rng.randint(1, 4), self.rng.randint(2, 6), self.rng.randint(2, 6))
                 if self.conv else (self.rng.randint(1, 3), self.rng.randint(1, 8)))
        self.x = relay.var("x", shape=shape, dtype="float32")
        self.data = self.np_rng.uniform(-3.0, 3.0, shape).astype("float32")

    def _const(self, v: np.ndarray):
        return self.relay.const(v, str(v.dtype))

    def quantize(self, dtype: str) -> QValue:
        from minitvm.relay import qnn

        s, zp = _scale(self.rng), _zp(self.rng, dtype)
        lo, hi = _range(dtype)
        q = np.round(self.data / s) + np.float32(zp)
        value = np.clip(q, lo, hi).astype(dtype)
        self.features.add(f"quantize {dtype}")
        return QValue(qnn.op.quantize(self.x, self._const(s), self._const(np.int32(zp)),
                                      out_dtype=dtype), value, s, zp)

    def requantize(self, v: QValue, dtype: str) -> QValue:
        from minitvm.relay import qnn

        s, zp = _scale(self.rng), _zp(self.rng, dtype)
        r = self.rng.random()
        if np.size(v.scale) == 1 and r < 0.45:
            # ratios at rounding ties: a power of two (exact ties), 2**k * 3/2 rounded to
            # float32 (products within float rounding of a tie), or 1/d for d = 2.5, 5, 10,
            # 20 exactly (float64 products land on ties the 31-bit multiplier, 0.8 * 2**31
            # rounded down, falls short of)
            base = float(np.asarray(v.scale).reshape(-1)[0])
            d = self.rng.choice([2.5, 5.0, 10.0, 20.0])
            if r >= 0.3 and float(np.float32(base * d)) == base * d:
                s = np.float32(base * d)
                self.features.add("requantize tie of 1/d")
            else:
                k = self.rng.randint(-3, 3)
                s = np.float32(base * 2.0 ** k * (1.0 if r < 0.2 else 2.0 / 3.0))
            self.features.add("requantize near tie")
        rounding = self.rng.choice(["UPWARD", "TONEAREST", "None"])
        value = _requant(v.value, v.scale, v.zp, s, zp, v.axis,
                         "UPWARD" if rounding == "None" else rounding, dtype)
        self.features.add(f"requantize {rounding}")
        expr = qnn.op.requantize(v.expr, self._const(np.asarray(v.scale, "float32")),
                                 self._const(np.int32(v.zp)), self._const(s),
                                 self._const(np.int32(zp)), axis=v.axis, rounding=rounding,
                                 out_dtype=dtype)
        return QValue(expr, value, s, zp)

    def conv2d(self, v: QValue) -> QValue:
        from minitvm.relay import qnn

        rng = self.rng
        c = v.value.shape[1]
        o, k = rng.randint(1, 4), rng.choice([1, 3])
        pad, stride = rng.choice([0, 1]) if k == 3 else 0, rng.choice([1, 1, 2])
        if v.value.shape[2] + 2 * pad < k or v.value.shape[3] + 2 * pad < k:
            pad = 1
        w = self.np_rng.integers(-127, 128, (o, c, k, k)).astype("int8")
        wzp = 0 if rng.random() < 0.5 else rng.randint(-3, 3)
        per_channel = rng.random() < 0.5
        ws = (np.asarray([_scale(rng) for _ in range(o)], "float32") if per_channel
              else np.float32(_scale(rng)))
        acc = _conv2d(v.value.astype("int64") - v.zp, w.astype("int64") - wzp, stride, pad)
        self.features.add("conv2d per-channel" if per_channel else "conv2d")
        expr = qnn.op.conv2d(v.expr, self._const(w), self._const(np.int32(v.zp)),
                             self._const(np.int32(wzp)), self._const(np.asarray(v.scale)),
                             self._const(np.asarray(ws, "float32")), kernel_size=(k, k),
                             channels=o, strides=(stride, stride), padding=(pad, pad))
        return QValue(expr, acc.astype("int32"), np.asarray(v.scale * ws, "float32"), 0, 1)

    def dense(self, v: QValue) -> QValue:
        from minitvm.relay import qnn

        rng = self.rng
        units = rng.randint(1, 6)
        w = self.np_rng.integers(-127, 128, (units, v.value.shape[1])).astype("int8")
        wzp = 0 if rng.random() < 0.5 else rng.randint(-3, 3)
        ws = np.float32(_scale(rng))
        acc = (v.value.astype("int64") - v.zp) @ (w.astype("int64") - wzp).T
        self.features.add("dense")
        expr = qnn.op.dense(v.expr, self._const(w), self._const(np.int32(v.zp)),
                            self._const(np.int32(wzp)), self._const(np.asarray(v.scale)),
                            self._const(ws), units=units)
        return QValue(expr, acc.astype("int32"), np.float32(v.scale * ws), 0, 1)

    def add(self, a: QValue, b: QValue, dtype: str) -> QValue:
        from minitvm.relay import qnn

        s, zp = _scale(self.rng), _zp(self.rng, dtype)
        total = (_requant(a.value, a.scale, a.zp, s, zp, a.axis, "UPWARD")
                 + _requant(b.value, b.scale, b.zp, s, zp, b.axis, "UPWARD") - zp)
        lo, hi = _range(dtype)
        self.features.add("add")
        expr = qnn.op.add(a.expr, b.expr, self._const(a.scale), self._const(np.int32(a.zp)),
                          self._const(b.scale), self._const(np.int32(b.zp)), self._const(s),
                          self._const(np.int32(zp)))
        return QValue(expr, np.clip(total, lo, hi).astype(a.value.dtype), s, zp)

    def build(self) -> tuple[list, list]:
        rng = self.rng
        pool = [self.quantize(rng.choice(QDTYPES))]
        for _ in range(rng.randint(1, 5)):
            v = rng.choice(pool)
            r = rng.random()
            if r < 0.35:
                acc = self.conv2d(v) if self.conv else self.dense(v)
                pool.append(self.requantize(acc, rng.choice(QDTYPES)))
            elif r < 0.6:
                pool.append(self.requantize(v, rng.choice(QDTYPES)))
            elif r < 0.8:
                same = [u for u in pool if u.value.shape == v.value.shape
                        and u.value.dtype == v.value.dtype]
                pool.append(self.add(v, rng.choice(same), str(v.value.dtype)))
            else:
                pool.append(self.quantize(rng.choice(QDTYPES)))
        outs = [pool[-1]]
        if rng.random() < 0.5:  # a dequantized output too
            v = rng.choice(pool)
            deq = (v.value.astype("int32") - np.int32(v.zp)).astype("float32") * v.scale
            self.features.add("dequantize")
            from minitvm.relay import qnn

            outs.append(QValue(qnn.op.dequantize(v.expr, self._const(v.scale),
                                                 self._const(np.int32(v.zp))),
                               deq.astype("float32")))
        return [o.expr for o in outs], [o.value for o in outs]


def generate_qnn_program(seed: int) -> QnnProgram:
    """The quantized program of ``seed`` with its input and the oracle's outputs."""
    import minitvm as tvm
    from minitvm import relay

    b = _Builder(seed)
    exprs, expected = b.build()
    body = exprs[0] if len(exprs) == 1 else relay.Tuple(exprs)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([b.x], body)))
    return QnnProgram(seed, mod, [b.data], expected, b.features)


def _results(prog: QnnProgram) -> dict:
    import minitvm as tvm
    from minitvm import relay

    from ...runtime import vm as runtime_vm
    from ...runtime.graph_executor import GraphModule
    from .differential import run_interpreter

    level = random.Random(prog.seed).randrange(4)
    out = {"interpreter": run_interpreter(prog.mod, prog.inputs)}
    with tvm.transform.PassContext(opt_level=level):
        lib = relay.build(prog.mod, target="llvm")
        exe = relay.vm.compile(prog.mod, target="llvm")
    m = GraphModule(lib["default"]())
    m.set_input("x", prog.inputs[0])
    m.run()
    out[f"relay.build+graph O{level}"] = [m.get_output(k).numpy()
                                          for k in range(m.get_num_outputs())]
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    out[f"relay.vm.compile O{level}"] = flatten(vm.run(*prog.inputs))
    return out


def check_qnn_program(prog: QnnProgram) -> list[Finding]:
    """Every executor gives the oracle's values exactly."""
    try:
        with np.errstate(all="ignore"):
            results = _results(prog)
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", "qnn", prog.seed, f"{type(err).__name__}: "
                        f"{str(err)[:400]}", prog.mod.astext())]
    found = []
    for name, got in results.items():
        diff = compare_values(prog.expected, got, rtol=0.0, atol=0.0)
        if diff:
            found.append(Finding("mismatch", name, prog.seed, diff, prog.mod.astext()))
    return found
