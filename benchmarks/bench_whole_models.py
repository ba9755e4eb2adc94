"""Whole ResNet-50, MobileNetV2 and BERT-base built by minitvm, side by side with ONNX Runtime
and PyTorch eager in one process: untuned and tuned, at 1 and 2 threads, with compile times.

    python benchmarks/bench_whole_models.py [--models resnet50,mobilenetv2,bert]
        [--records FILE.jsonl] [--defaults] [--threads 1,2] [--rounds 5] [--runs 3]
        [--no-compile] [--avx2 [CPU]] [--dialects relay,relax]

Models (fp32): ResNet-50 (``relay.testing.resnet``, 224x224), MobileNetV2
(torchvision's layout, ``bench_mobilenet.mobilenet_v2``, exported to ONNX and imported) and
BERT-base (``relay.testing.bert``, 12 encoder layers, sequence 128), batch 1; on request the
ResNet stem + 2 blocks and the MLP 784-128-10 at batch 1 and 64 (``bench_tune``'s). ONNX
Runtime runs the same graph and weights: the ONNX file minitvm imported (MobileNetV2), or the
Relay graph after batch norm folding written as ONNX (``bench_models.to_onnx``); it runs with
``session.intra_op.allow_spinning=0`` (its idle threads must not spin into the next runner's
turn). PyTorch eager runs the torch module (MobileNetV2) or the same folded graph op by op
(``bench_models.torch_runner``). Each call feeds the same numpy input: ONNX Runtime and
``torch.from_numpy`` read it in place, and so does minitvm (``set_input_zero_copy``; before
stop 26 it copied it with ``set_input``, 6 us of the MLP at batch 64's 150 us).

Contenders: "untuned" (a plain ``relay.build``: the schedules' knobs plus the built-in table of
the host ISA), "defaults" (``--defaults``: the built-in table off), "tuned" (``--records``:
built under ``minitvm.tune.apply_history_best``). Each thread count is timed in interleaved
rounds (every contender once per round, so load spikes hit all alike), each the median of
``--runs`` runs; the table shows the median over rounds (1 thread: the calling thread's CPU
time, where all three runtimes compute; more threads: wall clock, noisy on a shared machine).
``--avx2`` (CPU default ``haswell``; ``znver3``...) adds "avx2": the untuned build for target
``llvm -mcpu=CPU`` (AVX2 code, ``backend.target_cpu``), beside "untuned" (the host's AVX-512),
and limits the peers to AVX2 where they can be: PyTorch (``ATEN_CPU_CAPABILITY=avx2``), oneDNN
under it (``ONEDNN_MAX_CPU_ISA=AVX2``) and MKL (``MKL_ENABLE_INSTRUCTIONS=AVX2``), set before
torch loads; ONNX Runtime has no such switch (its MLAS kernels pick the host's widest ISA), so
its column stays AVX-512, for context.
``--dialects relay,relax`` adds "relax": the same torch module (MobileNetV2's, or the
prepared graph as ``bench_models.torch_module``) through ``torch.export`` and
``relax.frontend.torch.from_exported_program`` (weights bound as constants), ``relax.build``
with the default pipeline and ``relax.VirtualMachine``, timed in the same rounds, with a
relax/relay ratio; ``--dialects relax`` leaves the Relay contenders out.
Compile time: ``relay.build`` at opt_level 3 (``relax.build``) in a fresh process with an
empty on-disk cache ("cold") and again in a second fresh process over the filled cache
("warm").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

MODELS = {"resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "bert": "BERT-base 12L s128",
          # the smaller models, on request (``--models ...,resnet_small,mlp64``)
          "resnet_small": "ResNet stem+2 blocks", "mlp1": "MLP 784-128-10 b1",
          "mlp64": "MLP 784-128-10 b64"}
DEFAULT_MODELS = "resnet50,mobilenetv2,bert"


# ---------------------------------------------------------------------------- the models
def load(name: str) -> dict:
    """The model as minitvm builds it (mod, params, input name and shape), its ONNX bytes and
    a PyTorch eager runner factory ``threads -> (x -> output)``."""
    from minitvm.relay import testing

    if name == "mobilenetv2":
        import onnx
        import torch
        from bench_mobilenet import mobilenet_v2, to_onnx

        from minitvm import relay

        shape = (1, 3, 224, 224)
        model = mobilenet_v2()
        blob = to_onnx(model, shape)
        mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob), shape={"data": shape})

        def torch_eager(threads):
            torch.set_num_threads(threads)

            def run(x):
                with torch.no_grad():
                    return model(torch.from_numpy(x)).numpy()

            return run

        return dict(mod=mod, params=params, input="data", shape=shape, onnx=blob,
                    torch=torch_eager, module=model)
    if name == "resnet50":
        mod, params = testing.resnet.get_workload(num_layers=50)
    elif name == "bert":
        mod, params = testing.bert.get_workload(num_layers=12)  # BERT-base, sequence 128
    elif name == "resnet_small":
        mod, params = testing.resnet.get_small_workload()
    elif name in ("mlp1", "mlp64"):
        from bench_tune import mlp_784_128_10

        mod, params = mlp_784_128_10(int(name[3:]))
    else:
        raise SystemExit(f"unknown model {name!r}; choose from {list(MODELS)}")
    from bench_models import prepare, to_onnx, torch_module, torch_runner

    main, order = prepare(mod, params)
    p = mod["main"].params[0]

    def torch_graph(threads):
        import torch

        run = torch_runner(main, order, threads)
        return lambda x: run(torch.from_numpy(x)).numpy()

    return dict(mod=mod, params=params, input=p.name_hint,
                shape=tuple(int(d) for d in p.type_annotation.shape),
                onnx=to_onnx(main, order), torch=torch_graph, module=torch_module(main, order))


def build(m: dict, records: str | None = None, builtin: bool = True, target: str = "llvm"):
    """relay.build at opt_level 3 (under ``records``' knobs when given); (factory, seconds)."""
    import minitvm as tvm
    from minitvm import relay, tune

    ctx = tune.apply_history_best(records) if records else contextlib.nullcontext()
    t0 = time.perf_counter()
    with ctx, tvm.transform.PassContext(
            opt_level=3, config={"schedule.use_builtin_knobs": builtin}):
        lib = relay.build(m["mod"], target=target, params=m["params"])
    return lib, time.perf_counter() - t0


def relax_module(m: dict):
    """The model's torch module through ``torch.export`` and the Relax importer (weights bound
    as constants, as ``relay.build``'s ``params`` are)."""
    import torch

    from minitvm.relax.frontend.torch import from_exported_program

    example = torch.zeros(m["shape"], dtype=torch.float32)
    with torch.no_grad():
        return from_exported_program(torch.export.export(m["module"], (example,)))


def build_relax(mod):
    """relax.build with the default pipeline; (executable, seconds)."""
    from minitvm import relax

    t0 = time.perf_counter()
    ex = relax.build(mod, target="llvm")
    return ex, time.perf_counter() - t0


def relax_runner(ex, x):
    import minitvm as tvm
    from minitvm import relax

    vm = relax.VirtualMachine(ex, tvm.cpu(0))
    fn, arg = vm["main"], tvm.nd.array(x)  # one array, read in place by every call

    def run():
        out = fn(arg)
        while isinstance(out, (list, tuple)) or type(out).__name__ == "Array":
            out = out[0]
        return out.numpy()

    return run


def minitvm_runner(lib, name: str, x):
    import minitvm as tvm
    from minitvm.contrib import graph_executor

    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))

    def run():  # the input read in place, as ONNX Runtime and torch.from_numpy read theirs
        g.set_input_zero_copy(name, x)
        g.run()
        return g.get_output(0).numpy()

    return run


