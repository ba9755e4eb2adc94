"""LLVM's machine code generator against itself over a corpus of minitvm programs
(``minitvm.testing.codegen_diff``): every kernel compiled while a program builds is also made
into machine code at CodeGenOpt 3 and 0 from the same optimized IR (the kernels' own level is
1), and its calls run at every level and compare bit for bit, on the program's own inputs and
again with NaN / infinities / -0.0 / zeros / negations sprinkled into its read-only inputs.

    python scripts/codegen_diff_corpus.py                   # every part, one process each
    python scripts/codegen_diff_corpus.py --parts sweep resnet50 --save /tmp/diffs
    python scripts/codegen_diff_corpus.py --levels 1 0      # only the kernels' level vs O0

Parts: ``sweep`` (every case of ``minitvm.testing.symbolic_sweep``: Relay VM symbolic kernels
at a grid of shapes), ``resnet50``, ``mobilenetv2`` (torchvision's layout through ONNX: needs
torch and onnx), ``bert`` (BERT-base, 12 layers), ``fuzz`` (``scripts/fuzz_long.py``'s
generators: Relay programs through relay.build, dynamic Relay VM programs, Relax programs,
casts, QNN, build matrices, Relax symbolic and loop programs; ``--fuzz N`` programs of each),
``new_user`` (``benchmarks/bench_new_user_models.py``'s PyTorch models, in table order until
``--new-user-seconds`` pass: needs torch). Each part runs in a child process (a crash costs
that part only) with the on-disk kernel cache off and an empty ``MINITVM_CACHE_DIR``, so that
every kernel is compiled there.

Prints per part: kernels, calls checked, differences, errors, seconds; then every difference
(``--save DIR`` writes each one's IR, inputs and the assembly at both levels for minimizing;
``replay DIR/STEM`` runs one again: ``python scripts/codegen_diff_corpus.py --replay STEM``).
Exit status 1 when a difference that is not a NaN payload was found. ``--plain`` runs the
parts without the check (its cost's baseline, and the JIT's own mask-move counts).

Cost: each kernel is compiled six times (as built at levels 1 and 3; without fast-math flags at
1, 3, 0 and without AVX-512VL at 1) and each checked call runs twelve (six variants, real and
perturbed inputs). Measured on a 2-core Xeon shared with other jobs (so +-30%), checked vs
``--plain``: sweep 314 vs 114 s (465 kernels, 882 calls), fuzz (--fuzz 40) 474 vs 174 s (1108
kernels), ResNet-50 52 vs 40 s, MobileNetV2 22 vs 18 s, BERT-base 39 vs 47 s, new_user 523 s
(--new-user-seconds 500: 329 kernels; plain, 59 models in 300 s); all parts 1426 s, 1983
kernels, 2929 calls. The JIT's mask-move checks in the plain run: 1 module of 3200 held a
VEX mask move, none was miscompiled (neither fold of LLVM 22.1 occurred). Found: no
difference but NaN payloads (x86 keeps the first operand's NaN when both are NaN, and the levels
order commutative operands differently: ``vmulss (%rsi), %xmm0`` vs ``vmulss (%rdx), %xmm0``).
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
import warnings

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
PARTS = ("sweep", "resnet50", "mobilenetv2", "bert", "fuzz", "new_user")


def _sweep(args) -> None:
    from minitvm.testing import symbolic_sweep

    names = args.ops or list(symbolic_sweep.cases())
    for name in names:
        try:
            symbolic_sweep.check_op(name, seed=0)
        except Exception as e:  # noqa: BLE001 - the sweep's own failures are not ours
            print(f"  sweep {name}: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr)


def _model(name: str) -> None:
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from bench_whole_models import build, load

    import minitvm as tvm
    from minitvm.contrib import graph_executor

    m = load(name)
    lib, _ = build(m)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    rng = np.random.default_rng(0)
    g.set_input(m["input"], rng.standard_normal(m["shape"]).astype("float32"))
    g.run()


def _fuzz(args) -> None:
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import fuzz_long

    n = str(args.fuzz)
    half = str(max(1, args.fuzz // 2))
    with tempfile.TemporaryDirectory() as d:
        fuzz_long.main(["--programs", n, "--parser", "0", "--library", "0", "--ieee",
                        "--dyn-programs", n, "--relax-programs", half, "--cast-programs", n,
                        "--qnn-programs", half, "--build-programs", half,
                        "--relax-symbolic-programs", half, "--relax-loop-programs", half,
                        "--relax-sizes-programs", half, "--seed", str(args.seed),
                        "--out", os.path.join(d, "fuzz.json")])


def _new_user(args) -> int:
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_new_user_models as b
    import torch

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    tables = [b.models(), b.new_models(), b.third_models(), b.fourth_models()]
    table = {k: v for t in tables for k, v in t.items()}
    start, done = time.perf_counter(), 0
    for name, (ctor, spec) in table.items():
        if time.perf_counter() - start > args.new_user_seconds:
            break
        try:
            model, inputs = b.prepare(ctor, spec)
            mod, params, names, _ = b.import_relay(model, tuple(inputs.values()), inputs)
            with tvm.transform.PassContext(opt_level=3):
                lib = relay.build(mod, target="llvm", params=params)
            g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
            for n, v in zip(names, inputs.values(), strict=True):
                g.set_input(n, v.numpy() if isinstance(v, torch.Tensor) else v)
            g.run()
            done += 1
            print(f"  new_user {name}", file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001 - an import / build failure is not ours
            print(f"  new_user {name}: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr)
    return done


def _save(d, where: str, k: int) -> dict:
    """Write difference ``d``'s IR, inputs and assembly at both levels under ``where``."""
    import numpy as np

    from minitvm.testing.codegen_diff import assembly_at

    stem = os.path.join(where, f"{d.symbol}_{k}")
    with open(stem + ".ll", "w") as f:
        f.write(d.ir)
    np.savez(stem + ".npz", *d.args.values(), vars=np.array(d.vars, np.int64))
    with open(stem + ".json", "w") as f:
        json.dump({"text": str(d), "symbol": d.symbol, "pipeline": d.pipeline,
                   "levels": list(d.levels), "flags": d.flags, "buffers": list(d.args)}, f)
    for k, level in enumerate(d.levels):  # (the first variant is its group's base)
        flags = d.flags if k else ("as built" if d.flags == "as built" else "no fast-math flags")
        with open(f"{stem}.{k}.O{level}.s", "w") as f:
            f.write(assembly_at(d.ir, d.pipeline, level, flags))
    return {"files": stem}


