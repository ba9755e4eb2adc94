"""Where the time goes, layer by layer: minitvm's kernels beside ONNX Runtime's nodes on the same
ONNX model (ResNet-50 or MobileNetV2 at 1x3x224x224, fp32, batch 1), at one thread.

    python benchmarks/bench_layers_ort.py [--model resnet50|mobilenetv2|FILE.onnx]
                                          [--repeat 20] [--save FILE.onnx] [--alone]

Prints the whole model's latency (thread CPU time, median and best of ``--repeat`` interleaved
rounds, and the ratio to ONNX Runtime), then one row per minitvm kernel in execution order: its
time (thread CPU time, median of 9 calls in graph order) next to ONNX Runtime's node for the
same layer (its per-node profile, ``SessionOptions.enable_profiling``: median of 15 runs). A
conv kernel pairs with the first unpaired ORT Conv node of the same data input and output
shapes (both fuse a conv with its bias, activation and residual add into one node); a dense
with the first unpaired Gemm / MatMul node of its output shape (none: ORT runs it inside
another node, as an LSTM's input projection); pooling and the rest pair by op kind. ``--alone`` adds each kernel's time called
again and again on its own (its input, output and scratch stay in cache; median of 9 calls after
one) and the ratio in graph order / alone: what the cache state the layers before it leave costs
that kernel (its input or its output's lines out of L2, its scratch evicted).
ORT's profile times are wall clock: on a loaded machine read the per-layer ratios with care
(the whole-model ratio is robust). ``--save`` writes the model and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))


def resnet50(classes: int = 1000):
    """torchvision's ResNet-50 layout (bottleneck blocks 3-4-6-3, stride in the 3x3 conv) in a
    few lines, with non-trivial batch-norm statistics."""
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, stride):
            super().__init__()
            cout = mid * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                   nn.MaxPool2d(3, 2, 1)], 64
    for mid, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            layers.append(Bottleneck(cin, mid, stride if i == 0 else 1))
            cin = mid * 4
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, classes))
    from bench_mobilenet import with_bn_statistics

    torch.manual_seed(0)
    return with_bn_statistics(model)


def model_bytes(name: str) -> bytes:
    """The ONNX bytes of ``name`` (resnet50, mobilenetv2) or of the file ``name``."""
    from bench_mobilenet import mobilenet_v2, to_onnx

    if name == "resnet50":
        return to_onnx(resnet50(), (1, 3, 224, 224))
    if name == "mobilenetv2":
        return to_onnx(mobilenet_v2(), (1, 3, 224, 224))
    with open(name, "rb") as f:
        return f.read()


def kernel_times(gmod, reps: int = 9) -> list[tuple[str, str, float, list, tuple, int]]:
    """(kernel, shapes, median seconds, input shapes, output shape, elements of its largest
    weight) per step of ``gmod`` in execution order, each step called on this thread in graph
    order (thread CPU time)."""
    from bench_mobilenet import step_times

    times = step_times(gmod, reps)
    entries = gmod._plan["entries"]
    rows = []
    for k, (name, kern, ins, outs) in enumerate(gmod._plan["steps"]):
        desc = "x".join(map(str, entries[ins[0]][2])) + " -> " + \
            "x".join(map(str, entries[outs[0]][2])) if ins else ""
        weights = [entries[e][2] for e in ins[1:]] + [c.shape for c in kern.consts]
        rows.append((name.replace("tvmgen_default_fused_", ""), desc, float(np.median(times[k])),
                     [tuple(entries[e][2]) for e in ins], tuple(entries[outs[0]][2]),
                     max((int(np.prod(w)) for w in weights), default=0)))
    return rows


def alone_times(gmod, reps: int = 9) -> list[float]:
    """Per step of ``gmod`` in execution order, the median seconds (thread CPU time) of ``reps``
    calls of that step in a row after a first one: the kernel with its data hot in cache."""
    st = gmod._state()
    out = []
    for step in gmod._kernel_calls(st):
        ts = []
        for _ in range(reps + 1):
            t0 = time.thread_time()
            if step[0] == "native":
                step[1](step[2], None, 1)
            else:
                gmod._run_fallback(st, step)
            ts.append(time.thread_time() - t0)
        out.append(float(np.median(ts[1:])))
    return out


def wide_filter(weight_elements: int, data_shape: tuple, out_shape: tuple) -> bool:
    """Does a conv's weight (as given or as a kernel prepacked it: Winograd's transformed
    tiles, channel vectors) hold at least two values per input x output channel pair, i.e. is
    it wider than 1x1? Two convs of the same data and output shapes (SqueezeNet's expand 1x1
    and 3x3) pair by it; a grouped conv's weight has few values per pair on both sides."""
    pairs = int(data_shape[1]) * int(out_shape[1]) if len(data_shape) > 1 and \
        len(out_shape) > 1 else 0
    return pairs > 0 and weight_elements >= 2 * pairs


