"""Damaged TFLite flatbuffers through ``relay.frontend.from_tflite``: a clear error or a model
that builds and runs.

Three valid seed models are written with ``tflite.builder.ModelBuilder`` (a float conv /
add / reshape chain, an int8 quantized add / fully-connected graph, a float mean / softmax /
concatenation graph) and damaged one way each: an operator's input or output index, a
subgraph input or output index out of range; a constant whose buffer is shorter or longer
than its shape; a tensor of an unknown element type; a quantization with a zero, negative,
NaN or infinite scale, a zero point out of its dtype's range, or per-channel scales whose
count does not match the channels; an unknown builtin or custom opcode; an operator with too
few inputs; and at the byte level the file truncated, bytes overwritten, or the identifier
broken. A refusal must be a ``ValueError`` / ``TypeError`` naming the operator or the
tensor; an accepted model is built at opt_level 3 and run (no TFLite interpreter is a
dependency, so an accepted model's values are not checked). Needs ``tflite``.
"""

from __future__ import annotations

import random

import numpy as np

from .damage import DamageCase

__all__ = ["cases", "seed_builders", "DAMAGES"]


def _conv():
    from ...relay.frontend.tflite.builder import ModelBuilder

    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 2))
    w = b.constant("w", rng.standard_normal((3, 3, 3, 2)).astype("float32"))
    bias = b.constant("bias", rng.standard_normal(3).astype("float32"))
    c = b.tensor("conv", (1, 6, 6, 3))
    b.operator("CONV_2D", [x, w, bias], [c], "Conv2DOptions", Padding=0, StrideH=1,
               StrideW=1, DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=1)
    k = b.constant("k", rng.standard_normal((1, 6, 6, 3)).astype("float32"))
    a = b.tensor("add", (1, 6, 6, 3))
    b.operator("ADD", [c, k], [a], "AddOptions", FusedActivationFunction=0)
    shape = b.constant("shape", np.array([1, 108], "int32"))
    y = b.tensor("y", (1, 108))
    b.operator("RESHAPE", [a, shape], [y], "ReshapeOptions", NewShape=[1, 108])
    b.output(y)
    return b


def _quantized():
    from ...relay.frontend.tflite.builder import ModelBuilder

    rng = np.random.default_rng(1)
    b = ModelBuilder()
    x = b.input("x", (2, 8), "int8", quant=(0.05, 3))
    k = b.constant("k", rng.integers(-20, 20, (2, 8)).astype("int8"), quant=(0.04, -2))
    s = b.tensor("sum", (2, 8), "int8", quant=(0.1, 0))
    b.operator("ADD", [x, k], [s], "AddOptions", FusedActivationFunction=0)
    w = b.constant("w", rng.integers(-60, 60, (4, 8)).astype("int8"),
                   quant=(np.array([0.02, 0.03, 0.01, 0.04], "float32"), np.zeros(4), 0))
    bias = b.constant("bias", rng.integers(-100, 100, 4).astype("int32"),
                      quant=(np.array([0.002, 0.003, 0.001, 0.004], "float32"), np.zeros(4), 0))
    y = b.tensor("y", (2, 4), "int8", quant=(0.2, -1))
    b.operator("FULLY_CONNECTED", [s, w, bias], [y], "FullyConnectedOptions",
               FusedActivationFunction=0)
    f = b.tensor("yf", (2, 4), "float32")
    b.operator("DEQUANTIZE", [y], [f])
    b.output(f)
    return b


def _reduce():
    from ...relay.frontend.tflite.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("x", (2, 3, 4))
    axes = b.constant("axes", np.array([2], "int32"))
    m = b.tensor("mean", (2, 3, 1))
    b.operator("MEAN", [x, axes], [m], "ReducerOptions", KeepDims=True)
    sm = b.tensor("softmax", (2, 3, 4))
    b.operator("SOFTMAX", [x], [sm], "SoftmaxOptions", Beta=1.0)
    y = b.tensor("y", (2, 3, 5))
    b.operator("CONCATENATION", [sm, m], [y], "ConcatenationOptions", Axis=2,
               FusedActivationFunction=0)
    b.output(y)
    return b


def seed_builders() -> dict:
    """Name -> a function giving a fresh ``ModelBuilder`` of a valid model."""
    return {"conv": _conv, "quantized": _quantized, "reduce": _reduce}


def _inputs(b) -> dict:
    rng = np.random.default_rng(2)
    out = {}
    for t in b.inputs:
        name, shape, dtype, _ = b.tensors[t]
        out[name] = rng.integers(-100, 100, shape).astype(dtype) if dtype.startswith("int") \
            else rng.standard_normal(shape).astype(dtype)
    return out


# ------------------------------------------------------------------ damages (on the builder)
def _op_index(b, rng):
    k = rng.randrange(len(b.ops))
    code, ins, outs, opts, fields, custom = b.ops[k]
    side = rng.choice(["in", "out"])
    bad = rng.choice([len(b.tensors), len(b.tensors) + 50, 2 ** 30, -7])
    lst = ins if side == "in" else outs
    lst[rng.randrange(len(lst))] = bad
    return (b.opcodes[code], "tensor", "index", str(bad))


def _graph_index(b, rng):
    bad = rng.choice([len(b.tensors), len(b.tensors) + 9, -3])
    if rng.random() < 0.5:
        b.inputs[0] = bad
    else:
        b.outputs[0] = bad
    return ("tensor", "index", "input", "output", str(bad))


def _buffer_size(b, rng):
    consts = [i for i, t in enumerate(b.tensors) if t[3]]
    t = rng.choice(consts)
    name, _, _, buf = b.tensors[t]
    data = b.buffers[buf]
    b.buffers[buf] = data[:rng.randrange(1, max(len(data) - 1, 2))] if rng.random() < 0.6 \
        else data + bytes(rng.randrange(1, 9))
    return (name,)


