"""Damaged ONNX models through both importers (Relay's and Relax's) and ``minitvm compile``.

Three valid seed models (a conv net with initializers, an elementwise / reshape chain, a
MatMul / Concat / Gather graph) are damaged one way each: a graph input or initializer dropped,
an attribute of the wrong type, dropped or out of range, a dangling edge, a cycle, an unknown op,
domain or opset, an initializer whose shape or bytes do not match, a node with too few or too
many inputs, an output naming nothing, an input of an undefined element type, truncated bytes.
A refusal must be a clear error naming the node (its name or op type) or the value damaged;
an accepted model is built and run, and its outputs must equal ONNX Runtime's where ONNX Runtime
runs it (a model ONNX Runtime refuses but we import is counted ``lenient``). Needs ``onnx``.
"""

from __future__ import annotations

import os
import random
import tempfile

import numpy as np

from .damage import DamageCase, Lenient, Wrong

__all__ = ["cases", "seed_models", "DAMAGES"]


def seed_models() -> dict:
    """Name -> a valid ``onnx.ModelProto`` (every node named, opset 17)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape, dtype="float32"):
        if dtype == "int64":
            return numpy_helper.from_array(np.asarray(shape, "int64"), name)
        return numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), name)

    def vi(name, shape, t=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, t, shape)

    def model(nodes, inputs, outputs, inits):
        g = helper.make_graph(nodes, "g", inputs, outputs, inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m

    N = helper.make_node
    conv = model([
        N("Conv", ["X", "W", "B"], ["c"], name="conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        N("Relu", ["c"], ["r"], name="relu0"),
        N("MaxPool", ["r"], ["p"], name="pool0", kernel_shape=[2, 2], strides=[2, 2]),
        N("Flatten", ["p"], ["f"], name="flat0", axis=1),
        N("Gemm", ["f", "W2", "B2"], ["g"], name="gemm0", transB=1),
        N("Softmax", ["g"], ["Y"], name="softmax0", axis=-1),
    ], [vi("X", [1, 3, 8, 8])], [vi("Y", [1, 5])],
        [init("W", [4, 3, 3, 3]), init("B", [4]), init("W2", [5, 64]), init("B2", [5])])
    elementwise = model([
        N("Add", ["A", "C"], ["s"], name="add0"),
        N("Mul", ["s", "K"], ["m"], name="mul0"),
        N("Reshape", ["m", "shape"], ["rs"], name="reshape0"),
        N("Transpose", ["rs"], ["t"], name="transpose0", perm=[1, 0]),
        N("ReduceSum", ["t", "axes"], ["Y"], name="sum0", keepdims=1),
    ], [vi("A", [2, 3]), vi("C", [2, 3])], [vi("Y", [3, 1])],
        [init("K", [2, 3]), init("shape", [3, 2], "int64"), init("axes", [1], "int64")])
    gather = model([
        N("MatMul", ["A", "M"], ["mm"], name="matmul0"),
        N("Concat", ["mm", "A"], ["cc"], name="concat0", axis=1),
        N("Gather", ["cc", "idx"], ["ga"], name="gather0", axis=1),
        N("Slice", ["ga", "starts", "ends"], ["Y"], name="slice0"),
    ], [vi("A", [2, 4]), vi("idx", [3], TensorProto.INT64)], [vi("Y", [2, 2])],
        [init("M", [4, 4]), init("starts", [1], "int64"), init("ends", [3], "int64")])
    return {"conv": conv, "elementwise": elementwise, "gather": gather}


def _inputs(model, rng) -> dict:
    from onnx import TensorProto

    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        shape = [max(int(d.dim_value), 1) for d in v.type.tensor_type.shape.dim]
        if v.type.tensor_type.elem_type == TensorProto.INT64:
            feeds[v.name] = rng.integers(0, 3, size=shape).astype("int64")
        else:
            feeds[v.name] = rng.standard_normal(shape).astype("float32")
    return feeds


# ------------------------------------------------------------------ damages
def _drop_input(m, rng):
    inits = {t.name for t in m.graph.initializer}
    ins = [i for i, v in enumerate(m.graph.input) if v.name not in inits]
    k = rng.choice(ins)
    name = m.graph.input[k].name
    del m.graph.input[k]
    return (name,)


def _drop_initializer(m, rng):
    k = rng.randrange(len(m.graph.initializer))
    name = m.graph.initializer[k].name
    del m.graph.initializer[k]
    return (name,)


def _node_with_attr(m, rng):
    nodes = [n for n in m.graph.node if len(n.attribute)]
    return rng.choice(nodes) if nodes else None


def _attr_type(m, rng):
    from onnx import AttributeProto, helper

    n = _node_with_attr(m, rng)
    if n is None:
        return _unknown_op(m, rng)
    a = rng.choice(list(n.attribute))
    new = rng.choice([helper.make_attribute(a.name, 1.5), helper.make_attribute(a.name, "abc"),
                      helper.make_attribute(a.name, [1.5, 2.5]),
                      helper.make_attribute(a.name, 2) if a.type != AttributeProto.INT
                      else helper.make_attribute(a.name, [2, 2]),
                      helper.make_attribute(a.name, b"\x00")])
    for i, old in enumerate(n.attribute):
        if old.name == a.name:
            n.attribute[i].CopyFrom(new)
    return (n.name, n.op_type, a.name)


def _attr_drop(m, rng):
    n = _node_with_attr(m, rng)
    if n is None:
        return _unknown_op(m, rng)
    k = rng.randrange(len(n.attribute))
    name = n.attribute[k].name
    del n.attribute[k]
    return (n.name, n.op_type, name)


def _attr_value(m, rng):
    from onnx import helper

    n = _node_with_attr(m, rng)
    if n is None:
        return _unknown_op(m, rng)
    a = rng.choice(list(n.attribute))
    bad = {"kernel_shape": [[0, 3], [3], [99, 99], [-1, 2]],
           "pads": [[1, 1], [-5, 0, 0, 0], [100, 100, 100, 100]],
           "strides": [[0, 0], [2], [-1, 1]], "axis": [99, -99], "perm": [[0, 0], [1], [0, 5]],
           "transB": [7], "keepdims": [5]}.get(a.name, [[99], 99, -99])
    value = rng.choice(bad)
    for i, old in enumerate(n.attribute):
        if old.name == a.name:
            n.attribute[i].CopyFrom(helper.make_attribute(a.name, value))
    return (n.name, n.op_type, a.name)


def _dangling(m, rng):
    n = rng.choice(list(m.graph.node))
    k = rng.randrange(len(n.input))
    n.input[k] = "missing_value"
    return (n.name, n.op_type, "missing_value")


def _cycle(m, rng):
    nodes = list(m.graph.node)
    i = rng.randrange(len(nodes))
    j = rng.randrange(i, len(nodes))
    n = nodes[i]
    n.input[0] = nodes[j].output[0]
    return (n.name, n.op_type, nodes[j].name, nodes[j].output[0], "cycle")


def _unknown_op(m, rng):
    n = rng.choice(list(m.graph.node))
    n.op_type = rng.choice(["FooBar", "conv", "Relu2", ""])
    return (n.name, n.op_type or "op type")


def _unknown_domain(m, rng):
    n = rng.choice(list(m.graph.node))
    n.domain = "com.example.nothing"
    return (n.name, n.op_type, "com.example.nothing")


def _opset(m, rng):
    v = rng.choice([0, 1, 3, 999])
    m.opset_import[0].version = v
    return ("opset", str(v)) + tuple(n.name for n in m.graph.node) + tuple(
        n.op_type for n in m.graph.node)


def _init_shape(m, rng):
    t = rng.choice(list(m.graph.initializer))
    if rng.random() < 0.5 and t.raw_data:
        t.raw_data = t.raw_data[: max(0, len(t.raw_data) - rng.choice([1, 4, 8]))]
    else:
        dims = list(t.dims) or [1]
        k = rng.randrange(len(dims))
        dims[k] = rng.choice([dims[k] + 1, 0, dims[k] * 2])
        del t.dims[:]
        t.dims.extend(dims)
    users = [n for n in m.graph.node if t.name in n.input]
    return (t.name,) + tuple(n.name for n in users) + tuple(n.op_type for n in users)


def _node_arity(m, rng):
    n = rng.choice(list(m.graph.node))
    if rng.random() < 0.5 and len(n.input) > 0:
        del n.input[len(n.input) - 1]
    else:
        n.input.extend([n.input[0]] * rng.choice([1, 3]))
    return (n.name, n.op_type)


def _bad_output(m, rng):
    m.graph.output[0].name = "nowhere"
    return ("nowhere",)


def _elem_type(m, rng):
    from onnx import TensorProto

    inits = {t.name for t in m.graph.initializer}
    v = rng.choice([v for v in m.graph.input if v.name not in inits])
    v.type.tensor_type.elem_type = rng.choice([TensorProto.UNDEFINED, TensorProto.STRING, 99])
    return (v.name,)


def _input_rank(m, rng):
    inits = {t.name for t in m.graph.initializer}
    v = rng.choice([v for v in m.graph.input if v.name not in inits])
    dims = v.type.tensor_type.shape.dim
    if rng.random() < 0.5 and len(dims):
        del dims[len(dims) - 1]
    else:
        dims.add().dim_value = 7
    users = [n for n in m.graph.node if v.name in n.input]
    return (v.name,) + tuple(n.name for n in users) + tuple(n.op_type for n in users)


def _duplicate_output(m, rng):
    nodes = list(m.graph.node)
    if len(nodes) < 3:
        return _dangling(m, rng)
    i = rng.randrange(len(nodes) - 1)
    nodes[i + 1].output[0] = nodes[i].output[0]
    return (nodes[i].name, nodes[i + 1].name, nodes[i].output[0])


def _truncated(m, rng):
    return ("truncated",)  # (the bytes are cut when the case runs)


DAMAGES = {"drop_input": _drop_input, "drop_initializer": _drop_initializer,
           "attr_type": _attr_type, "attr_drop": _attr_drop, "attr_value": _attr_value,
           "dangling_edge": _dangling, "cycle": _cycle, "unknown_op": _unknown_op,
           "unknown_domain": _unknown_domain, "opset": _opset, "initializer_shape": _init_shape,
           "node_arity": _node_arity, "bad_output": _bad_output, "elem_type": _elem_type,
           "input_rank": _input_rank, "duplicate_output": _duplicate_output,
           "truncated": _truncated}


# ------------------------------------------------------------------ running
def _ort(model, feeds):
    """ONNX Runtime's outputs, or None when it refuses the model."""
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 4
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)
    except Exception:  # noqa: BLE001 - any refusal
        return None


