"""PyTorch LSTM / GRU models through relay.frontend.from_pytorch (opt_level 3, the graph
executor) beside ONNX Runtime (the same module exported to ONNX) and PyTorch eager, one thread.

    python benchmarks/bench_rnn.py [--rounds 7] [--reps 5] [--cases lstm,gru,lstm_b16]
                                   [--profile]
    python benchmarks/bench_rnn.py --grid [--kinds lstm,gru] [--seqs 1,16,128]
                                   [--batches 1,8] [--hiddens 64,256,512] [--quantize]

Cases: a 2-layer LSTM or GRU 64 -> 128 over T = 32 steps (batch first) followed by a
Linear(128, 10) on the last step, at batch 1 (``lstm``, ``gru``) and batch 16 (``lstm_b16``,
``gru_b16``). Rounds are interleaved over the implementations (``interleave.settled_rounds``),
timed in thread CPU time; each cell is the median over rounds of each round's median of
``--reps`` runs, in ms. ``--grid`` instead times one-layer ``nn.LSTM`` / ``nn.GRU`` (64 input
features, seq-major) exported to ONNX and imported with ``relay.frontend.from_onnx``, beside ONNX
Runtime on the same file, over every sequence length x batch x hidden size given (``--reps``
runs a round: 10 or more, else a run's cold caches after ONNX Runtime's weigh in);
``--quantize`` runs them through ``quantize_dynamic`` first. ``--profile`` adds minitvm's kernels by fused name (each one called on
its own through ctypes, so a kernel reads ~0.3 us above its share of a run, which calls every
kernel from one compiled entry function).
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

for _var in ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleave import settled_rounds  # noqa: E402

CASES = {"lstm": ("lstm", 1), "gru": ("gru", 1), "lstm_b16": ("lstm", 16),
         "gru_b16": ("gru", 16)}
SEQ, WIDTH, HIDDEN, LAYERS = 32, 64, 128, 2


def make_model(kind: str):
    import torch

    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = cls(WIDTH, HIDDEN, LAYERS, batch_first=True)
            self.fc = torch.nn.Linear(HIDDEN, 10)

        def forward(self, x):
            return self.fc(self.rnn(x)[0][:, -1])

    torch.manual_seed(0)
    return Net().eval()


def kernel_profile(g, top: int = 8) -> list[str]:
    """Per fused-kernel totals of one run: each kernel called alone, looped."""
    st = g._state()
    agg = collections.defaultdict(lambda: [0.0, 0])
    for (name, *_), step in zip(g._plan["steps"], st.steps, strict=True):
        if step[0] != "native":
            continue
        fn, args = step[1], step[2]
        fn(args, None, 1)
        t0 = time.thread_time_ns()
        for _ in range(20):
            fn(args, None, 1)
        key = name.replace("tvmgen_default_", "").rstrip("0123456789_")
        agg[key][0] += (time.thread_time_ns() - t0) / 20 / 1e3
        agg[key][1] += 1
    rows = sorted(agg.items(), key=lambda kv: -kv[1][0])[:top]
    return [f"    {t:8.1f} us  x{n:3d}  {k}" for k, (t, n) in rows]


def grid_case(kind: str, seq: int, batch: int, hidden: int, rounds: int, reps: int,
              quantize: bool = False) -> str:
    """One ``--grid`` line: a one-layer ``kind`` (lstm / gru) through ONNX (``quantize``: after
    onnxruntime's ``quantize_dynamic``, an LSTM becoming a DynamicQuantizeLSTM), minitvm
    (Relay, the graph executor) beside ONNX Runtime on the same file, ms and their ratio, the
    largest output error."""
    import onnx
    import onnxruntime as ort
    import torch

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    torch.manual_seed(0)
    model = getattr(torch.nn, kind.upper())(WIDTH, hidden).eval()
    x = torch.randn(seq, batch, WIDTH)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, input_names=["x"], opset_version=17, dynamo=False)
    data = buf.getvalue()
    if quantize:
        data = quantized_bytes(data)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    xn = x.numpy()
    ref = sess.run(None, {"x": xn})
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(data), shape={"x": xn.shape})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", xn)
    g.run()
    err = max(float(np.abs(g.get_output(i).numpy() - r).max()) for i, r in enumerate(ref))
    times = settled_rounds({"minitvm": g.run, "ort": lambda: sess.run(None, {"x": xn})},
                           rounds, reps, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return (f"{'dynq ' if quantize else ''}{kind:4s} seq {seq:3d} batch {batch:2d} hidden {hidden:3d}: minitvm "
            f"{med['minitvm']:8.3f}  onnxruntime {med['ort']:8.3f}  "
            f"x{med['minitvm'] / med['ort']:.2f}  max err {err:.1e}")


def quantized_bytes(data: bytes) -> bytes:
    """``data`` (an ONNX model) through ``onnxruntime.quantization.quantize_dynamic`` (int8
    weights), as a new user quantizes a model."""
    import logging
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)  # (its advice to pre-process, each model)
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        with open(src, "wb") as f:
            f.write(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
        with open(dst, "rb") as f:
            return f.read()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cases", default="lstm,gru,lstm_b16")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--grid", action="store_true",
                    help="one-layer LSTM / GRU through ONNX over the sizes below")
    ap.add_argument("--kinds", default="lstm,gru")
    ap.add_argument("--seqs", default="1,16,128")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--hiddens", default="64,256,512")
    ap.add_argument("--quantize", action="store_true",
                    help="--grid over quantize_dynamic's models (LSTM: DynamicQuantizeLSTM)")
    args = ap.parse_args(argv)
    if args.grid:
        import torch

        from minitvm.runtime import threadpool

        torch.set_num_threads(1)
        threadpool.set_num_threads(1)
        print(f"one-layer RNN {WIDTH} -> hidden through ONNX; one thread, thread CPU time, ms "
              f"(median of {args.rounds} rounds)")
        for kind in args.kinds.split(","):
            for hidden in (int(v) for v in args.hiddens.split(",")):
                for batch in (int(v) for v in args.batches.split(",")):
                    for seq in (int(v) for v in args.seqs.split(",")):
                        print(grid_case(kind, seq, batch, hidden, args.rounds, args.reps,
                                        args.quantize), flush=True)
        return 0

    import torch

    torch.set_num_threads(1)
    from minitvm.runtime import jit, threadpool

    jit.init()
    threadpool.set_num_threads(1)
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    try:
        import onnxruntime as ort
    except ImportError:
        ort = None

    print(f"{LAYERS}-layer RNN {WIDTH}->{HIDDEN}, T={SEQ}, + Linear({HIDDEN}, 10); one thread, "
          f"thread CPU time, ms (median of {args.rounds} rounds x {args.reps} runs)")
    for case in args.cases.split(","):
        kind, batch = CASES[case]
        model = make_model(kind)
        x = torch.randn(batch, SEQ, WIDTH)
        xn = x.numpy()
        with torch.no_grad():
            ref = model(x).numpy()
            traced = torch.jit.trace(model, (x,))
        mod, params = relay.frontend.from_pytorch(traced, [("x", tuple(x.shape))])
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        g.set_input_zero_copy("x", xn)
        g.run()
        err = float(np.abs(g.get_output(0).numpy() - ref).max())

        def eager(model=model, x=x):
            with torch.no_grad():
                model(x)

        impls = {"minitvm": g.run, "torch": eager}
        if ort is not None:
            buf = io.BytesIO()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (x,), buf, input_names=["x"], opset_version=17,
                                  dynamo=False)
            so = ort.SessionOptions()
            so.intra_op_num_threads = so.inter_op_num_threads = 1
            sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
            impls["onnxruntime"] = lambda sess=sess, xn=xn: sess.run(None, {"x": xn})
        times = settled_rounds(impls, args.rounds, args.reps, clock=time.thread_time)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        cells = "  ".join(f"{k} {v:7.3f}" for k, v in med.items())
        ratios = "  ".join(f"/{k} {med['minitvm'] / med[k]:.2f}" for k in med if k != "minitvm")
        print(f"{case:9s} batch {batch:2d}: {cells}   minitvm{ratios}   "
              f"kernels {len(g._plan['steps'])}  max err {err:.1e}", flush=True)
        if args.profile:
            print("\n".join(kernel_profile(g)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
