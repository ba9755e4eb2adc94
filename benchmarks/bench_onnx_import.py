"""ResNet-18 (224x224, batch 1) exported from PyTorch to ONNX, imported with
relay.frontend.from_onnx, compiled at opt_level 3, timed beside ONNX Runtime on the same file
and the same input, interleaved in one process.

    python benchmarks/bench_onnx_import.py [--repeat 30] [--threads N] [--model FILE.onnx]
    python benchmarks/bench_onnx_import.py --save resnet18.onnx   # only write the model
    python benchmarks/bench_onnx_import.py --model resnet18.onnx --threads 1 --cpu-time

Prints import / compile times, both latencies (median of --repeat runs, rounds interleaved so
machine noise hits both alike), the ratio, and the largest output difference. Needs torch (to
build the model, unless --model is given), onnx and onnxruntime.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "relay", "frontend"))


def resnet18_onnx() -> bytes:
    import torch
    from frontend_models import resnet18

    model = resnet18(width=64, classes=1000)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), buf, opset_version=17,
                          input_names=["data"], dynamo=False)
    return buf.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both runtimes (0: each runtime's default)")
    ap.add_argument("--model", default=None, help="an .onnx file instead of the built ResNet-18")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the calling thread's CPU time (time.thread_time; meaningful "
                         "at --threads 1, where both runtimes compute on the calling thread)")
    ap.add_argument("--save", default=None, metavar="FILE.onnx",
                    help="only write the built ResNet-18 to FILE.onnx (for minitvm compile)")
    args = ap.parse_args(argv)
    if args.save:
        with open(args.save, "wb") as f:
            f.write(resnet18_onnx())
        print(f"wrote {args.save}")
        return 0

    import onnx
    import onnxruntime as ort

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    data = open(args.model, "rb").read() if args.model else resnet18_onnx()
    model = onnx.load_from_string(data)
    t = time.perf_counter()
    mod, params = relay.frontend.from_onnx(model)
    t_import = time.perf_counter() - t
    t = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    t_build = time.perf_counter() - t
    if args.threads:
        from minitvm.runtime import threadpool

        threadpool.set_num_threads(args.threads)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    name = mod["main"].params[0].name_hint
    shape = [int(d) for d in mod["main"].params[0].checked_type.concrete_shape]
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    gm.set_input(name, x)

    so = ort.SessionOptions()
    if args.threads:
        so.intra_op_num_threads = args.threads
    # calls alternate one by one: ORT's pool threads must not spin after each run, or they hold
    # a core while minitvm runs next (2 threads on 2 cores: minitvm measured 2x slower so)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    feeds = {sess.get_inputs()[0].name: x}

    gm.run()
    ours = gm.get_output(0).numpy()
    ref = sess.run(None, feeds)[0]
    for _ in range(3):  # warm up both
        gm.run()
        sess.run(None, feeds)
    clock = time.thread_time if args.cpu_time else time.perf_counter
    t_ours, t_ort = [], []
    for _ in range(args.repeat):  # interleaved rounds
        t = clock()
        gm.run()
        t_ours.append(clock() - t)
        t = clock()
        sess.run(None, feeds)
        t_ort.append(clock() - t)
    ms_ours, ms_ort = np.median(t_ours) * 1e3, np.median(t_ort) * 1e3
    from minitvm.runtime import threadpool

    print(f"model: {'ResNet-18 224x224' if not args.model else args.model}, input {name} "
          f"{tuple(shape)}; threads: minitvm {threadpool.get_num_threads()}, onnxruntime "
          f"{args.threads or 'default'}; cpus {os.cpu_count()}; clock "
          f"{'thread CPU time' if args.cpu_time else 'wall'}")
    print(f"import {t_import:.2f} s, relay.build -O3 {t_build:.2f} s")
    print(f"{'runtime':<14}{'median ms':>10}{'min ms':>10}")
    print(f"{'minitvm':<14}{ms_ours:>10.2f}{min(t_ours) * 1e3:>10.2f}")
    print(f"{'onnxruntime':<14}{ms_ort:>10.2f}{min(t_ort) * 1e3:>10.2f}")
    print(f"minitvm / onnxruntime = {ms_ours / ms_ort:.2f}x; max |diff| = "
          f"{float(np.abs(ours - ref).max()):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
