"""Compile-time benchmark: cold and warm ``relay.build`` (opt_level 3, target llvm).

Each build runs in a fresh Python process with the on-disk kernel cache in a temporary
directory: "cold" starts from an empty cache, "warm" is a second fresh process after the cold one
filled it (it loads the whole build: "whole" says so; see ``relay.backend.build_cache``). "seq" is a cold build with parallel compilation off (``MINITVM_COMPILE_JOBS=1``).
Times are of ``relay.build`` alone (imports and model construction excluded): wall seconds, and
CPU seconds of the building process plus its compile workers. On a machine shared with other
work the wall times grow with the load; the CPU figures do not.

Run: python benchmarks/bench_compile_time.py [--models resnet50,bert] [--no-seq]
The issue's budget: ResNet-50 cold under 2.5 s, warm under 0.5 s.

The models of ``bench_new_user_models.py`` build here too (``--models bilstm_tagger,pix2pix`` or
``--group all``; they need the torch extra): traced and imported with ``from_pytorch`` before the
clock starts. ``--cold-only`` skips the warm and sequential builds, ``--profile DIR`` writes a
cProfile of each cold build to ``DIR/NAME.prof`` (the parent process only, not its workers:
run with ``MINITVM_COMPILE_JOBS=1`` to see every kernel's lowering in it).

``--phases`` prints each cold build's CPU split by phase instead: every Relay pass by name,
lowering, kernel keys, LLVM IR generation, LLVM compile, in the parent's main thread and in the
compile workers, and the serial rest (``compile_phases.py``). The instrumented build runs a
little slower than a plain one; its split, not its total, is the point.
Run: python benchmarks/bench_compile_time.py --phases --models resnet50,bilstm_tagger

``--kernels`` prints each cold build's kernels instead (one process, ``MINITVM_COMPILE_JOBS=1``):
TIR and LLVM IR lines, IR pipeline, IR generation and LLVM CPU seconds, the costliest first
(``compile_phases.kernel_table``).
Run: python benchmarks/bench_compile_time.py --kernels --models mobilenet

``--ab OLD_TREE`` measures a change: cold builds alternating between the package imported from
another tree (``mkdir /tmp/base && git archive BASE | tar -x -C /tmp/base``) and this one,
median CPU per side, and a check that both built the same module (graph JSON, kernel names,
parameters).
Run: python benchmarks/bench_compile_time.py --ab /tmp/base --models resnet50 --rounds 6

Where a cold ResNet-50 build went (stop 40, before its cuts; ``--phases`` and a per-kernel LLVM
split, CPU s): main thread 2.10 = LLVM 1.08, IR generation 0.27, graph codegen 0.22 (weight
repacking), Relay passes 0.20 (FoldConstant 0.10), TIR passes and keys 0.15, lowering 0.09,
disk loads 0.03; one worker 1.59 = LLVM 1.11, IR generation 0.32, the rest 0.16. Serial: 0.27
before the worker forks, 0.13 after it. LLVM over all 36 kernels: parsing 0.14, IR passes 0.69
(InstCombine 0.34 of the minimal pipeline's 0.38; the two O1 kernels 0.27), machine code 1.30
(instruction selection 0.37, loop strength reduction 0.14: off, BERT ran 19% slower). About 7 ms
of it is per-kernel overhead; the rest grows with the unrolled kernels' size. The cuts (minimal
pipeline without InstCombine, no post-RA scheduler, CodeGenOpt::Less, value numbering in the IR
text builder): ResNet-50 3.87 -> 3.54 CPU s (main + worker), BERT main thread 0.84x.
Then in the schedules' code: the two O1 kernels (conv + residual + the next block's batch norm
as scale and shift + relu: a pre-activation ResNet's norm follows the residual add, so it cannot
fold into the conv weights) read the scale and shift under ``if kb == last`` in their pixel
loop, which LLVM's loop passes never hoisted: they take the minimal pipeline now
(``tir.analysis.loop_invariant``), 0.54 -> 0.17 CPU s; and the 1x1 convs' transposed store
reads its tile back in a rolled loop over the output channels, not 32 unrolled ones
(``conv_pointwise.TRANSPOSE_UNROLL``), 12 kernels 0.84 -> 0.42 CPU s of LLVM, same run time;
and the 7x7 global pool sums its 49 contiguous floats in vectors, not 49 taps gathered across
16 channels (``lower.FLAT_VECTORS``), 0.155 -> 0.013 s. ``--ab``, 5 rounds, load 6: ResNet-50
main thread 2.18 -> 1.61 s, workers 1.60 -> 1.08; ``--phases``: main thread 1.51 s (LLVM 0.58),
worker 1.03 (LLVM 0.61). InstCombine went back into the minimal pipeline after these numbers:
without it a conv_lanes 7x7 tile spilled an accumulator (``jit.MINIMAL_PIPELINE``).

Stop 48 (a CPU timeline of the parent and its worker): 0.37 CPU s serial before the fork (Relay
passes 0.25), 1.5 s each in the parallel part, 0.25 s serial after it, 0.20 of that the weight
transforms (page faults and strided copies). Cuts: ``jit.host_cpu`` asked LLVM ~206 times
(cached now), Python's young-generation GC ran 68+6 collections (``graph_build``'s threshold:
4+0), and the weight transforms run on two threads beside the graph walk. Five interleaved
rounds, load 10-13, same module: main thread 2.49 -> 1.98 s, process 2.65 -> 2.37, workers
1.72 -> 1.55. LLVM options that would cut its time further (``-disable-lsr`` 20% of LLVM's,
``-enable-misched=false`` plus ``-disable-machine-sink`` 4-10%) each made ResNet-50 5% slower
to run; tail duplication off changed no object code and saved nothing measurable.

Stop 62 (``--kernels``: IR sizes per kernel): MobileNet's depthwise kernels were its largest,
their rows' tiles and vectors unrolled into copies that shared nothing: 32 at 112x112 3x3 1,577
TIR / 4,774 LLVM IR lines. A row's same-shape tiles now run in a rolled loop and a row's vector
loop rolls once its copies pass ``depthwise.UNROLL_MAX_STMTS`` statements (1,267 lines; the
same outputs bit for bit, the kernels as fast or faster: 175 -> 161 us). MobileNet (v1) kernels
TIR 4,357 -> 2,599 lines, LLVM IR 25.7k -> 19.9k, IR generation 0.50 -> 0.38 s, LLVM 1.00 ->
0.84 s. Cold builds, CPU s (process + workers, 3 alternating rounds, load 15): MobileNetV2
(ONNX) 3.01 -> 2.45, MobileNet 2.36 -> 1.88; warm builds unchanged (0.05). MobileNetV2 runs in
10.4 / 8.7 -> 9.2 / 8.5 ms (bench_whole_models, 1 thread, two alternating processes each).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODELS = ["resnet18", "resnet50", "mobilenet", "bert"]


def _new_user_table() -> dict:
    """``bench_new_user_models``'s table: name -> (constructor, input spec)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_new_user_models as nu

    return {**nu.models(), **nu.new_models(), **nu.third_models(), **nu.fourth_models(),
            **nu.fifth_models()}


