"""Static 2-D window pools of large windows (YOLO's SPP 5x5 / 9x9 / 13x13 max pools at stride 1,
a 7x7 / 2 one, a 9x9 mean): minitvm's kernel beside its former form and ONNX Runtime's
MaxPool / AveragePool node, at one thread.

    python benchmarks/bench_static_pools.py [--shapes 8x32x28x28,1x64x56x56] [--rounds 5]
        [--cases "max 9x9/1,max 7x7/2"]

Per case and shape three implementations: "ours" (``pool_symbolic.takes_static``'s windows in
``pool_symbolic``'s forms: rows combined into a row temporary first, or accumulated), "before"
(the same pool built with ``pool_symbolic.STATIC`` off: ``pool.emit_rows`` past 25 taps,
``pool.emit_direct`` up to 25; a 5x5 / 2 window takes the direct form both ways) and ONNX
Runtime (skipped when not installed), timed in interleaved rounds (``interleave.settled_rounds``: a median of 20 calls
per round). The columns: medians over the rounds in milliseconds, ratios to ours (above 1: ours
is faster) and the largest difference from ours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

# name: (kind, window, stride, padding on every side)
CASES = {
    "max 5x5/1": ("max", 5, 1, 2),
    "max 5x5/2": ("max", 5, 2, 2),
    "max 4x4/1": ("max", 4, 1, 1),
    "max 9x9/1": ("max", 9, 1, 4),
    "max 13x13/1": ("max", 13, 1, 6),
    "max 7x7/2": ("max", 7, 2, 3),
    "avg 9x9/1": ("avg", 9, 1, 4),
}


def _ours(shape, kind, k, s, p, static: bool):
    """A graph-executor runner of the pool, built with ``pool_symbolic.STATIC`` = ``static``."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.backend import kernel_cache
    from minitvm.contrib import graph_executor
    from minitvm.schedule import pool_symbolic

    x = relay.var("x", shape=shape)
    pool = relay.nn.max_pool2d if kind == "max" else relay.nn.avg_pool2d
    y = pool(x, (k, k), (s, s), (1, 1), (p, p, p, p))
    old, pool_symbolic.STATIC = pool_symbolic.STATIC, static
    kernel_cache.clear_cache()
    try:
        # (no disk cache: its whole builds are keyed by the program, not the switch)
        with tvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.use_disk_cache": False}):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    finally:
        pool_symbolic.STATIC = old
        kernel_cache.clear_cache()
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))

    def run(a):
        g.set_input("x", a)
        g.run()
        return g.get_output(0).numpy()

    return run


def _ort(shape, kind, k, s, p):
    try:
        import onnx  # noqa: F401  (onnx.helper below)
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    node = helper.make_node("MaxPool" if kind == "max" else "AveragePool", ["x"], ["y"],
                            kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, list(shape))], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return lambda a: sess.run(None, {"x": a})[0]


def main() -> int:
    from minitvm.runtime import threadpool

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8x32x28x28,1x64x56x56")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated case names (default: all)")
    args = ap.parse_args()
    threadpool.set_num_threads(1)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    print(f"{'case':12s} {'shape':12s} {'ours ms':>8s} {'before':>9s} {'ratio':>6s} "
          f"{'ORT ms':>7s} {'ratio':>6s} {'max diff':>9s}")
    for name in (n.strip() for n in args.cases.split(",")):
        kind, k, s, p = CASES[name]
        for shape in shapes:
            a = np.random.default_rng(0).standard_normal(shape).astype("float32")
            impls = {"ours": _ours(shape, kind, k, s, p, True),
                     "rows": _ours(shape, kind, k, s, p, False)}
            ort = _ort(shape, kind, k, s, p)
            if ort is not None:
                impls["ort"] = ort
            want = impls["ours"](a)
            diff = max(float(np.abs(f(a) - want).max()) for f in impls.values())
            times = settled_rounds({n: (lambda f=f, a=a: f(a)) for n, f in impls.items()},
                                   args.rounds, 20)
            ms = {n: statistics.median(v) * 1e3 for n, v in times.items()}
            o = ms["ours"]
            ort_cols = f"{ms['ort']:7.3f} {ms['ort'] / o:6.2f}" if "ort" in ms else \
                f"{'-':>7s} {'-':>6s}"
            print(f"{name:12s} {'x'.join(map(str, shape)):12s} {o:8.3f} {ms['rows']:9.3f} "
                  f"{ms['rows'] / o:6.2f} {ort_cols} {diff:9.2g}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
