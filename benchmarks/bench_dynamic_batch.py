"""Models with a dynamic batch axis, built once for any batch size: each written in PyTorch,
exported to ONNX with ``dynamic_axes={"x": {0: "batch"}}``, imported with
``relax.frontend.onnx.from_onnx`` (the batch becomes the symbolic ``batch``), compiled once by
``relax.build`` and run on the Relax VM at several batch sizes, side by side with ONNX Runtime on
the same ONNX file. One thread, interleaved rounds, thread CPU time (with ``--threads N``: N
threads for both, wall-clock time).

    python benchmarks/bench_dynamic_batch.py [--models resnet18,mobilenetv3_small] [--batches 1,4]
                                             [--rounds 5] [--threads 1] [--dialect relay]
                                             [--relay-loop]

``--dialect relay`` also imports each model with ``relay.frontend.from_onnx(model, shape={"x":
[relay.Any(), ...]})``, compiles it once with ``relay.vm.compile`` and times the Relay VM in the
same interleaved rounds (its columns: ``relay`` ms, its ratio to ORT, its build seconds, its
largest error relative to ORT's output and ``1st ms``, the wall time of its first call at the
batch size: a kernel the build could not make symbolic compiles then, outside the build seconds
and the timing; a line per model says how many kernels are symbolic / specialized). ``--relay-loop`` adds a column timing the same
executable with the VM's native entry off (``vm.native_entry = False``: every call in the
bytecode dispatch loop, as before the native entry), in the same rounds.

Needs the ``torch`` and ``onnx`` extras. The models are ``bench_new_user_models``' of one image
input (rounds one to seven and nine to eleven) plus a ResNet-18. Prints, per model and batch
size, the time of each, their ratio, the one build's seconds and the largest error relative to PyTorch's output.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import bench_new_user_models  # noqa: E402
import new_user_models_eleventh  # noqa: E402
import new_user_models_fifth  # noqa: E402
import new_user_models_ninth  # noqa: E402
import new_user_models_seventh  # noqa: E402
import new_user_models_sixth  # noqa: E402
import new_user_models_tenth  # noqa: E402
import new_user_models_thirteenth  # noqa: E402
import new_user_models_twelfth  # noqa: E402
from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402

DEFAULT = "resnet18,mobilenetv3_small,efficientnet_b0,resnext50_32x4d,unet,vit_tiny,convnext_mini"


def resnet18():
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return (self.body(x) + self.short(x)).relu()

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def export_dynamic(ctor, shape):
    """(the PyTorch model, its ONNX bytes with input ``x`` and output ``y`` of dynamic batch)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = ctor().eval()
    for m in model.modules():  # running statistics away from the identity
        if isinstance(m, nn.BatchNorm2d | nn.BatchNorm1d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, *shape[1:]),), buf, input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False,
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return model, buf


def model_table() -> dict:
    """name -> (constructor, input shape) of every model this script knows."""
    table = {"resnet18": (resnet18, (1, 3, 224, 224))}
    for group in (bench_new_user_models.models, bench_new_user_models.new_models,
                  bench_new_user_models.third_models, bench_new_user_models.fourth_models,
                  new_user_models_fifth.fifth_models, new_user_models_sixth.sixth_models,
                  new_user_models_seventh.seventh_models, new_user_models_ninth.ninth_models,
                  new_user_models_tenth.tenth_models,
                  new_user_models_eleventh.eleventh_models,
                  new_user_models_twelfth.twelfth_models,
                  new_user_models_thirteenth.thirteenth_models):
        # the models of one image input (a shape); those with other inputs are left out
        table.update({k: v for k, v in group().items() if isinstance(v[1], tuple)})
    return table


def relay_vm(onnx_model, shape):
    """(the Relay VM of ``onnx_model`` imported with a dynamic batch, its build seconds)."""
    from minitvm import relay
    from minitvm.runtime import vm as runtime_vm

    t0 = time.perf_counter()
    mod, params = relay.frontend.from_onnx(onnx_model, shape={"x": [relay.Any(), *shape[1:]]})
    exe = relay.vm.compile(mod, target="llvm", params=params)
    return runtime_vm.VirtualMachine(exe, tvm.cpu()), time.perf_counter() - t0


def kernel_counts(exe) -> str:
    """How the Relay executable's dynamic-shape kernels run: one symbolic kernel for every
    size, or specialized (compiled at the first call of each input shape)."""
    try:
        from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
    except ImportError:  # (a tree from before symbolic kernels: every one specialized)
        return "symbolic ?"
    c = dynamic_kernel_counts(exe.kernels)
    return f"symbolic {c['symbolic']} / specialized {c['specialized']}"


def _relay_cells(name, rvm, x, xt, ort_out):
    """The Relay VM's output at this batch, its largest error relative to ORT's and the wall
    seconds of that first call at the batch size (with specialized kernels it compiles them);
    None (printed) when it fails."""
    try:
        t0 = time.perf_counter()
        out = rvm.invoke("main", xt)
        first = time.perf_counter() - t0
        out = (out if hasattr(out, "numpy") else out[0]).numpy()
    except Exception as e:  # noqa: BLE001 - report and go on with the other columns
        print(f"{name:18s} {x.shape[0]:5d} relay FAILED: {type(e).__name__}: "
              f"{str(e).strip().splitlines()[0][:140]}", flush=True)
        return None
    return float(np.abs(out - ort_out).max() / max(np.abs(ort_out).max(), 1e-6)), first