def _group(group: str) -> list[str]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_new_user_models as nu

    makers = {"first": nu.models, "second": nu.new_models, "third": nu.third_models,
              "fourth": nu.fourth_models, "fifth": nu.fifth_models}
    if group == "all":
        return list(_new_user_table())
    return list(makers[group]())


def _new_user_workload(name: str):
    import warnings

    import bench_new_user_models as nu
    import torch

    from minitvm import relay

    warnings.filterwarnings("ignore")
    model, inputs = nu.prepare(*_new_user_table()[name])
    traced = torch.jit.trace(model, tuple(inputs.values()), check_trace=False)
    return relay.frontend.from_pytorch(traced, nu.input_infos(inputs))


def _workload(name: str):
    from minitvm.relay.testing import bert, mobilenet, resnet

    if name not in MODELS:
        return _new_user_workload(name)

    if name.startswith("resnet"):
        return resnet.get_workload(num_layers=int(name[len("resnet"):]))
    if name == "mobilenet":
        return mobilenet.get_workload()
    if name == "bert":
        return bert.get_workload(num_layers=12)  # BERT-base, sequence length 128
    raise SystemExit(f"unknown model {name!r}; choose from {MODELS}")


def child(name: str, profile: str | None = None, phases: bool = False,
          kernels: bool = False) -> None:
    """Build ``name`` once in this process and print the timings as one JSON line."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.backend import disk_cache

    mod, params = _workload(name)
    if phases:
        return _phases_child(mod, params)
    if kernels:
        import compile_phases as cp

        log = cp.install_kernel_log()
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
    t0, c0, m0 = time.perf_counter(), os.times(), time.thread_time()
    if prof is not None:
        prof.enable()
    with tvm.transform.PassContext(opt_level=3):
        factory = relay.build(mod, target="llvm", params=params)
    if prof is not None:
        prof.disable()
    wall, c1, main_cpu = time.perf_counter() - t0, os.times(), time.thread_time() - m0
    if prof is not None:
        prof.dump_stats(os.path.join(profile, f"{name}.prof"))
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    workers = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    if kernels:
        print(cp.kernel_table(name, log))
        return
    stats = disk_cache.get_cache().stats
    print(json.dumps({"wall": wall, "cpu": cpu, "worker_cpu": workers, "main_cpu": main_cpu,
                      "disk_hits": stats["hits"], "disk_writes": stats["writes"],
                      "build_hit": stats.get("build_hits", 0), "result": _result_digest(factory)}))


def _result_digest(factory) -> str:
    """SHA-1 of what a build produced: graph JSON, kernel names, parameters' names and bytes
    (``--ab``: both trees must build the same module)."""
    import hashlib

    import numpy as np

    h = hashlib.sha1(factory.get_graph_json().encode())
    h.update("|".join(sorted(factory.get_lib().kernels)).encode())
    for k, v in sorted(factory.get_params().items()):
        a = np.ascontiguousarray(v.numpy() if hasattr(v, "numpy") else v)
        h.update(f"{k}|{a.dtype.str}|{a.shape}".encode())
        h.update(memoryview(a.reshape(-1)).cast("B") if a.size else b"")
    return h.hexdigest()


def _phases_child(mod, params) -> None:
    """One cold build timed by phase (``compile_phases``); its split as one JSON line."""
    import compile_phases as cp

    import minitvm as tvm
    from minitvm import relay

    with tempfile.TemporaryDirectory(prefix="minitvm-phases-") as wdir:
        instrument = cp.install(wdir)
        t0, c0, m0 = time.perf_counter(), os.times(), time.thread_time()
        with tvm.transform.PassContext(opt_level=3, instruments=[instrument]):
            cp.CLOCK.start()
            relay.build(mod, target="llvm", params=params)
            main = cp.CLOCK.stop()
        wall, c1, m1 = time.perf_counter() - t0, os.times(), time.thread_time()
        workers, n = cp.worker_phases(wdir)
    print(json.dumps({
        "wall": wall, "cpu": (c1.user - c0.user) + (c1.system - c0.system), "main_cpu": m1 - m0,
        "worker_cpu": (c1.children_user - c0.children_user)
        + (c1.children_system - c0.children_system),
        "main": main, "workers": workers, "n_workers": n, "counts": dict(cp.CLOCK.counts)}))


def _kernels(name: str) -> None:
    """Print the kernel table of one cold, sequential build of ``name`` (a fresh process)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="minitvm-bench-cache-") as d:
        env = dict(os.environ, MINITVM_CACHE_DIR=d, PYTHONPATH=path, MINITVM_COMPILE_JOBS="1")
        proc = subprocess.run([sys.executable, __file__, "--child", name, "--kernels"], env=env,
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building {name} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr.strip()[-4000:]}")
    print(proc.stdout.strip(), flush=True)