def ort_runner(blob: bytes, name: str, x, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    return lambda: sess.run(None, feed)[0]


# ---------------------------------------------------------------------------- timing
def interleaved(runners: dict, clock, rounds: int, runs: int) -> dict[str, float]:
    """Median over ``rounds`` interleaved rounds of each runner's median of ``runs`` (ms), each
    runner's turn after a pause and a warm-up (``interleave.settled_rounds``)."""
    times = settled_rounds(runners, rounds, runs, clock)
    return {k: float(np.median(v)) * 1e3 for k, v in times.items()}


def compile_child(name: str, records: str | None, dialect: str = "relay") -> None:
    """Build ``name`` once in this process; print relay.build's (or relax.build's) wall seconds
    as JSON."""
    m = load(name)
    secs = build_relax(relax_module(m))[1] if dialect == "relax" else build(m, records)[1]
    print(json.dumps({"wall": secs}))


def compile_times(name: str, records: str | None, dialect: str = "relay") -> tuple[float, float]:
    """(cold, warm) relay.build (relax.build) seconds, each in a fresh process, over one cache
    directory."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    out = []
    with tempfile.TemporaryDirectory(prefix="minitvm-bench-cache-") as d:
        env = dict(os.environ, MINITVM_CACHE_DIR=d, PYTHONPATH=path)
        for var in ("MINITVM_DISABLE_DISK_CACHE", "MINITVM_DISABLE_BUILD_CACHE"):
            env.pop(var, None)
        cmd = [sys.executable, __file__, "--compile-child", name, "--dialects", dialect] + \
            (["--records", records] if records else [])
        for _ in range(2):
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"building {name} failed (exit {proc.returncode}):\n"
                                 f"{proc.stderr.strip()[-4000:]}")
            out.append(json.loads(proc.stdout.strip().splitlines()[-1])["wall"])
    return out[0], out[1]


def bench(name: str, args) -> list[dict]:
    from minitvm.runtime import threadpool

    m = load(name)
    x = np.random.default_rng(0).standard_normal(m["shape"]).astype("float32")
    libs = {"untuned": build(m)[0]} if "relay" in args.dialects else {}
    if args.defaults:
        libs["defaults"] = build(m, builtin=False)[0]
    if args.records:
        libs["tuned"] = build(m, args.records)[0]
    if args.avx2:
        libs["avx2"] = build(m, target=f"llvm -mcpu={args.avx2}")[0]
    ref = m["torch"](1)(x)
    ex = build_relax(relax_module(m))[0] if "relax" in args.dialects else None
    mt = {k: minitvm_runner(lib, m["input"], x) for k, lib in libs.items()}
    if ex is not None:
        mt["relax"] = relax_runner(ex, x)
    scale = max(1e-6, float(np.max(np.abs(ref))))
    errs = {k: float(np.max(np.abs(fn() - ref))) / scale for k, fn in mt.items()}
    errs["ORT"] = float(np.max(np.abs(ort_runner(m["onnx"], m["input"], x, 1)() - ref))) / scale
    comp = {}
    if not args.no_compile:
        comp = {d: compile_times(name, None, d) for d in args.dialects}
    rows = []
    for threads in args.threads:
        threadpool.set_num_threads(threads)  # before the graph modules: they keep the count
        runners = {k: minitvm_runner(lib, m["input"], x) for k, lib in libs.items()}
        if ex is not None:
            runners["relax"] = relax_runner(ex, x)
        runners["ORT"] = ort_runner(m["onnx"], m["input"], x, threads)
        if not args.no_torch:
            runners["torch"] = (lambda tr: lambda: tr(x))(m["torch"](threads))
        clock = time.thread_time if threads == 1 else time.perf_counter
        ms = interleaved(runners, clock, args.rounds, args.runs)
        rows.append(dict(model=MODELS[name], threads=threads, ms=ms, err=max(errs.values()),
                         comp=comp))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS, help=f"of {','.join(MODELS)}")
    ap.add_argument("--records", default=None, help="also build tuned with this records file")
    ap.add_argument("--defaults", action="store_true",
                    help="also build with the built-in knob table off")
    ap.add_argument("--threads", default="1,2", help="thread counts (1: thread CPU time)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--runs", type=int, default=3, help="runs per round (their median)")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile times")
    ap.add_argument("--no-torch", action="store_true",
                    help="leave PyTorch eager out of the timed rounds (its OpenMP threads, spinning "
                         "after each call, take a core from the others at 2+ threads)")
    ap.add_argument("--avx2", nargs="?", const="haswell", default=None, metavar="CPU",
                    help="also build for -mcpu=CPU (default haswell: AVX2 code) and limit torch "
                         "/ oneDNN / MKL to AVX2 (ONNX Runtime cannot be)")
    ap.add_argument("--dialects", default="relay",
                    help="relay (relay.build + graph executor; its contenders untuned / defaults "
                         "/ tuned / avx2) and / or relax (torch.export -> from_exported_program -> "
                         "relax.build -> relax.VirtualMachine), e.g. relay,relax")
    ap.add_argument("--compile-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.avx2:  # before torch loads (it reads them once)
        os.environ.update(ATEN_CPU_CAPABILITY="avx2", ONEDNN_MAX_CPU_ISA="AVX2",
                          MKL_ENABLE_INSTRUCTIONS="AVX2")
    args.dialects = [d.strip() for d in args.dialects.split(",")]
    if not set(args.dialects) <= {"relay", "relax"} or not args.dialects:
        raise SystemExit(f"--dialects: relay and / or relax, got {args.dialects}")
    if args.compile_child:
        compile_child(args.compile_child, args.records, args.dialects[0])
        return 0
    if args.records and not os.path.exists(args.records):
        raise SystemExit(f"no records file {args.records!r}")
    args.threads = [int(t) for t in args.threads.split(",")]
    from minitvm.runtime import jit

    jit.init()  # before torch loads libgomp: its idle threads then spin as briefly as ours
    t_start = time.time()
    rows = [r for name in args.models.split(",") for r in bench(name.strip(), args)]
    mine = [k for k in ("untuned", "defaults", "tuned", "avx2", "relax") if k in rows[0]["ms"]]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t_start))}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; ms, median of {args.rounds} interleaved "
          f"rounds of median-of-{args.runs}, each after a pause and 20 ms of warm-up; 1 thread: thread CPU "
          "time, 2+: wall (noisy)")
    if args.avx2:
        import torch

        print(f"--avx2: minitvm 'avx2' built for -mcpu={args.avx2}, 'untuned' for the host; torch "
              f"CPU capability {torch.backends.cpu.get_cpu_capability()}, "
              "ONEDNN_MAX_CPU_ISA=AVX2, MKL_ENABLE_INSTRUCTIONS=AVX2; ORT unlimited (AVX-512)")
    peers = ["ORT"] + (["torch"] if not args.no_torch else [])
    head = "".join(f"{k:>9s}" for k in mine + peers)
    ratios = "".join(f"{k[:7] + '/ORT':>12s}" for k in mine) + \
        (f"{'untuned/pt':>11s}" if not args.no_torch and "untuned" in mine else "") + \
        (f"{'avx2/pt':>9s}{'avx2/512':>9s}" if args.avx2 else "") + \
        (f"{'relax/relay':>12s}" if len(args.dialects) == 2 else "")
    comp_head = "".join(f"{d[:5] + ' cold':>11s}{d[:5] + ' warm':>11s}" for d in args.dialects)
    print(f"{'model':20s}{'thr':>4s}{head}{ratios}{comp_head}  max rel err")
    for r in rows:
        ms = r["ms"]
        cells = "".join(f"{ms[k]:9.3f}" for k in mine + peers)
        rat = "".join(f"{ms[k] / ms['ORT']:11.2f}x" for k in mine)
        if not args.no_torch and "untuned" in ms:
            rat += f"{ms['untuned'] / ms['torch']:10.2f}x"
        if args.avx2:
            rat += (f"{ms['avx2'] / ms['torch']:8.2f}x" if not args.no_torch else f"{'':9s}") + \
                f"{ms['avx2'] / ms['untuned']:8.2f}x"
        if len(args.dialects) == 2:
            rat += f"{ms['relax'] / ms['untuned']:11.2f}x"
        comp = "".join(f"{r['comp'][d][0]:11.2f}{r['comp'][d][1]:11.2f}" if r["comp"] else
                       f"{'':22s}" for d in args.dialects)
        print(f"{r['model']:20s}{r['threads']:4d}{cells}{rat}{comp}  {r['err']:.1e}")
    print("ratios are latency ratios: below 1 means minitvm is faster; compile: relay.build "
          "opt_level 3 (untuned) / relax.build (default pipeline) in a fresh process, empty "
          f"on-disk cache (cold) then filled (warm); total {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