def measure(name, ctor, shape, batches, rounds, threads=1, dialect="relax", loop=False):
    import onnx
    import onnxruntime as ort
    import torch

    model, buf = export_dynamic(ctor, shape)
    t0 = time.perf_counter()
    mod = relax.frontend.onnx.from_onnx(onnx.load_from_string(buf.getvalue()))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    build = time.perf_counter() - t0
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
    rvm = None
    if dialect == "relay":
        try:
            rvm, rbuild = relay_vm(onnx.load_from_string(buf.getvalue()), shape)
            print(f"{name:18s} relay kernels: {kernel_counts(rvm.exe)}", flush=True)
        except Exception as e:  # noqa: BLE001 - the Relax and ORT columns still print
            print(f"{name:18s} relay import/build FAILED: {type(e).__name__}: "
                  f"{str(e).strip().splitlines()[0][:140]}", flush=True)
    for batch in batches:
        x = np.random.default_rng(batch).standard_normal((batch, *shape[1:])).astype("float32")
        with torch.no_grad():
            ref = model(torch.from_numpy(x)).numpy()
        xt = tvm.nd.array(x)
        out = vm["main"](xt)
        out = (out if hasattr(out, "numpy") else out[0]).numpy()
        err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-6))
        runs = {"minitvm": lambda xt=xt: vm["main"](xt),
                "ort": lambda x=x: sess.run(None, {"x": x})}
        cells = None if rvm is None else _relay_cells(name, rvm, x, xt,
                                                      sess.run(None, {"x": x})[0])
        rerr, rfirst = (None, None) if cells is None else cells
        if rerr is not None:
            runs["relay"] = lambda xt=xt: rvm.invoke("main", xt)
            if loop:
                lvm = type(rvm)(rvm.exe, tvm.cpu())
                lvm.native_entry = False  # the bytecode dispatch loop for every call
                runs["loop"] = lambda xt=xt, lvm=lvm: lvm.invoke("main", xt)
        times = settled_rounds(runs, rounds, 3,
                               clock=time.thread_time if threads == 1 else time.perf_counter)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        line = (f"{name:18s} {batch:5d} {med['minitvm']:9.2f} {med['ort']:9.2f} "
                f"{med['minitvm'] / med['ort']:8.2f}x {build:7.1f} {err:9.1e}")
        if rerr is not None:
            line += (f" {med['relay']:9.2f} {med['relay'] / med['ort']:8.2f}x {rbuild:7.1f} "
                     f"{rerr:9.1e} {rfirst * 1e3:9.1f}")
            if loop:
                line += f" {med['loop']:9.2f} {med['loop'] / med['ort']:8.2f}x"
        print(line, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT, help="comma-separated names")
    ap.add_argument("--batches", default="1,4", help="comma-separated batch sizes")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="threads for both (>1: wall clock)")
    ap.add_argument("--dialect", choices=("relax", "relay"), default="relax",
                    help="relay: also time the Relay VM (ONNX importer, relay.Any() batch)")
    ap.add_argument("--relay-loop", action="store_true",
                    help="with --dialect relay: also time the Relay VM without its native entry")
    args = ap.parse_args()
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import torch
    except ImportError as e:
        print(f"needs the torch and onnx extras (pip install -e '.[torch,onnx]'): {e}")
        return 0
    torch.set_num_threads(1)
    threadpool.set_num_threads(args.threads)
    table = model_table()
    names = args.models.split(",")
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown models {unknown}; choose from {list(table)}")
        return 2
    batches = [int(b) for b in args.batches.split(",")]
    clock = "one thread, ms (thread CPU time)" if args.threads == 1 else \
        f"{args.threads} threads, ms (wall clock)"
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {clock}, median of "
          f"{args.rounds} interleaved rounds of median-of-3; one relax.build per model serves "
          "every batch size")
    print(f"{'model':18s} {'batch':>5s} {'minitvm':>9s} {'ORT':>9s} {'vs ORT':>9s} "
          f"{'build s':>7s} {'max rel err':>9s}" + (
              f" {'relay':>9s} {'vs ORT':>9s} {'build s':>7s} {'err v ORT':>9s} {'1st ms':>9s}"
              if args.dialect == "relay" else "") +
          (f" {'loop':>9s} {'vs ORT':>9s}" if args.dialect == "relay" and args.relay_loop
           else ""))
    failed = []
    for name in names:
        try:
            measure(name, *table[name], batches, args.rounds, args.threads, args.dialect,
                    args.relay_loop)
        except Exception as e:  # noqa: BLE001 - report (an export torch cannot do) and go on
            failed.append(name)
            print(f"{name:18s} FAILED: {type(e).__name__}: {str(e).strip().splitlines()[0][:160]}",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