def replay(stem: str) -> int:
    """Run a saved difference's IR at its two levels on its saved inputs; print where they
    differ (after editing the .ll file by hand, this says whether the difference stays)."""
    import ctypes

    import numpy as np

    from minitvm.runtime import jit

    with open(stem + ".json") as f:
        meta = json.load(f)
    with open(stem + ".ll") as f:
        ir = f.read()
    saved = np.load(stem + ".npz")
    arrays = [saved[f"arr_{k}"] for k in range(len(meta["buffers"]))]
    values = saved["vars"]
    from minitvm.testing.codegen_diff import NO_VL, _scope

    outs = {}
    for k, level in enumerate(meta["levels"]):
        with _scope(NO_VL if k and meta.get("flags") == NO_VL else ""):
            compiled, _ = jit.compile_ir_to_object(ir, meta["symbol"], meta["pipeline"], level)
        copies = [a.copy() for a in arrays]
        table = (ctypes.c_void_p * max(1, len(copies)))(*[c.ctypes.data for c in copies])
        cvars = (ctypes.c_int64 * max(1, len(values)))(*[int(v) for v in values])
        ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)(
            compiled.address)(table, cvars, 1)
        outs[k] = copies
    a, b = outs[0], outs[1]
    same = True
    for name, x, y in zip(meta["buffers"], a, b, strict=True):
        if x.tobytes() != y.tobytes():
            same = False
            xb, yb = (v.reshape(v.size, -1).view(np.uint8) for v in (x, y))
            bad = np.flatnonzero((xb != yb).any(axis=1))
            print(f"{name}: {bad.size} elements differ, e.g. "
                  f"{[(int(i), x.ravel()[i], y.ravel()[i]) for i in bad[:4]]}")
    print(meta["text"] if not same else "no difference")
    return 0 if same else 1