def ort_node_times(blob: bytes, feeds: dict, runs: int = 15) -> list[tuple]:
    """(node, op type, median seconds, data input shape, output shape, elements of its second
    input: a conv's weight) per ONNX Runtime node at one thread, in run order."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        so.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
        for _ in range(3 + runs):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    per: dict[tuple, list[float]] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            a = e["args"]
            ins = a.get("input_type_shape") or [{"": ()}]
            shapes = [tuple(next(iter(d.values()))) for d in
                      ins[:1] + (a.get("output_type_shape") or [{"": ()}])[:1]]
            w = int(np.prod(next(iter(ins[1].values())))) if len(ins) > 1 else 0
            per.setdefault((e["name"][:-len("_kernel_time")], a["op_name"], *shapes, w),
                           []).append(e["dur"] * 1e-6)
    return [(n, op, float(np.median(d[-runs:])), x, y, w)
            for (n, op, x, y, w), d in per.items()]


OP_KIND = {"max_pool2d": "MaxPool", "avg_pool2d": "AveragePool",
           "global_avg_pool2d": "GlobalAveragePool"}
# ORT nodes a dense kernel may pair with (``pair_dense``)
GEMM_OPS = ("Gemm", "MatMul", "FusedMatMul")


def pair_dense(gemms: list, out: tuple):
    """Remove and return the first of ORT's GEMM nodes ``gemms`` (``(seconds, data shape,
    output shape)``) whose output holds ``out``'s elements with ``out``'s last dim (ORT keeps a
    torch Linear's leading dims, minitvm's dense flattens them), or None. Pairing by kind alone
    matched a dense that ORT runs inside another node (an LSTM's input projection) with the
    next Gemm of another shape: DCCRN's 256x512 -> 256x256 against a 256x64 -> 256x512 node."""
    for g in gemms:
        ys = g[2]
        if ys and out and ys[-1] == out[-1] and int(np.prod(ys)) == int(np.prod(out)):
            gemms.remove(g)
            return g
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--save", default=None, metavar="FILE.onnx")
    ap.add_argument("--alone", action="store_true",
                    help="also time each kernel called alone, its data hot in cache")
    args = ap.parse_args(argv)
    blob = model_bytes(args.model)
    if args.save:
        with open(args.save, "wb") as f:
            f.write(blob)
        print(f"wrote {args.save}")
        return 0

    import onnx
    import onnxruntime as ort

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor
    from minitvm.runtime import threadpool

    model = onnx.load_from_string(blob)
    # every graph input at its shape and type in the model (an exported new-user model need
    # not be one 1x3x224x224 image); integer inputs (indices) are small non-negative values
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in model.graph.input:
        tt = inp.type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        feeds[inp.name] = rng.standard_normal(dims).astype(dtype) if dtype.kind == "f" \
            else rng.integers(0, 2, dims).astype(dtype)
    threadpool.set_num_threads(1)
    mod, params = relay.frontend.from_onnx(model, shape={k: v.shape for k, v in feeds.items()})
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    print(f"{args.model}: relay.build -O3 {time.perf_counter() - t0:.1f} s")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])

    def run_tvm():
        for k, v in feeds.items():
            g.set_input(k, v)
        g.run()
        return g.get_output(0).numpy()

    def run_ort():
        return sess.run(None, feeds)[0]

    print(f"max |minitvm - ORT| {np.abs(run_tvm() - run_ort()).max():.2e}")
    times = {"minitvm": [], "onnxruntime": []}
    for _ in range(args.repeat):
        for who, fn in (("minitvm", run_tvm), ("onnxruntime", run_ort)):
            t0 = time.thread_time()
            fn()
            times[who].append(time.thread_time() - t0)
    med = {k: float(np.median(v)) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(f"whole model, 1 thread, thread CPU time, {args.repeat} interleaved rounds:")
    for who in times:
        print(f"  {who:12s} median {med[who] * 1e3:8.2f} ms  best {best[who] * 1e3:8.2f} ms  "
              f"median/ORT {med[who] / med['onnxruntime']:.3f}  "
              f"best/ORT {best[who] / best['onnxruntime']:.3f}")

    kernels = kernel_times(g)
    alone = alone_times(g) if args.alone else None
    nodes = ort_node_times(blob, feeds)
    convs = [(t, xs, ys, wide_filter(w, xs, ys)) for _, op, t, xs, ys, w in nodes
             if op == "Conv"]
    gemms = [(t, xs, ys) for _, op, t, xs, ys, _ in nodes if op in GEMM_OPS]
    by_kind: dict[str, list[float]] = {}
    for _, op, t, _, _, _ in nodes:
        if op != "Conv" and op not in GEMM_OPS:
            by_kind.setdefault(op, []).append(t)
    print("per layer (ms): minitvm  ORT  minitvm/ORT" +
          ("  alone  graph/alone" if alone else "") + "  kernel  shapes")
    total = [0.0, 0.0]
    for k, (kname, desc, t, ins, out, w) in enumerate(kernels):
        o = None
        if "conv2d" in kname:  # the first unmatched Conv node with this data input and output,
            # of a filter as wide (1x1 or not), else of any filter
            same = [c for c in convs if c[2] == out and c[1] in ins]
            wide = ins and wide_filter(w, ins[0], out)
            hit = next((c for c in same if c[3] == wide), same[0] if same else None)
            if hit is not None:
                convs.remove(hit)
                o = hit[0]
        elif "nn_dense" in kname or "nn_matmul" in kname:  # the same output shape
            hit = pair_dense(gemms, out)
            o = None if hit is None else hit[0]
        else:
            kind = next((v for k, v in OP_KIND.items() if f"nn_{k}" in kname), None)
            o = by_kind[kind].pop(0) if by_kind.get(kind) else None
        total[0] += t
        total[1] += o or 0.0
        ratio = f"{t / o:5.2f}" if o else "    -"
        ort_ms = f"{o * 1e3:7.3f}" if o else "      -"
        hot = f"  {alone[k] * 1e3:7.3f} {t / alone[k]:5.2f}" if alone and alone[k] > 0 else \
            "        -     -" if alone else ""
        print(f"  {t * 1e3:7.3f} {ort_ms} {ratio}{hot}  {kname}  {desc}")
    rest = sum(t for ts in by_kind.values() for t in ts) + sum(c[0] for c in convs) + \
        sum(g[0] for g in gemms)
    print(f"  sums: minitvm {total[0] * 1e3:.2f} ms, ORT {(total[1] + rest) * 1e3:.2f} ms "
          f"(of which {rest * 1e3:.2f} ms in ORT nodes without a minitvm kernel)" +
          (f", minitvm kernels alone {sum(alone) * 1e3:.2f} ms" if alone else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