def _run_relay(path, feeds):
    import minitvm as tvm
    from minitvm import relay

    mod, params = relay.frontend.from_onnx(path)
    with tvm.transform.PassContext(opt_level=1):
        f = relay.create_executor("graph", mod=mod, target="llvm").evaluate()
    names = [p.name_hint for p in mod["main"].params]
    out = f(*[feeds[n] if n in feeds else params[n] for n in names])
    return [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]


def _run_relax(path, feeds):
    import minitvm as tvm
    from minitvm import relax

    mod = relax.frontend.onnx.from_onnx(path)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    names = [p.name_hint for p in mod["main"].params]
    out = vm["main"](*[feeds[n] for n in names])
    return [np.asarray(o.numpy() if hasattr(o, "numpy") else o)
            for o in (out if isinstance(out, list | tuple) else [out])]


def _run_cli(path, feeds):
    from .damage import run_cli

    out = os.path.join(os.path.dirname(path), "model.tar")
    code, err = run_cli(["compile", path, "-O1", "-q", "-o", out])
    if code != 0:
        raise ValueError(f"minitvm compile exited {code}: {err.strip()[-600:]}")
    return None  # (compiled: no outputs to compare)


_PATHS = {"relay": _run_relay, "relax": _run_relax, "cli": _run_cli}


