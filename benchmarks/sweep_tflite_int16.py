"""How far the TFLite importer's int16 ("16x8": int16 activations, int8 weights) operators are
from LiteRT's own integers: a random sweep (shapes, scales, seeds) per op, each model built
with ``ModelBuilder`` and run by minitvm and by the LiteRT interpreter (builtin kernels, no
delegate). Prints, per op, the values a step or more off, their share and the largest
difference.

    python benchmarks/sweep_tflite_int16.py [--cases N] [--seed S] [OP ...]

Needs ``tflite`` and ``ai_edge_litert``."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from minitvm import relay
from minitvm.relay.frontend.tflite.builder import ModelBuilder

I16 = (-32768, 32767)


def _inputs(x) -> list[np.ndarray]:
    """A case's inputs: one array (named ``x``) or a tuple of them (``x``, ``x2``, ...)."""
    return list(x) if isinstance(x, tuple) else [x]


def _names(n: int) -> list[str]:
    return ["x"] + [f"x{i + 1}" for i in range(1, n)]


def _litert(blob: bytes, x) -> np.ndarray:
    from ai_edge_litert import interpreter as litert

    it = litert.Interpreter(
        model_content=blob, num_threads=1,
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), _inputs(x), strict=True):
        it.set_tensor(d["index"], v)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _ours(blob: bytes, x) -> np.ndarray:
    import minitvm as tvm
    from minitvm.contrib import graph_executor

    mod, params = relay.frontend.from_tflite(blob)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    xs = _inputs(x)
    for name, v in zip(_names(len(xs)), xs, strict=True):
        m.set_input(name, v)
    m.run()
    return m.get_output(0).numpy()


def _f32(v) -> float:
    return float(np.float32(v))


def _input(rng, shape, spread: float) -> np.ndarray:
    """int16 values, mostly within ``spread`` of the range (activations rarely fill it)."""
    v = rng.normal(0, spread * 32767 / 3, shape)
    return np.clip(np.round(v), *I16).astype("int16")


def _unary(op, shape, qi, qo, options=None, **fields) -> bytes:
    b = ModelBuilder()
    x = b.input("x", shape, "int16", quant=qi)
    y = b.tensor("y", shape, "int16", quant=qo)
    b.operator(op, [x], [y], options, **fields)
    b.output(y)
    return b.finish()