def child(args) -> int:
    """Run part ``args.part`` under ``twin_kernels``; write the JSON summary to ``args.json``."""
    import faulthandler

    faulthandler.enable()
    warnings.simplefilter("ignore")
    from minitvm.runtime import jit
    from minitvm.testing import codegen_diff

    start, models = time.perf_counter(), None
    twin = codegen_diff.twin_kernels(levels=tuple(args.levels), per_kernel=args.per_kernel,
                                     perturb=not args.no_perturb)
    with (contextlib.nullcontext(codegen_diff.Session((), 0, False)) if args.plain else
          twin) as s:
        if args.part == "sweep":
            _sweep(args)
        elif args.part in ("resnet50", "mobilenetv2", "bert"):
            _model(args.part)
        elif args.part == "fuzz":
            _fuzz(args)
        elif args.part == "new_user":
            models = _new_user(args)
    found = []
    for k, d in enumerate(s.differences):
        item = {"text": str(d), "nan_only": d.nan_only, "nondeterministic": d.nondeterministic}
        if args.save and k < 50:
            os.makedirs(args.save, exist_ok=True)
            item.update(_save(d, args.save, k))
        found.append(item)
    out = {"part": args.part, "kernels": s.kernels, "calls": s.calls, "differences": found,
           "errors": s.errors[:20], "n_errors": len(s.errors), "seconds":
           time.perf_counter() - start, "jit": dict(jit.STATS), "models": models}
    with open(args.json, "w") as f:
        json.dump(out, f)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", nargs="*", default=list(PARTS), choices=PARTS)
    ap.add_argument("--levels", nargs="*", type=int, default=[1, 3, 0],
                    help="codegen levels, the first the base (default 1 3 0)")
    ap.add_argument("--per-kernel", type=int, default=3,
                    help="calls checked per kernel (each at other run-time sizes)")
    ap.add_argument("--no-perturb", action="store_true", help="no run with special values")
    ap.add_argument("--ops", nargs="*", help="sweep cases (default: all)")
    ap.add_argument("--fuzz", type=int, default=40, help="programs per fuzz generator")
    ap.add_argument("--new-user-seconds", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", default=None, help="folder for each difference's IR / inputs")
    ap.add_argument("--plain", action="store_true",
                    help="run the parts without the check (the baseline of its cost)")
    ap.add_argument("--replay", metavar="STEM", help="run a saved difference again")
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.replay:
        return replay(args.replay)
    if args.part:
        return child(args)
    env = dict(os.environ, MINITVM_DISABLE_DISK_CACHE="1", PYTHONPATH=ROOT + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    rest = [a for a in (argv if argv is not None else sys.argv[1:])]
    totals, real = {"kernels": 0, "calls": 0, "seconds": 0.0}, 0
    print(f"{'part':12s} {'kernels':>8s} {'calls':>7s} {'diffs':>6s} {'NaN/nd':>6s} "
          f"{'errors':>6s} {'s':>7s}  jit: modules, mask-move checks, made again (tied)",
          flush=True)
    reports = []
    for part in args.parts:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as cache:  # (no object cached by an earlier run)
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), *rest, "--part",
                                   part, "--json", path], env=dict(env, MINITVM_CACHE_DIR=cache),
                                  capture_output=True, text=True)
        if proc.returncode or not os.path.getsize(path):
            print(f"{part:12s} FAILED (exit {proc.returncode}, "
                  f"{time.perf_counter() - start:.0f} s): {proc.stderr[-800:]}", flush=True)
            real += 1
            continue
        with open(path) as f:
            r = json.load(f)
        os.unlink(path)
        reports.append(r)
        bad = [d for d in r["differences"] if not d["nan_only"] and not d["nondeterministic"]]
        real += len(bad)
        for k in ("kernels", "calls", "seconds"):
            totals[k] += r[k]
        j = r["jit"]
        print(f"{part:12s} {r['kernels']:8d} {r['calls']:7d} {len(bad):6d} "
              f"{len(r['differences']) - len(bad):6d} {r['n_errors']:6d} {r['seconds']:7.0f}  "
              f"{j.get('compiled')} {j.get('movmsk_checked')} {j.get('movmsk_regenerated')} "
              f"({j.get('tied_mask_regenerated')})"
              + (f"  {r['models']} models" if r.get("models") is not None else ""), flush=True)
    print(f"{'total':12s} {totals['kernels']:8d} {totals['calls']:7d} {real:6d}"
          f"{'':14s} {totals['seconds']:7.0f}")
    for r in reports:
        for d in r["differences"]:
            print(f"[{r['part']}] {d['text']}" + (f"  -> {d['files']}.*" if "files" in d else ""))
        for e in r["errors"]:
            print(f"[{r['part']}] error: {e}")
    return 1 if real else 0


if __name__ == "__main__":
    raise SystemExit(main())
