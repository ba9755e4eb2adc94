"""Conv + bias + relu + max pool blocks (grayscale / RGB stems: LeNet, MNIST CNNs, ProtoNet,
soft_decision_tree) built by minitvm beside ONNX Runtime, and optionally under each value of a
module-level switch, timed in interleaved rounds in one process.

    python benchmarks/bench_conv_pool_ort.py [--switch schedule.conv_lanes.FEW_TAPS_MAX[avx2]
        --values 0,32] [--rounds 9] [--runs 10] [C,O,HW,K,PAD,POOL,N[,ceil] ...]

Each block is ``C`` input and ``O`` output channels on an ``HW x HW`` image of batch ``N``, a
``K x K`` stride-1 conv of padding ``PAD``, relu and a ``POOL x POOL`` / ``POOL`` max pool
(``ceil``: ceil mode), exported from torch to ONNX (its bias folded into ONNX Runtime's Conv).
``--switch`` names a module attribute under ``minitvm`` (``NAME[KEY]``: one ISA's or host's
entry of a per-ISA dict) and ``--values`` its values, one build each (the kernel caches off for
each, as ``bench_model_switch`` does; a repeated value is an A/A control). One thread, thread CPU time; prints per block the
kernels each build made (pooled in the conv's tiles: one), its median ms and its ratio to ORT.
Needs the ``torch``, ``onnx`` and ``onnxruntime`` extras.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import io
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

# soft_decision_tree's stem, LeNet-5's first conv (batch 1, 64), an MNIST CNN, ProtoNet's
# stem at 84x84, an odd plane in ceil mode
DEFAULT_BLOCKS = ["1,16,28,3,1,2,32", "1,6,32,5,0,2,1", "1,6,32,5,0,2,64", "1,32,28,3,1,2,64",
                  "3,32,84,3,1,2,8", "1,16,15,3,1,2,8,ceil"]


def block_onnx(spec: str) -> tuple[bytes, np.ndarray, str]:
    """(ONNX bytes, input, label) of the block ``spec`` (``C,O,HW,K,PAD,POOL,N[,ceil]``)."""
    import torch
    from torch import nn

    parts = spec.split(",")
    c, o, hw, k, pad, pool, n = (int(v) for v in parts[:7])
    ceil = len(parts) > 7 and parts[7] == "ceil"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(c, o, k, 1, pad), nn.ReLU(),
                          nn.MaxPool2d(pool, pool, ceil_mode=ceil)).eval()
    x = torch.randn(n, c, hw, hw)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), f, input_names=["x"], dynamo=False)
    return f.getvalue(), x.numpy(), f"{c}->{o} {k}x{k} p{pad} @{hw} n{n} pool{pool}" + \
        (" ceil" if ceil else "")


def build(blob: bytes, x: np.ndarray, switch: str | None, value):
    """(run function, kernel names) of the ONNX block built with ``minitvm.<switch>`` set to
    ``value`` (restored after; no switch: as the code stands)."""
    import onnx

    import minitvm as tvm
    from minitvm import relay
    from minitvm.backend import kernel_cache
    from minitvm.contrib import graph_executor

    module = attr = saved = None
    if switch:
        where, attr = switch.split("[")[0].rsplit(".", 1)
        module = importlib.import_module(f"minitvm.{where}")
        saved = getattr(module, attr)
        if "[" in switch:
            value = {**saved, switch.split("[", 1)[1].rstrip("]"): value}
        setattr(module, attr, value)
    kernel_cache.clear_cache()  # (its keys do not see a module switch)
    config = {"relay.backend.use_build_cache": False, "relay.backend.use_disk_cache": False}
    try:
        mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob), shape={"x": x.shape})
        with tvm.transform.PassContext(opt_level=3, config=config):
            lib = relay.build(mod, target="llvm", params=params)
    finally:
        if module is not None:
            setattr(module, attr, saved)
        kernel_cache.clear_cache()
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", x)

    def run():
        g.run()
        return g.get_output(0).numpy()

    names = [n.replace("tvmgen_default_fused_", "") for n in lib.get_lib().kernels]
    return run, names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blocks", nargs="*", default=DEFAULT_BLOCKS,
                    help="C,O,HW,K,PAD,POOL,N[,ceil] (default: a few stems)")
    ap.add_argument("--switch", default=None)
    ap.add_argument("--values", default=None, help="comma-separated values, one build each")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=10, help="runs per round (their median)")
    args = ap.parse_args()
    try:
        import onnxruntime as ort
        import torch
    except ImportError as e:
        print(f"needs the torch, onnx and onnxruntime extras: {e}")
        return 0
    from minitvm.runtime import threadpool

    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    values = [ast.literal_eval(v) for v in args.values.split(",")] if args.switch else [None]
    texts = args.values.split(",") if args.switch else ["minitvm"]
    # a repeated value is an A/A control: each build gets its own column
    labels = [v if texts.count(v) == 1 else f"{v}#{i}" for i, v in enumerate(texts)]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; one thread, thread CPU ms, "
          f"median of {args.rounds} interleaved rounds of median-of-{args.runs}"
          + (f"; {args.switch}" if args.switch else ""))
    for spec in args.blocks:
        blob, x, label = block_onnx(spec)
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
        want = sess.run(None, {"x": x})[0]
        impls = {"ORT": lambda sess=sess, x=x: sess.run(None, {"x": x})}
        kernels = {}
        for name, value in zip(labels, values):
            run, kernels[name] = build(blob, x, args.switch, value)
            err = float(np.abs(run() - want).max())
            if err > 1e-4:
                print(f"  {name}: max |minitvm - ORT| {err:.2e}")
            impls[name] = run
        times = settled_rounds(impls, args.rounds, args.runs, clock=time.thread_time)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"{label}: ORT {med['ORT']:.4f}" + "".join(
            f"  {k} {med[k]:.4f} ({med[k] / med['ORT']:.2f}x, {len(kernels[k])} kernel"
            f"{'s' if len(kernels[k]) > 1 else ''})" for k in labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
