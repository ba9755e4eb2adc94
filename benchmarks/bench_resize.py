"""Resize kernels side by side: minitvm's ``image.resize2d`` / ``nn.upsampling`` (relay.build)
beside ONNX Runtime's ``Resize`` node and PyTorch's ``F.interpolate``, at one thread.

    python benchmarks/bench_resize.py [--rounds 7] [--reps 9] [--only SUBSTRING]

Each row is one op on one shape; the implementations run interleaved over rounds in one
process (``interleave.settled_rounds``, thread CPU time), the table gives each one's median
over rounds in microseconds and the ratio ours / ORT. ``+add`` rows fuse an elementwise add
after the resize (one minitvm kernel; ORT runs Resize then Add).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

# (name, input shape, output H W, layout, ONNX mode, coordinate mode, nearest mode, cubic a,
#  fused add)
CASES = [
    ("nearest 2x", (1, 64, 64, 64), (128, 128), "NCHW", "nearest", "asymmetric", "floor", 0, 0),
    ("bilinear 2x", (1, 64, 64, 64), (128, 128), "NCHW", "linear", "pytorch_half_pixel", "", 0,
     0),
    ("bilinear 2x", (1, 21, 128, 128), (256, 256), "NCHW", "linear", "pytorch_half_pixel", "",
     0, 0),
    ("bilinear 2x corners", (1, 64, 64, 64), (128, 128), "NCHW", "linear", "align_corners", "",
     0, 0),
    ("bilinear 1.5x", (1, 32, 50, 50), (75, 75), "NCHW", "linear", "pytorch_half_pixel", "", 0,
     0),
    ("nearest 3x", (1, 32, 40, 40), (120, 120), "NCHW", "nearest", "asymmetric", "floor", 0, 0),
    ("bicubic 2x", (1, 16, 64, 64), (128, 128), "NCHW", "cubic", "half_pixel", "", -0.75, 0),
    ("nearest 2x", (1, 64, 64, 64), (128, 128), "NHWC", "nearest", "asymmetric", "floor", 0, 0),
    ("bilinear 2x", (1, 64, 64, 64), (128, 128), "NHWC", "linear", "pytorch_half_pixel", "", 0,
     0),
    ("nearest 2x +add", (1, 64, 64, 64), (128, 128), "NCHW", "nearest", "asymmetric", "floor",
     0, 1),
    ("bilinear 2x +add", (1, 64, 64, 64), (128, 128), "NCHW", "linear", "pytorch_half_pixel",
     "", 0, 1),
]


def out_shape(shape, size, layout):
    n, a, b, c = shape
    return (n, a, *size) if layout == "NCHW" else (n, *size, c)


def ours(case):
    """A run callable of the relay.build of ``case`` and its feeds, and its kernel kinds."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    _, shape, size, layout, mode, ctm, nmode, a, fused = case
    x = relay.var("x", shape=shape)
    method = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}[mode]
    y = relay.image.resize2d(x, size, None, layout, method, ctm, nmode,
                             cubic_alpha=a or -0.5)
    params = [x]
    if fused:
        z = relay.var("z", shape=out_shape(shape, size, layout))
        y = relay.add(y, z)
        params.append(z)
    mod = tvm.IRModule.from_expr(relay.Function(params, y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    rng = np.random.default_rng(0)
    feeds = {p.name_hint: rng.standard_normal(
        [int(d) for d in p.type_annotation.shape]).astype("float32") for p in params}
    for k, v in feeds.items():
        g.set_input(k, v)
    kinds = {type(st[1]).__name__ for st in g._state().steps}
    return g.run, feeds, g, kinds


def onnx_session(case):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    _, shape, size, layout, mode, ctm, nmode, a, fused = case
    oshape = out_shape(shape, size, layout)
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], list(oshape))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = nmode
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(a)
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["r" if fused else "y"],
                              **attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
    if fused:
        nodes.append(helper.make_node("Add", ["r", "z"], ["y"]))
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, list(oshape)))
    graph = helper.make_graph(nodes, "resize", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             list(oshape))], [sizes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def torch_fn(case, feeds):
    """``F.interpolate`` doing the same (None where PyTorch has no equivalent)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    _, shape, size, layout, mode, ctm, nmode, a, fused = case
    if mode == "nearest" and (ctm, nmode) == ("asymmetric", "floor"):
        kw = {"mode": "nearest"}
    elif mode == "linear" and ctm in ("pytorch_half_pixel", "align_corners"):
        kw = {"mode": "bilinear", "align_corners": ctm == "align_corners"}
    elif mode == "cubic" and ctm == "half_pixel" and a == -0.75:
        kw = {"mode": "bicubic", "align_corners": False}
    else:
        return None
    x = torch.from_numpy(feeds["x"])
    if layout == "NHWC":
        x = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    z = torch.from_numpy(feeds["z"]) if fused else None
    if z is not None and layout == "NHWC":
        z = z.permute(0, 3, 1, 2)

    def run():
        with torch.no_grad():
            y = F.interpolate(x, size=size, **kw)
            return y + z if z is not None else y

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--only", default="", help="run the rows whose name contains this")
    args = ap.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from minitvm.runtime import jit, threadpool

    jit.init()
    threadpool.set_num_threads(1)
    from interleave import settled_rounds

    print(f"{'case':22s} {'shape':>16s} {'layout':6s} {'ours us':>9s} {'ort us':>9s} "
          f"{'torch us':>9s} {'ours/ort':>8s} {'max err':>8s}  kernels")
    for case in CASES:
        name, shape, size, layout = case[:4]
        if args.only not in name:
            continue
        run, feeds, g, kinds = ours(case)
        sess = onnx_session(case)
        ours_out = (run(), g.get_output(0).numpy())[1]
        ort_out = sess.run(None, feeds)[0]
        err = float(np.abs(ours_out - ort_out).max())
        impls = {"ours": run, "ort": lambda s=sess, f=feeds: s.run(None, f)}
        pt = torch_fn(case, feeds)
        if pt is not None:
            impls["torch"] = pt
        times = settled_rounds(impls, args.rounds, args.reps, clock=time.thread_time)
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        tpt = f"{med['torch']:9.1f}" if "torch" in med else f"{'-':>9s}"
        dims = "x".join(map(str, shape[1:])) + "->" + "x".join(map(str, size))
        print(f"{name:22s} {dims:>16s} {layout:6s} {med['ours']:9.1f} {med['ort']:9.1f} {tpt} "
              f"{med['ours'] / med['ort']:8.2f} {err:8.1e}  {','.join(sorted(kinds))}",
              flush=True)


if __name__ == "__main__":
    main()