def _tensor_type(b, rng):
    t = rng.randrange(len(b.tensors))
    name, shape, _, buf = b.tensors[t]
    b.tensors[t] = (name, shape, "__bogus__", buf)
    return (name, "type")


def _bad_scale(b, rng):
    qs = list(b.quant) or [b.inputs[0]]
    t = rng.choice(qs)
    scale, zp, dim = b.quant.get(t, (np.ones(1, "float32"), np.zeros(1, "int64"), 0))
    bad = rng.choice([0.0, -0.5, float("nan"), float("inf")])
    scale = scale.copy()
    scale[rng.randrange(scale.size)] = bad
    b.quant[t] = (scale.astype("float32"), zp, dim)
    return (b.tensors[t][0], "scale")


def _bad_zero_point(b, rng):
    qs = list(b.quant) or [b.inputs[0]]
    t = rng.choice(qs)
    scale, zp, dim = b.quant.get(t, (np.ones(1, "float32"), np.zeros(1, "int64"), 0))
    zp = np.full(zp.shape, rng.choice([300, -1000, 2 ** 40]), "int64")
    b.quant[t] = (scale, zp, dim)
    return (b.tensors[t][0], "zero point", "zero_point")


def _scale_count(b, rng):
    qs = list(b.quant) or [b.inputs[0]]
    t = rng.choice(qs)
    scale, zp, dim = b.quant.get(t, (np.ones(1, "float32"), np.zeros(1, "int64"), 0))
    n = rng.choice([2, 3, 7])
    b.quant[t] = (np.full(n, 0.05, "float32"), np.zeros(n, "int64"),
                  rng.choice([dim, 5, -1]))
    return (b.tensors[t][0], "scale", "quantized")


def _unknown_opcode(b, rng):
    k = rng.randrange(len(b.opcodes))
    b.opcodes[k] = rng.choice(["CUSTOM:NoSuchOp", "__BUILTIN_9999__", "__BUILTIN_-4__"])
    return ("NoSuchOp", "builtin", "9999", "-4", "operator")


def _few_inputs(b, rng):
    k = rng.randrange(len(b.ops))
    code, ins, outs, opts, fields, custom = b.ops[k]
    del ins[rng.randrange(len(ins)):]
    return (b.opcodes[code],)


def _opcode_index(b, rng):
    k = rng.randrange(len(b.ops))
    code, ins, outs, opts, fields, custom = b.ops[k]
    bad = rng.choice([len(b.opcodes), 77])
    b.ops[k] = (bad, ins, outs, opts, fields, custom)
    return ("opcode", str(bad), "operator")


DAMAGES = {"op_index": _op_index, "graph_index": _graph_index, "buffer_size": _buffer_size,
           "tensor_type": _tensor_type, "scale": _bad_scale, "zero_point": _bad_zero_point,
           "scale_count": _scale_count, "unknown_opcode": _unknown_opcode,
           "few_inputs": _few_inputs, "opcode_index": _opcode_index}
BYTE_DAMAGES = ("truncate", "overwrite", "identifier")


def _finish(b) -> bytes:
    """``b`` serialized, its unknown names and codes written as they are (the builder takes
    only names the ``tflite`` package knows)."""
    import tflite

    codes = {op: int(op[len("__BUILTIN_"):-2]) for op in b.opcodes if op.startswith("__BUILTIN_")}
    from ...relay.frontend.tflite import builder as _builder

    saved = dict(_builder._TYPES)
    try:
        _builder._TYPES["__bogus__"] = 99
        for op, code in codes.items():
            setattr(tflite.BuiltinOperator, op, code)
        return b.finish()
    finally:
        _builder._TYPES.clear()
        _builder._TYPES.update(saved)
        for op in codes:
            delattr(tflite.BuiltinOperator, op)


def _bytes(data: bytes, kind: str, rng) -> tuple[bytes, tuple]:
    if kind == "truncate":
        return data[:rng.randrange(8, len(data))], ("malformed", "truncat")
    if kind == "identifier":
        return data[:4] + b"XXXX" + data[8:], ("TFL3",)
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        out[rng.randrange(8, len(out))] = rng.randrange(256)
    return bytes(out), ()


def _run(data: bytes, feeds: dict):
    def run():
        from ...relay.build_module import build
        from ...relay.frontend import from_tflite
        from ...runtime.graph_executor import GraphModule
        from ...transform import PassContext

        mod, params = from_tflite(data)
        with PassContext(opt_level=3):
            lib = build(mod, target="llvm", params=params)
        m = GraphModule(lib["default"]())
        names = [p.name_hint for p in mod["main"].params]
        for k in names:
            if k in feeds:
                m.set_input(k, feeds[k])
        m.run()
        for i in range(m.get_num_outputs()):
            m.get_output(i).numpy()
    return run


def cases(seed: int, n: int) -> list[DamageCase]:
    """``n`` damaged models: most damaged in the builder, one in five at the byte level."""
    rng = random.Random(seed)
    seeds = seed_builders()
    out = []
    for i in range(n):
        base = rng.choice(sorted(seeds))
        b = seeds[base]()
        feeds = _inputs(b)
        if i % 5 == 4:
            kind = rng.choice(BYTE_DAMAGES)
            data, expect = _bytes(_finish(b), kind, rng)
        else:
            kind = rng.choice(sorted(DAMAGES))
            expect = DAMAGES[kind](b, rng)
            data = _finish(b)
        out.append(DamageCase(f"tflite/{kind}", f"tflite#{i} {base} {kind}", _run(data, feeds),
                              tuple(str(e) for e in expect)))
    return out
