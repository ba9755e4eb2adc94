"""PyTorch LSTM / GRU exported to ONNX with a dynamic sequence length and batch
(``dynamic_axes``), built once by minitvm and run at several lengths: Relay
(``relay.frontend.from_onnx`` with ``relay.Any()`` dims, ``relay.vm.compile``) and Relax
(``relax.frontend.onnx.from_onnx``, ``relax.build``) beside ONNX Runtime on the same file,
one thread, interleaved rounds (``interleave.settled_rounds``), wall time.

    python benchmarks/bench_rnn_run_time_length.py [--kinds lstm,gru] [--seqs 100,2000,6000]
        [--batch 4] [--hidden 64] [--rounds 3] [--minitvm PATH]

Each cell is the median over rounds of one run, in ms, with the time a step (us) and the
ratio to ONNX Runtime; ``err`` is the largest difference of the outputs from ONNX Runtime's.
``--minitvm PATH`` imports minitvm from another tree (an older commit, for before / after
numbers in one table layout): a dialect whose import refuses the dynamic length (or batch)
reads "refused"; Relay then retries with a static batch, and says so.
"""

from __future__ import annotations

import argparse
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleave import settled_rounds  # noqa: E402

WIDTH = 32


def export(kind: str, hidden: int) -> bytes:
    """A one-layer ``torch.nn.LSTM`` / ``GRU`` (seq-major) as ONNX, its sequence length and
    batch dynamic."""
    import torch

    torch.manual_seed(0)
    model = getattr(torch.nn, kind.upper())(WIDTH, hidden).eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(5, 2, WIDTH),), buf, input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False,
                          dynamic_axes={"x": {0: "seq", 1: "batch"}})
    return buf.getvalue()


def relay_runner(data: bytes, batch: int):
    """(run(x) -> outputs, note) through the Relay VM, built once for any length (and batch
    when the importer takes a run-time batch); None and why when it refuses."""
    import onnx

    import minitvm as tvm
    from minitvm import relay
    from minitvm.runtime import vm as runtime_vm

    model = onnx.load_from_string(data)
    note = "any batch"
    try:
        mod, params = relay.frontend.from_onnx(model, shape={"x": [relay.Any(), relay.Any(),
                                                                   WIDTH]})
    except Exception:  # (an older tree: a static batch)
        note = "static batch"
        mod, params = relay.frontend.from_onnx(model, shape={"x": [relay.Any(), batch, WIDTH]})
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm", params=params), tvm.cpu())

    def run(x):
        out = vm.run(x)
        return [out[i].numpy() for i in range(len(out))]
    return run, note


def relax_runner(data: bytes):
    import onnx

    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx

    try:
        mod = from_onnx(onnx.load_from_string(data))
    except Exception as e:
        return None, f"refused: {str(e).splitlines()[0][:90]}"
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())

    def run(x):
        out = vm["main"](x)
        return [o.numpy() for o in out] if not hasattr(out, "numpy") else [out.numpy()]
    return run, "any batch"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="lstm,gru")
    ap.add_argument("--seqs", default="100,2000,6000")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--minitvm", default=str(Path(__file__).resolve().parent.parent),
                    help="the tree to import minitvm from")
    ap.add_argument("--dialects", default="relay,relax")
    args = ap.parse_args(argv)
    sys.path.insert(0, args.minitvm)
    import onnxruntime as ort

    import minitvm
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    print(f"minitvm from {Path(minitvm.__file__).parent.parent}; one-layer RNN {WIDTH} -> "
          f"{args.hidden}, batch {args.batch}; one thread, wall ms (median of {args.rounds} "
          "rounds), us a step, ratio to onnxruntime")
    dialects = args.dialects.split(",")
    for kind in args.kinds.split(","):
        data = export(kind, args.hidden)
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        runners = {}
        for d in dialects:
            t0 = time.perf_counter()
            run, note = relay_runner(data, args.batch) if d == "relay" else relax_runner(data)
            print(f"  {kind} {d}: {note}" + (f"; built in {time.perf_counter() - t0:.1f} s"
                                              if run is not None else ""), flush=True)
            if run is not None:
                runners[d] = run
        rng = np.random.default_rng(0)
        for seq in (int(s) for s in args.seqs.split(",")):
            x = rng.standard_normal((seq, args.batch, WIDTH)).astype("float32")
            ref = sess.run(None, {"x": x})
            errs = {d: max(float(np.abs(o - r).max()) for o, r in zip(run(x), ref, strict=True))
                    for d, run in runners.items()}
            impls = {d: (lambda run=run, x=x: run(x)) for d, run in runners.items()}
            impls["ort"] = lambda sess=sess, x=x: sess.run(None, {"x": x})
            times = settled_rounds(impls, args.rounds, 1)
            med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            cells = [f"{d} {med[d]:9.1f} ms {med[d] * 1e3 / seq:7.1f} us/step "
                     f"x{med[d] / med['ort']:6.1f} err {errs[d]:.0e}" for d in runners]
            print(f"{kind:4s} seq {seq:5d}: " + "  ".join(cells) +
                  f"  ort {med['ort']:7.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