def _run(name: str, cache_dir: str, extra_env: dict | None = None,
         profile: str | None = None, phases: bool = False, root: str | None = None) -> dict:
    """Build ``name`` in a fresh process importing minitvm from ``root`` (default: this
    checkout)."""
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, MINITVM_CACHE_DIR=cache_dir, PYTHONPATH=path, **(extra_env or {}))
    env.pop("MINITVM_DISABLE_DISK_CACHE", None)
    env.pop("MINITVM_DISABLE_BUILD_CACHE", None)
    cmd = [sys.executable, __file__, "--child", name]
    if profile:
        cmd += ["--profile", profile]
    if phases:
        cmd += ["--phases"]
    proc = subprocess.run(cmd, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:  # say why: the child's traceback, not only its exit status
        raise SystemExit(f"building {name} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr.strip()[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ab(names: list[str], old_tree: str, rounds: int) -> None:
    """Cold builds alternating old/new (each in a fresh process and cache), medians of the
    parent's main-thread CPU, its process CPU and the workers' CPU, and whether both sides built
    the same module."""
    import statistics

    sides = {"old": os.path.abspath(old_tree), "new": None}
    print(f"A/B cold relay.build, {rounds} rounds, old = {sides['old']}, new = this checkout; "
          f"load average {os.getloadavg()[0]:.1f}")
    for name in names:
        runs: dict[str, list] = {"old": [], "new": []}
        for r in range(rounds):
            for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
                with tempfile.TemporaryDirectory(prefix="minitvm-bench-cache-") as d:
                    runs[side].append(_run(name, d, root=sides[side]))
        med = {s: {k: statistics.median(r[k] for r in runs[s])
                   for k in ("main_cpu", "cpu", "worker_cpu", "wall")} for s in runs}
        same = len({r["result"] for s in runs for r in runs[s]}) == 1
        o, n = med["old"], med["new"]
        print(f"{name:18s} main thread {o['main_cpu']:.3f} -> {n['main_cpu']:.3f} s "
              f"({n['main_cpu'] / o['main_cpu']:.3f}x); process {o['cpu']:.3f} -> {n['cpu']:.3f}; "
              f"workers {o['worker_cpu']:.3f} -> {n['worker_cpu']:.3f}; wall {o['wall']:.2f} -> "
              f"{n['wall']:.2f}; same module: {same}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--group", default=None,
                    choices=("first", "second", "third", "fourth", "fifth", "all"),
                    help="build bench_new_user_models.py's models of this group (not --models)")
    ap.add_argument("--no-seq", action="store_true", help="skip the sequential cold build")
    ap.add_argument("--cold-only", action="store_true",
                    help="only the cold build (no warm, no sequential one)")
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="write a cProfile of each cold build to DIR/NAME.prof")
    ap.add_argument("--phases", action="store_true",
                    help="print each cold build's CPU split by phase and by Relay pass")
    ap.add_argument("--ab", default=None, metavar="OLD_TREE",
                    help="A/B: cold builds alternating between minitvm imported from OLD_TREE "
                         "(e.g. `git archive BASE | tar -x -C DIR`) and this checkout")
    ap.add_argument("--kernels", action="store_true",
                    help="print each cold build's kernels: IR sizes, IR generation and LLVM s")
    ap.add_argument("--rounds", type=int, default=5, help="--ab: builds of each side")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.profile, args.phases, args.kernels)
        return
    names = _group(args.group) if args.group else args.models.split(",")
    if args.kernels:
        for name in names:
            _kernels(name)
        return
    if args.ab:
        return _ab(names, args.ab, args.rounds)
    if args.phases:
        import compile_phases

        for name in names:
            with tempfile.TemporaryDirectory(prefix="minitvm-bench-cache-") as d:
                print(compile_phases.table(name, _run(name, d, phases=True)), flush=True)
        return
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    print(f"relay.build opt_level=3 target=llvm, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'model':18s} {'run':5s} {'wall s':>7s} {'cpu s':>6s} {'workers':>8s} "
          f"{'hits':>5s} {'writes':>6s} {'whole':>5s}")
    for name in names:
        runs = []
        with tempfile.TemporaryDirectory(prefix="minitvm-bench-cache-") as d:
            runs.append(("cold", _run(name, d, profile=args.profile)))
            if not args.cold_only:
                runs.append(("warm", _run(name, d)))
        if not (args.no_seq or args.cold_only):
            with tempfile.TemporaryDirectory(prefix="minitvm-bench-cache-") as d:
                runs.append(("seq", _run(name, d, {"MINITVM_COMPILE_JOBS": "1"})))
        for label, r in runs:
            print(f"{name:18s} {label:5s} {r['wall']:7.2f} {r['cpu']:6.2f} "
                  f"{r['worker_cpu']:8.2f} {r['disk_hits']:5d} {r['disk_writes']:6d} "
                  f"{'yes' if r.get('build_hit') else 'no':>5s}", flush=True)


if __name__ == "__main__":
    main()
