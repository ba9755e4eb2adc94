"""One convolution (+ bias [+ residual] + relu) built by minitvm beside ONNX Runtime's, and
optionally the same conv under other schedule knobs, timed side by side in one process.

    python benchmarks/bench_conv_ort.py [--threads 1] [--rounds 9] [--runs 10]
        [--knobs '{"lanes_unroll_kx": false}'] [--against DIR] [--set NAME]
        C,O,HW,K,STRIDE,PAD[,RESIDUAL][,g=GROUPS][,d=DILATION] ...

Each shape is ``C`` input and ``O`` output channels on an ``HW x HW`` image (batch 1, fp32), a
``K x K`` filter; a trailing ``1`` adds a residual input. ``K`` and ``PAD`` may be ``KHxKW`` and
``PHxPW`` (Inception's 1x7 / 7x1 filters: ``32,48,23,7x1,1,3x0``), and ``HW`` and ``STRIDE``
``HxW`` and ``SHxSW`` (a conv1d as the conv2d over one row it is legalized to:
``96,96,1x48,1x5,1,0x2``; ST-GCN's temporal conv ``64,64,64x18,9x1,2x1,4x0,n=2``); ``g=`` groups
the conv (``g=C`` is depthwise), ``d=`` dilates it (DeepLab's branches: ``256,64,32,3,1,6,d=6``)
and ``n=`` batches it.
``--knobs`` builds a second minitvm kernel with those knob values for the conv's workload (the
rest at their defaults: see ``minitvm.schedule.tunable``). ``--set`` adds a model's convs
(``SETS``: ResNeXt-50 32x4d's and regnet_like's grouped 3x3 convs, small-channel ones).
``--against DIR`` also runs the conv as another checkout of minitvm builds it
(``git worktree add DIR COMMIT``): built there in a child process, exported, and loaded here,
so that two versions of the code are timed side by side (this checkout's kernel then too,
loaded the same way). A loaded kernel's IR goes through the LLVM pipeline its archive records;
archives written before 3941091 record none and get LLVM's full pipeline, which favoured them
by 10-30% over kernels built with the lighter one.
Rounds are interleaved (``interleave.settled_rounds``); at one thread the clock is the thread's
CPU time, else wall clock; ORT's threads do not spin. Prints the median over rounds and each
minitvm kernel's ratio to ORT (below 1: minitvm is faster).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay, tune  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402
from minitvm.schedule.knobs import KnobTable, key_text, use_knobs  # noqa: E402

# the grouped 3x3 convs of whole models, one of each shape (``--set``)
SETS = {
    # torchvision's ResNeXt-50 32x4d (and bench_new_user_models' resnext50_32x4d): 32 groups
    # of 4, 8, 16, 32 channels, the first block of a stage strided
    "resnext50": ["128,128,56,3,1,1,g=32", "256,256,56,3,2,1,g=32", "256,256,28,3,1,1,g=32",
                  "512,512,28,3,2,1,g=32", "512,512,14,3,1,1,g=32", "1024,1024,14,3,2,1,g=32",
                  "1024,1024,7,3,1,1,g=32"],
    # bench_new_user_models' regnet_like: groups of 16 channels
    "regnet_like": ["48,48,56,3,1,1,g=3", "96,96,56,3,2,1,g=6", "96,96,28,3,1,1,g=6",
                    "208,208,28,3,2,1,g=13", "208,208,14,3,1,1,g=13", "432,432,14,3,2,1,g=27",
                    "432,432,7,3,1,1,g=27"],
    # small-channel 3x3 convs (3..32 in, 16..64 out at 14..64 px), where ORT's NCHWc direct
    # kernels are strong: RGB / grayscale stems, soft_decision_tree's 16->32 at 14x14 batch 32,
    # batches of small planes (Winograd's bands of whole images on AVX2), one strided
    "small_channel": ["3,16,64,3,1,1", "3,32,32,3,1,1", "1,16,28,3,1,1,n=32",
                      "16,16,32,3,1,1", "16,32,14,3,1,1,n=32", "16,32,28,3,1,1,n=8",
                      "32,32,28,3,1,1,n=8", "32,64,14,3,1,1,n=16", "16,64,56,3,1,1",
                      "32,32,16,3,1,1,n=4", "16,32,28,3,2,1,n=8"],
}


def _pair(v: str) -> tuple[int, int]:
    a, _, b = v.partition("x")
    return int(a), int(b or a)


def parse_shape(text: str) -> dict:
    """The conv of a ``C,O,HW,K,STRIDE,PAD[,RESIDUAL][,g=G][,d=D]`` argument."""
    pos = [v for v in text.split(",") if "=" not in v]
    named = dict(v.split("=") for v in text.split(",") if "=" in v)
    unknown = set(named) - {"g", "d", "n"}
    if unknown or len(pos) not in (6, 7):
        raise ValueError(f"bad conv {text!r}: C,O,HW,K,STRIDE,PAD[,RESIDUAL][,g=G][,d=D][,n=N]")
    c, o = (int(v) for v in pos[:2])
    return dict(c=c, o=o, hw=_pair(pos[2]), k=_pair(pos[3]), s=_pair(pos[4]), p=_pair(pos[5]),
                res=len(pos) == 7 and bool(int(pos[6])), g=int(named.get("g", 1)),
                d=int(named.get("d", 1)), n=int(named.get("n", 1)))


def conv_label(sh: dict) -> str:
    (kh, kw), (h, w), (sh_, sw), extra = sh["k"], sh["hw"], sh["s"], ""
    extra += f" g{sh['g']}" if sh["g"] != 1 else ""
    extra += f" d{sh['d']}" if sh["d"] != 1 else ""
    extra += f" n{sh['n']}" if sh["n"] != 1 else ""
    stride = sh_ if sh_ == sw else f"{sh_}x{sw}"
    return (f"{sh['c']}->{sh['o']} {kh}x{kw}/{stride}{extra} at {h}x{w}" +
            (" +res" if sh["res"] else ""))


def conv_model(sh: dict, rng):
    """(Relay module, feeds) of the conv ``sh`` (``parse_shape``)."""
    c, o, (h, wd), (kh, kw), (sh_, sw), (ph, pw), g, d, n = (
        sh[k] for k in "c o hw k s p g d n".split())
    w = (rng.random((o, c // g, kh, kw), dtype=np.float32) - 0.5)
    b = rng.random(o, dtype=np.float32)
    oh = (h + 2 * ph - d * (kh - 1) - 1) // sh_ + 1
    ow = (wd + 2 * pw - d * (kw - 1) - 1) // sw + 1
    x = relay.var("x", shape=(n, c, h, wd))
    y = relay.nn.bias_add(relay.nn.conv2d(x, relay.const(w), strides=(sh_, sw), padding=(ph, pw),
                                          dilation=(d, d), groups=g, kernel_size=(kh, kw),
                                          channels=o), relay.const(b))
    params, feeds = [x], {"x": rng.random((n, c, h, wd), dtype=np.float32)}
    if sh["res"]:
        r = relay.var("r", shape=(n, o, oh, ow))
        y = relay.add(y, r)
        params.append(r)
        feeds["r"] = rng.random((n, o, oh, ow), dtype=np.float32)
    y = relay.nn.relu(y)
    return tvm.IRModule.from_expr(relay.Function(params, y)), feeds


def minitvm_runner(mod, feeds, knobs: dict | None):
    """A run() of the conv built at opt_level 3, under ``knobs`` for its workload when given
    (None when its schedule declares none of them)."""
    table = None
    if knobs is not None:
        tasks = [t for t in tune.extract_tasks(mod) if t.workload[0] == "conv2d_nchw"]
        mine = {k: v for k, v in knobs.items() if tasks and k in tasks[0].space.names}
        if not mine:
            return None  # (the conv's schedule declares none of these knobs)
        table = KnobTable({key_text(tasks[0].workload): tasks[0].space.validate(mine)})
    with use_knobs(table) if table is not None else contextlib.nullcontext():
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm")
    return factory_runner(lib, feeds)


def factory_runner(factory, feeds):
    """A run() of built or loaded ``factory`` with ``feeds`` set."""
    m = graph_executor.GraphModule(factory["default"](tvm.cpu()))
    for name, v in feeds.items():
        m.set_input(name, v)
    return m.run


def export_conv(text: str, path: str) -> None:
    """Build the conv of shape ``text`` (default knobs) and export it to ``path``."""
    mod, _ = conv_model(parse_shape(text), np.random.default_rng(0))
    with tvm.transform.PassContext(opt_level=3):
        relay.build(mod, target="llvm").export_library(path)


def checkout_runner(root: str, text: str, feeds):
    """A run() of the conv as the minitvm checkout at ``root`` builds it."""
    import subprocess
    import tempfile

    from minitvm.runtime.module import load_module

    path = os.path.join(tempfile.mkdtemp(), "conv.so")
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {os.path.abspath(root)!r}); import minitvm; "
            f"sys.path.insert(0, {here!r}); import bench_conv_ort as b; "
            f"b.export_conv({text!r}, {path!r})")
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={**os.environ, "PYTHONPATH": os.path.abspath(root)})
    return factory_runner(load_module(path), feeds)


def ort_runner(mod, feeds, threads: int):
    """ONNX Runtime on the same program (``bench_models.to_onnx``), its threads not spinning."""
    import onnxruntime as ort
    from bench_models import prepare, to_onnx

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(to_onnx(*prepare(mod, {})), so,
                                providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shapes", nargs="*", help="C,O,HW,K,STRIDE,PAD[,RESIDUAL][,g=G][,d=D][,n=N]")
    ap.add_argument("--set", action="append", default=[], choices=sorted(SETS),
                    help="also time a model's grouped convs (SETS)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=10, help="runs per round (their median)")
    ap.add_argument("--knobs", default=None, help="JSON knob values for a second kernel")
    ap.add_argument("--against", default=None, help="another minitvm checkout to time beside")
    args = ap.parse_args(argv)
    shapes = list(args.shapes) + [t for name in args.set for t in SETS[name]]
    if not shapes:
        ap.error("give conv shapes or --set")
    knobs = json.loads(args.knobs) if args.knobs else None
    if knobs is not None and args.against:
        ap.error("--knobs and --against each add a column: give one of them")
    threadpool.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    print(f"threads={args.threads}; ms, median of {args.rounds} interleaved rounds of "
          f"median-of-{args.runs} ({'thread CPU time' if args.threads == 1 else 'wall'})")
    other = "other" if args.against else "knobs"
    print(f"{'conv':34s} {'minitvm':>8s} {other:>8s} {'ORT':>8s} {'mt/ORT':>7s} "
          f"{other + '/ORT':>9s}")
    for text in shapes:
        sh = parse_shape(text)
        mod, feeds = conv_model(sh, np.random.default_rng(0))
        # (with --against both are exported and loaded: a loaded library is compiled anew)
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        runs = {"minitvm": checkout_runner(here, text, feeds) if args.against else
                minitvm_runner(mod, feeds, None)}
        variant = minitvm_runner(mod, feeds, knobs) if knobs is not None else None
        if variant is not None:
            runs["knobs"] = variant
        if args.against:
            runs["knobs"] = checkout_runner(args.against, text, feeds)
        runs["ORT"] = ort_runner(mod, feeds, args.threads)
        times = settled_rounds(runs, args.rounds, args.runs, clock=clock)
        ms = {n: statistics.median(v) * 1e3 for n, v in times.items()}
        label = conv_label(sh)
        kn = f"{ms['knobs']:8.3f}" if "knobs" in ms else f"{'':8s}"
        kr = f"{ms['knobs'] / ms['ORT']:9.2f}" if "knobs" in ms else ""
        print(f"{label:34s} {ms['minitvm']:8.3f} {kn} {ms['ORT']:8.3f} "
              f"{ms['minitvm'] / ms['ORT']:7.2f} {kr}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