def conv_case(rng, depthwise: bool = False):
    h, w = (int(v) for v in rng.integers(3, 10, 2))
    c = int(rng.integers(1, 20))
    mult = int(rng.integers(1, 3)) if depthwise else 1
    o = c * mult if depthwise else int(rng.integers(1, 24))
    k = int(rng.choice([1, 3, 5]))
    stride = int(rng.integers(1, 3))
    si = _f32(10 ** rng.uniform(-5, -3))
    so = _f32(10 ** rng.uniform(-4.5, -2.5))
    ws = (10 ** rng.uniform(-3, -1.5, o)).astype("float32")
    wshape = (1, k, k, o) if depthwise else (o, k, k, c)
    wt = rng.integers(-127, 128, wshape).astype("int8")
    act = int(rng.choice([0, 1, 3]))
    b = ModelBuilder()
    x = b.input("x", (1, h, w, c), "int16", quant=(si, 0))
    wi = b.constant("w", wt, quant=(ws, np.zeros(o, "int64"), 3 if depthwise else 0))
    bs = (np.float32(si) * ws).astype("float32")
    bias = b.constant("b", rng.integers(-2**20, 2**20, o).astype("int64"),
                      quant=(bs, np.zeros(o, "int64"), 0))
    pad = int(rng.integers(0, 2))  # 0 SAME, 1 VALID
    if pad == 1 and (h < k or w < k):
        pad = 0
    oh = -(-h // stride) if pad == 0 else (h - k) // stride + 1
    ow = -(-w // stride) if pad == 0 else (w - k) // stride + 1
    y = b.tensor("y", (1, oh, ow, o), "int16", quant=(so, 0))
    fields = {"Padding": pad, "StrideW": stride, "StrideH": stride, "DilationWFactor": 1,
              "DilationHFactor": 1, "FusedActivationFunction": act}
    if depthwise:
        b.operator("DEPTHWISE_CONV_2D", [x, wi, bias], [y], "DepthwiseConv2DOptions",
                   DepthMultiplier=mult, **fields)
    else:
        b.operator("CONV_2D", [x, wi, bias], [y], "Conv2DOptions", **fields)
    b.output(y)
    return b.finish(), _input(rng, (1, h, w, c), rng.uniform(0.3, 1.0))


def fully_connected_case(rng):
    n, k, units = int(rng.integers(1, 5)), int(rng.integers(4, 300)), int(rng.integers(1, 40))
    si = _f32(10 ** rng.uniform(-5, -3))
    so = _f32(10 ** rng.uniform(-4.5, -2.5))
    ws = _f32(10 ** rng.uniform(-3, -1.5))
    b = ModelBuilder()
    x = b.input("x", (n, k), "int16", quant=(si, 0))
    wi = b.constant("w", rng.integers(-127, 128, (units, k)).astype("int8"), quant=(ws, 0))
    bias = b.constant("b", rng.integers(-2**20, 2**20, units).astype("int64"),
                      quant=(_f32(np.float32(si) * np.float32(ws)), 0))
    y = b.tensor("y", (n, units), "int16", quant=(so, 0))
    b.operator("FULLY_CONNECTED", [x, wi, bias], [y], "FullyConnectedOptions",
               FusedActivationFunction=int(rng.choice([0, 1])), KeepNumDims=False)
    b.output(y)
    return b.finish(), _input(rng, (n, k), rng.uniform(0.3, 1.0))


def average_pool_case(rng):
    h, w, c = int(rng.integers(3, 12)), int(rng.integers(3, 12)), int(rng.integers(1, 20))
    k, stride, pad = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(0, 2))
    oh = -(-h // stride) if pad == 0 else (h - k) // stride + 1
    ow = -(-w // stride) if pad == 0 else (w - k) // stride + 1
    s = _f32(10 ** rng.uniform(-4, -2))
    b = ModelBuilder()
    x = b.input("x", (1, h, w, c), "int16", quant=(s, 0))
    y = b.tensor("y", (1, oh, ow, c), "int16", quant=(s, 0))
    b.operator("AVERAGE_POOL_2D", [x], [y], "Pool2DOptions", Padding=pad, StrideW=stride,
               StrideH=stride, FilterWidth=k, FilterHeight=k,
               FusedActivationFunction=int(rng.choice([0, 1, 3])))
    b.output(y)
    return b.finish(), _input(rng, (1, h, w, c), 1.0)


def softmax_case(rng):
    shape = (int(rng.integers(1, 6)), int(rng.integers(2, 300)))
    si = _f32(10 ** rng.uniform(-4.5, -2.5))
    beta = float(rng.choice([1.0, 0.5, 2.0]))
    blob = _unary("SOFTMAX", shape, (si, 0), (1 / 32768, 0), "SoftmaxOptions", Beta=beta)
    return blob, _input(rng, shape, rng.uniform(0.05, 1.0))


def _binary_case(op):
    """int16 ADD / SUB of two inputs at random scales: same shapes (LiteRT's elementwise
    kernel) or the second broadcast along rows; pot_scale_int16 on or off (LiteRT takes its
    general-scale kernel either way at these scales)."""
    def case(rng):
        shape = (int(rng.integers(1, 64)), int(rng.integers(1, 512)))
        shape2 = (1, shape[1]) if rng.uniform() < 0.3 else shape
        s1, s2 = (_f32(v) for v in 10 ** rng.uniform(-5, -2, 2))
        so = _f32(max(s1, s2) * 10 ** rng.uniform(-0.3, 0.7))
        b = ModelBuilder()
        x = b.input("x", shape, "int16", quant=(s1, 0))
        x2 = b.input("x2", shape2, "int16", quant=(s2, 0))
        y = b.tensor("y", shape, "int16", quant=(so, 0))
        b.operator(op, [x, x2], [y], f"{op.title()}Options",
                   FusedActivationFunction=int(rng.choice([0, 0, 1, 3])),
                   PotScaleInt16=bool(rng.integers(2)))
        b.output(y)
        return b.finish(), (_input(rng, shape, rng.uniform(0.05, 1.0)),
                            _input(rng, shape2, rng.uniform(0.05, 1.0)))
    return case


def gelu_case(rng):
    """int16 GELU (erf or tanh form) at random input and output scales."""
    shape = (int(rng.integers(1, 8)), int(rng.integers(1, 300)))
    si = _f32(10 ** rng.uniform(-4.5, -2.5))
    so = _f32(si * 10 ** rng.uniform(-0.8, 0.3))
    blob = _unary("GELU", shape, (si, 0), (so, 0), "GeluOptions",
                  Approximate=bool(rng.integers(2)))
    return blob, _input(rng, shape, 1.0)


def _lut_case(op):
    """int16 LOG / EXP at random input and output scales (EXP's inputs below about 1.5 so
    its outputs fit)."""
    def case(rng):
        shape = (int(rng.integers(1, 8)), int(rng.integers(1, 300)))
        si = _f32(10 ** rng.uniform(-4.5, -3.5 if op == "EXP" else -2.5))
        so = _f32(10 ** rng.uniform(-4.5, -2.5))
        return _unary(op, shape, (si, 0), (so, 0)), _input(rng, shape, 1.0)
    return case


def _activation_case(op):
    def case(rng):
        shape = (int(rng.integers(1, 8)), int(rng.integers(1, 300)))
        if rng.uniform() < 0.4:  # power-of-two input scales (LiteRT's fixed-point path)
            si = 2.0 ** int(rng.integers(-15, -10))
        else:
            si = _f32(10 ** rng.uniform(-4.5, -3))
        blob = _unary(op, shape, (si, 0), (1 / 32768, 0))
        return blob, _input(rng, shape, 1.0)
    return case


CASES = {
    "CONV_2D": conv_case,
    "DEPTHWISE_CONV_2D": lambda rng: conv_case(rng, depthwise=True),
    "FULLY_CONNECTED": fully_connected_case,
    "AVERAGE_POOL_2D": average_pool_case,
    "SOFTMAX": softmax_case,
    "LOGISTIC": _activation_case("LOGISTIC"),
    "TANH": _activation_case("TANH"),
    "GELU": gelu_case,
    "LOG": _lut_case("LOG"),
    "EXP": _lut_case("EXP"),
    "ADD": _binary_case("ADD"),
    "SUB": _binary_case("SUB"),
}


def sweep(op: str, cases: int, seed: int = 0) -> tuple[int, int, int]:
    """(values off, values, largest difference) over ``cases`` random models of ``op``."""
    off = total = worst = 0
    for k in range(cases):
        rng = np.random.default_rng([seed, k, sum(map(ord, op))])
        blob, x = CASES[op](rng)
        want = _litert(blob, x).astype("int64")
        got = _ours(blob, x).astype("int64")
        d = np.abs(got - want)
        off, total, worst = off + int((d > 0).sum()), total + d.size, max(worst, int(d.max()))
    return off, total, worst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ops", nargs="*", default=list(CASES))
    ap.add_argument("--cases", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"{'op':<20} {'off':>8} {'values':>8} {'percent':>8} {'max steps':>9}")
    for op in args.ops:
        off, total, worst = sweep(op, args.cases, args.seed)
        print(f"{op:<20} {off:>8} {total:>8} {100 * off / total:>7.2f}% {worst:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
