"""Elementwise transcendental ops (relu, exp, sigmoid, SiLU, tanh, erf, GELU) and the last axis'
softmax built by minitvm, side by side with ONNX Runtime's nodes, one thread, interleaved rounds.

    python benchmarks/bench_vmath.py [--shape 1,96,112,112] [--rounds 7] [--ops exp,softmax]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from interleave import settled_rounds

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool

OPS = {  # name: (relay builder, ONNX nodes as (op, inputs, output))
    "relu": (relay.nn.relu, [("Relu", ["x"], "y")]),
    "exp": (relay.exp, [("Exp", ["x"], "y")]),
    "sigmoid": (relay.sigmoid, [("Sigmoid", ["x"], "y")]),
    "silu": (lambda x: x * relay.sigmoid(x), [("Sigmoid", ["x"], "s"), ("Mul", ["x", "s"], "y")]),
    "tanh": (relay.tanh, [("Tanh", ["x"], "y")]),
    "erf": (relay.erf, [("Erf", ["x"], "y")]),
    # erf-based GELU as PyTorch exports it; ONNX Runtime fuses the chain into one Gelu node
    "gelu": (lambda x: x * relay.const(0.5) * (relay.const(1.0) + relay.erf(
        x * relay.const(0.7071067811865476))),
             [("Mul", ["x", "rsqrt2"], "s"), ("Erf", ["s"], "e"), ("Add", ["e", "one"], "a"),
              ("Mul", ["x", "a"], "xa"), ("Mul", ["xa", "half"], "y")]),
    # BERT-base's attention probabilities at --shape 1,12,128,128
    "softmax": (lambda x: relay.nn.softmax(x, axis=-1), [("Softmax", ["x"], "y")]),
}
CONSTANTS = {"rsqrt2": 0.7071067811865476, "one": 1.0, "half": 0.5}  # scalars ONNX nodes use


def ours(fn, x):
    v = relay.var("x", shape=x.shape)
    mod = tvm.IRModule.from_expr(relay.Function([v], fn(v)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input_zero_copy("x", x)
    return g.run


def onnxruntime_session(nodes, x):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    used = {i for _, ins, _ in nodes for i in ins}
    graph = helper.make_graph(
        [helper.make_node(op, ins, [out]) for op, ins, out in nodes], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor(k, TensorProto.FLOAT, [], [v]) for k, v in CONSTANTS.items()
         if k in used])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, {"x": x})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1,96,112,112")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of: %(default)s")
    args = ap.parse_args()
    names = args.ops.split(",")
    threadpool.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal(
        [int(d) for d in args.shape.split(",")]).astype("float32") * 3
    impls = {}
    try:
        import onnxruntime  # noqa: F401
        have_ort = True
    except ImportError:
        have_ort = False
        print("onnxruntime not installed (pip install -e '.[onnx]'): minitvm only")
    for name in names:
        fn, nodes = OPS[name]
        impls[name] = ours(fn, x)
        if have_ort:
            impls["ort " + name] = onnxruntime_session(nodes, x)
    t = settled_rounds(impls, args.rounds, 5, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e6 for k, v in t.items()}
    print(f"shape {args.shape}, one thread, us (thread CPU time), median of {args.rounds} rounds")
    print(f"{'op':10s} {'minitvm':>9s} {'ORT':>9s} {'ratio':>7s}")
    for name in names:
        o = med.get("ort " + name)
        ratio = f"{med[name] / o:6.2f}x" if o else ""
        print(f"{name:10s} {med[name]:9.1f} {o or float('nan'):9.1f} {ratio:>7s}")


if __name__ == "__main__":
    main()
