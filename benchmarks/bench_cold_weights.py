"""One kernel with its weights cold, as in a model run, beside ONNX Runtime: a 1x1 conv
(+ bias + relu) or a batch-1 dense (+ bias), constant weights, one thread, thread CPU time.

    python benchmarks/bench_cold_weights.py conv 432 432 7 [--evict-mb 700] [--rounds 40]
    python benchmarks/bench_cold_weights.py dense 432 1000

Before each cold call a read of ``--evict-mb`` MB of scratch evicts the caches (700: the
weights come from DRAM; 12: from L3). Rows: ``hot`` (the call repeated), ``all cold`` (right
after the eviction), ``weights cold`` (after the eviction the kernel first runs once on copies
of its weights, so its code, input, output and workspace are warm and only the weights are
cold), ``weights read first`` (as ``weights cold``, then the weights read by numpy before the
call: what a perfect prefetch of them could give). ORT: hot and all cold. The gap between
``weights cold`` and ``weights read first`` is what streaming the weights costs the kernel.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time

import numpy as np

os.environ.setdefault("MINITVM_DISABLE_BUILD_CACHE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402


def workload(kind, c, o, h):
    """(relay function, input, weight, bias, onnx model bytes, reference output)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    b = rng.standard_normal(o).astype("float32")
    if kind == "conv":
        x = rng.standard_normal((1, c, h, h)).astype("float32")
        w = (rng.standard_normal((o, c, 1, 1)) * 0.05).astype("float32")
        xv = relay.var("x", shape=x.shape)
        y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(xv, relay.const(w),
                                                            kernel_size=(1, 1)), relay.const(b)))
        ref = np.maximum(np.einsum("oc,cp->op", w[:, :, 0, 0], x[0].reshape(c, -1)) +
                         b[:, None], 0).reshape(1, o, h, h)
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"]),
                 helper.make_node("Relu", ["t"], ["y"])]
        yshape = ref.shape
    else:
        x = rng.standard_normal((1, c)).astype("float32")
        w = (rng.standard_normal((o, c)) * 0.05).astype("float32")
        xv = relay.var("x", shape=x.shape)
        y = relay.nn.bias_add(relay.nn.dense(xv, relay.const(w)), relay.const(b))
        ref = x @ w.T + b
        nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
        yshape = ref.shape
    graph = helper.make_graph(
        nodes, "k", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return relay.Function([xv], y), x, model.SerializeToString(), ref, onnx


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("conv", "dense"))
    ap.add_argument("c", type=int, help="input channels (dense: K)")
    ap.add_argument("o", type=int, help="output channels (dense: N)")
    ap.add_argument("h", type=int, nargs="?", default=7, help="plane height = width (conv)")
    ap.add_argument("--evict-mb", type=int, default=700)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    import onnxruntime as ort

    threadpool.set_num_threads(1)
    func, x, blob, ref, _ = workload(args.kind, args.c, args.o, args.h)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", x)
    g.run()
    err = float(np.abs(g.get_output(0).numpy() - ref).max() / np.abs(ref).max())
    inner = g if hasattr(g, "_state") else next(
        o for o in (getattr(g, a) for a in dir(g)) if hasattr(o, "_state"))
    st, plan = inner._state(), inner._plan
    # the kernel with the largest operand other than the input: its pointer table, and one
    # with copies of its weights in their place
    best = None
    for (name, k, ins, _), s in zip(plan["steps"], st.steps):
        if s[0] != "native":
            continue
        arrays = [st.views[e] for e in ins] + list(k.consts)
        for j, a in enumerate(arrays):
            if a.nbytes > x.nbytes and (best is None or a.nbytes > best[3].nbytes):
                best = (name, s, j, a)
    if best is None:
        print("no kernel with weights found")
        return 1
    name, step, j, weights = best
    fn, real = step[1], step[2]
    copy = np.array(weights, copy=True)
    alt = (ctypes.c_void_p * len(real))(*real)
    alt[j] = copy.ctypes.data
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
    sess.run(None, {"x": x})
    scratch = np.ones((args.evict_mb << 20) // 4, dtype="float32")
    rows = {k: [] for k in ("hot", "all cold", "weights cold", "weights read first",
                            "ORT hot", "ORT all cold")}

    def timed(key, call):
        t = time.thread_time()
        call()
        rows[key].append(time.thread_time() - t)

    for _ in range(args.rounds):
        scratch.sum()
        g.set_input("x", x)
        timed("all cold", lambda: fn(real, None, 1))
        timed("hot", lambda: fn(real, None, 1))
        scratch.sum()
        g.set_input("x", x)
        fn(alt, None, 1)
        timed("weights cold", lambda: fn(real, None, 1))
        scratch.sum()
        g.set_input("x", x)
        fn(alt, None, 1)
        weights.sum()
        timed("weights read first", lambda: fn(real, None, 1))
        scratch.sum()
        timed("ORT all cold", lambda: sess.run(None, {"x": x}))
        timed("ORT hot", lambda: sess.run(None, {"x": x}))
    print(f"{name}: weights {weights.nbytes / 1024:.0f} KB, evict {args.evict_mb} MB, "
          f"rel err {err:.1e}")
    for key, ts in rows.items():
        print(f"  {key:20s} {np.median(ts) * 1e3:8.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
