"""MobileNetV2 (torchvision's layout, width 1.0, 1000 classes, 1x3x224x224, fp32) exported from
PyTorch to ONNX, imported with relay.frontend.from_onnx, compiled at opt_level 3 (untuned) and
timed side by side with ONNX Runtime and PyTorch eager, interleaved in one process.

    python benchmarks/bench_mobilenet.py [--repeat 20] [--reps 3] [--threads 1] [--profile]
                                         [--records FILE.jsonl]

With ``--threads 1`` (the default) every runtime computes on the calling thread, so latency is
that thread's CPU time (``time.thread_time``: robust on a loaded machine); with more threads it
is wall-clock (noisy). Prints compile time, the three latencies (best and median of --repeat
interleaved rounds), the ratios to ONNX Runtime, and the largest difference to PyTorch.
``--profile`` also prints minitvm's time per kernel (thread CPU time, summed by kernel kind),
with its operands' shapes. ``--records`` builds with tuned knobs (``minitvm.tune``'s records
file) instead of the defaults. The build time printed is warm when the on-disk kernel cache
already holds the kernels (cold and warm compile times: ``bench_compile_time.py``).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402


def mobilenet_v2(classes: int = 1000):
    """torchvision's MobileNetV2 (inverted residuals, ReLU6, width 1.0) in a few lines."""
    import torch
    from torch import nn

    def cbr(cin, cout, k, s, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return layers + [nn.ReLU6()] if act else layers

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            layers = [] if expand == 1 else cbr(cin, hidden, 1, 1)
            layers += cbr(hidden, hidden, 3, stride, groups=hidden)
            layers += cbr(hidden, cout, 1, 1, act=False)
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                   (6, 160, 3, 2), (6, 320, 1, 1)]
            layers, cin = cbr(3, 32, 3, 2), 32
            for t, ch, n, s in cfg:
                for i in range(n):
                    layers.append(Inverted(cin, ch, s if i == 0 else 1, t))
                    cin = ch
            layers += cbr(cin, 1280, 1, 1)
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

        def forward(self, x):
            x = nn.functional.adaptive_avg_pool2d(self.features(x), 1).flatten(1)
            return self.classifier(x)

    torch.manual_seed(0)
    return with_bn_statistics(MobileNetV2())


def with_bn_statistics(model):
    """``model`` in eval mode with non-trivial batch-norm statistics and affine parameters
    (eval mode uses them; the defaults would make every batch norm the identity)."""
    import torch
    from torch import nn

    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)
    return model.eval()


def to_onnx(model, shape) -> bytes:
    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(*shape),), buf, opset_version=17,
                          input_names=["data"], dynamo=False)
    return buf.getvalue()


def _clock(threads: int):
    return time.thread_time if threads == 1 else time.perf_counter


def step_times(gmod, reps: int) -> list[list[float]]:
    """Per step of ``gmod`` in execution order, the seconds of each of ``reps`` calls, every
    prepared step called alone on this thread in graph order (thread CPU time)."""
    st = gmod._state()
    steps = gmod._kernel_calls(st)  # (made on first use)
    times: list[list[float]] = [[] for _ in steps]
    for _ in range(reps):
        for k, step in enumerate(steps):
            t0 = time.thread_time()
            if step[0] == "native":
                step[1](step[2], None, 1)
            else:
                gmod._run_fallback(st, step)
            times[k].append(time.thread_time() - t0)
    return times


def profile(gmod, reps: int = 5) -> list[tuple[str, float, int]]:
    """(kernel name, best seconds over ``reps`` summed over its calls, calls) per kernel
    (``step_times``)."""
    best = [min(ts) for ts in step_times(gmod, reps)]
    rows: dict[str, list] = {}
    entries = gmod._plan["entries"]
    for k, (name, kern, ins, outs) in enumerate(gmod._plan["steps"]):
        shapes = [entries[e][2] for e in ins] + [c.shape for c in kern.consts]
        desc = " ".join("x".join(map(str, s)) for s in shapes) + " -> " + \
            " ".join("x".join(map(str, entries[e][2])) for e in outs)
        r = rows.setdefault(f"{name} [{desc}]", [0.0, 0])
        r[0] += best[k]
        r[1] += 1
    return sorted(((n, t, c) for n, (t, c) in rows.items()), key=lambda r: -r[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="interleaved rounds")
    ap.add_argument("--reps", type=int, default=3, help="timed calls per runtime per round")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="minitvm time per kernel")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch eager")
    ap.add_argument("--records", default=None, help="build with these tuning records")
    args = ap.parse_args(argv)

    import onnx
    import onnxruntime as ort
    import torch

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor
    from minitvm.runtime import threadpool

    shape = (1, 3, 224, 224)
    model = mobilenet_v2()
    blob = to_onnx(model, shape)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")

    threadpool.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob), shape={"data": shape})
    t1 = time.perf_counter()
    import contextlib

    from minitvm import tune

    tuned = tune.apply_history_best(args.records) if args.records else contextlib.nullcontext()
    with tuned, tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    t2 = time.perf_counter()
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    print(f"import {t1 - t0:.2f} s, relay.build -O3 {t2 - t1:.2f} s"
          f"{' (tuned: ' + args.records + ')' if args.records else ' (untuned)'}")

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    # calls alternate one by one: ORT's idle pool threads must not spin into the next runner's turn
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])

    def run_tvm():
        g.set_input("data", x)
        g.run()
        return g.get_output(0).numpy()

    def run_ort():
        return sess.run(None, {"data": x})[0]

    def run_torch():
        with torch.no_grad():
            return model(torch.from_numpy(x)).numpy()

    ref = run_torch()
    out = run_tvm()
    print(f"max |minitvm - torch| {np.abs(out - ref).max():.2e}, "
          f"|ort - torch| {np.abs(run_ort() - ref).max():.2e}")

    runners = {"minitvm": run_tvm, "onnxruntime": run_ort}
    if not args.no_torch:
        runners["torch eager"] = run_torch
    clock = _clock(args.threads)
    for f in runners.values():  # warm up
        f()
    # rounds of --reps calls per runtime, each after a pause (interleave.settled_rounds)
    times = settled_rounds(runners, args.repeat, args.reps, clock)
    kind = "thread CPU time" if args.threads == 1 else "wall clock, noisy"
    print(f"latency, {args.threads} thread(s), {kind}, {args.repeat} interleaved rounds of "
          f"{args.reps}-call medians:")
    ort_best = min(times["onnxruntime"])
    for name, ts in times.items():
        print(f"  {name:12s} best {min(ts) * 1e3:8.2f} ms  median "
              f"{float(np.median(ts)) * 1e3:8.2f} ms  best/ORT {min(ts) / ort_best:5.2f}x")

    if args.profile:
        rows = profile(g)
        total = sum(r[1] for r in rows)
        print(f"minitvm kernels (best of 5, thread CPU time), total {total * 1e3:.2f} ms:")
        for name, t, c in rows[:40]:
            print(f"  {t * 1e3:7.2f} ms {100 * t / total:5.1f}%  x{c:<3d} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