def _make_case(index: int, rng: random.Random, models: dict) -> DamageCase:
    seed_name = rng.choice(sorted(models))
    damage = rng.choice(sorted(DAMAGES))
    # (one case in 25 runs `minitvm compile` in its own process: a second each, or more)
    path_kind = "cli" if index % 25 == 24 else rng.choice(["relay", "relax"])
    dseed = rng.randrange(1 << 30)
    feeds = _inputs(models[seed_name], np.random.default_rng(index))

    def build():
        m = type(models[seed_name])()
        m.CopyFrom(models[seed_name])
        drng = random.Random(dseed)
        names = DAMAGES[damage](m, drng)
        return m, names, drng

    _, names, _ = build()
    expect = tuple(f"{w}" for w in names if w) + (".onnx",) * (damage == "truncated")
    if damage in ("attr_drop", "attr_value", "attr_type", "elem_type", "input_rank"):
        # a change valid where it is made may break a later node: that node is named
        expect += tuple(f"node {n.name!r}" for n in models[seed_name].graph.node)

    def run():
        m, _, drng = build()
        data = m.SerializeToString()
        if damage == "truncated":
            data = data[: drng.randrange(1, max(2, len(data) - 1))]
        with tempfile.TemporaryDirectory(prefix="damage_onnx_") as d:
            path = os.path.join(d, "model.onnx")
            with open(path, "wb") as f:
                f.write(data)
            got = _PATHS[path_kind](path, feeds)
        if got is None:
            return
        want = _ort(m, feeds) if damage != "truncated" else None
        if want is None:
            raise Lenient("imported and ran; ONNX Runtime refuses it")
        for g, w in zip(got, want, strict=True):
            if g.shape != w.shape or not np.allclose(g, w, rtol=1e-4, atol=1e-5):
                raise Wrong(f"output differs from ONNX Runtime's ({g.shape} vs {w.shape})")

    return DamageCase(f"onnx/{damage}/{path_kind}", f"onnx#{index} {seed_name} {damage} "
                      f"{path_kind} {names}", run, expect)


def cases(seed: int, n: int) -> list[DamageCase]:
    """``n`` damaged models (deterministic in ``seed``)."""
    models = seed_models()
    rng = random.Random(seed)
    return [_make_case(i, rng, models) for i in range(n)]
