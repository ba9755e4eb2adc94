"""Compile time as graphs grow: Relay ``relay.build`` (opt_level 3) and Relax ``relax.build`` of
synthetic graphs and two real models, each phase's CPU time in a table.

Graphs (``--graphs``, default all; ``N`` is the number of operator calls):
  * ``chain10k``, ``chain100k``: unary elementwise ops one after the other;
  * ``ladder10k``, ``ladder100k``: each value feeds the next two (``x_i = x_{i-1} + x_{i-2}``):
    every node's post-dominator is the program's last node;
  * ``fanout``: one value read by 1,000 consumers, concatenated (``fanoutN``: N consumers);
  * ``resmlp``: a deep residual MLP (200 blocks of dense + bias + relu + residual add, width 64);
  * ``bert12``: BERT-base, 12 layers, sequence 128 (Relay: ``relay.testing.bert``; Relax: the
    ``relax.frontend.nn`` encoder layer of ``bench_relax_models.py``, stacked);
  * ``resnet50``: ResNet-50 (Relay: ``relay.testing.resnet``; Relax: the same network written
    with the BlockBuilder, batch norm included).

Each (graph, dialect) builds once in a fresh process with an empty kernel cache and serial
compilation (``MINITVM_COMPILE_JOBS=1``), so every phase runs in the one thread whose CPU time
(``time.thread_time``) is charged to the innermost phase running (``compile_phases.PhaseClock``):
  import    building the graph (the IR constructors; ``relay.testing``'s InferType included);
  InferType / FuseOps / partition   Relay's type inference, the fusion pass without its
            partitioner, the shared partitioner (``graph_partitioner.partition_graph``, both
            dialects); Relax: LegalizeOps, FuseOps, FuseTIR in their own columns;
  passes    every other pass (the 3 biggest are named with ``-v``);
  lower     TE -> PrimFunc (schedules, ``lower._inline_all``), TIR passes and kernel keys;
  codegen   LLVM IR generation and compile, graph / VM codegen and what is left of the build.
A column over a tenth of its row's total is marked ``*``; ``--timeout`` (default 900 s) bounds a
build, and a build past it shows as ``timeout``.

Run: python benchmarks/bench_compile_scaling.py [--graphs chain100k,ladder100k] [--dialects relay]

What it found (stop 46; whole builds A/B in fresh processes, cold cache, serial compile, build
thread CPU, same graph JSON / kernels / entry calls or same ``exe.as_text()`` on both sides):
the whole-graph entry's LLVM code generation was quadratic in its calls (one basic block):
Relay ladder10k 6.39 -> 4.28 s (entry 2.2 -> 0.4 s; ``backend.aot.BLOCK_STEPS``); Python's
cyclic GC rescanned the IR heap through relax.build's passes: Relax ladder30k 11.05 -> 9.26 s,
ladder100k 39.7 -> 35.2 s. Past those, every phase grows linearly from 10k to 30k nodes (ratio
2.8-3.8 for 3x); the largest are per-node Python work: Relay LabelOps (a structural hash per
fused function) and graph codegen, Relax FoldConstant, StaticPlanBlockMemory, VMShapeLower.

Stop 54 (h-ladder; base and branch alternated in one command, same IR text after the changed
passes, graph JSON, kernels and outputs): Relay ladder100k 34.4 -> 21.1 s, chain100k 12.1 ->
10.4 s. LabelOps 6.8 -> 3.0 s and graph codegen 3.9 -> 2.5 s: a ladder's 100,000 equal one-add
fused functions are hashed and compared once, found again by ``relay.analysis.canonical_key``;
InferType 3.5 -> 1.8 s: LabelOps keeps the types, so the re-check after it is skipped;
SimplifyExpr 3.1 -> 0.6 s: the binomial pattern is tried only on an add of multiplies;
InlineGlobals (1.2 s) and host_program (1.9 s) return at once when nothing is marked Inline or
placed by on_device. Left: LabelOps' walk and main's own label, PlanDevicesCore (2.0 s), graph
JSON (1.8 s), and the cyclic GC's ~2 s of gen-1/gen-2 collections outside the passes.

Stop 55 (h-bigbuild; base and branch alternated in fresh processes, 2 rounds, on a loaded
machine where single passes vary by 10-20% between runs; same IR text after PlanDevices,
LabelOps, StaticPlanBlockMemory and VMShapeLower, graph JSON, kernels, VM text and outputs on
ladder10k, chain10k, ResNet-18, a BERT layer): the collections outside the passes are gone. Both
builds freeze the program (``runtime.gc_pause.frozen``) before the collector resumes after the
passes, so kernel lowering, graph codegen, JSON and the entry no longer rescan it. Relay
ladder100k: codegen column 7.05/7.32 -> 4.88/5.01 s (graph codegen 3.1 -> 2.3, graph JSON 2.2 ->
1.5, the first collection after the pipeline 0.75 -> 0); Relax ladder100k: codegen column
3.86/3.06 -> 2.19/1.69 s (the serial rest, kernel lowering's collections, 2.5/1.9 -> 0.4);
chain100k: Relay 12.85 -> 12.46, Relax 8.28 -> 7.49 (one round). The passes, whose GC state did
not change, moved by noise (+-1 s a build) in those rounds; a third, on a quieter machine, had
them equal: ladder100k Relay 22.51 -> 20.76 s (codegen 5.97 -> 4.08), Relax 27.47 -> 25.79 s
(codegen 3.15 -> 1.44).

Stop 56 (h-bigbuild2; base and branch alternated in fresh processes, 2 rounds, build-thread CPU
on a loaded machine; same IR text after PlanDevices, LabelOps and the Relax lowering passes,
same graph JSON, VM text, kernel keys and outputs on ladder10k, chain10k, a ResNet-18, a BERT
layer). Relay ladder100k 18.85/19.19 -> 18.24/17.02 s: PlanDevicesCore 1.84/1.82 -> 1.37/1.35
(its three phases share one post-order walk; a device is not defaulted from itself, which made
and compared 400,000 VirtualDevices), LabelOps 3.01/3.26 -> 2.79/2.41 (main is hashed with its
fused functions as stand-ins, ``structural_hash(stand_ins=)``, not rebuilt around stubs);
chain100k 9.73/9.85 -> 9.04/9.60 (PlanDevicesCore 1.55/1.60 -> 1.11/1.26). Relax ladder100k
23.06/25.26 -> 20.17/21.86 s: VMShapeLower 1.94/2.12 -> 1.49/1.81, StaticPlanBlockMemory
1.95/2.04 -> 1.48/1.61, CallTIRRewrite 1.70/1.89 -> 1.24/1.43 (the allocation's shape node is
reused, not copied), KillAfterLastUse 1.52/1.75 -> 1.24/1.50, FuseTIR 2.80/3.14 -> 2.40/2.54
(its DCE walks main's globals once); Relax chain100k (a few big fused kernels) is unchanged.

Stop 57 (h-bigbuild3; base and branch alternated in fresh processes, 4 rounds over two
snapshots, build-thread CPU on a loaded machine; same IR text after every Relax pass, VM text,
kernels and outputs on ladder10k, chain10k, a ResNet-18 and a BERT layer; same graph JSON,
kernels and outputs in Relay). Relax ladder100k 19.25-20.64 -> 16.2-17.34 s: FuseOps
2.62-2.74 -> 1.24-1.42 (a binding no group takes and whose operands nothing remaps is emitted
as it is, not rebuilt; the symbolic variables of earlier blocks are collected only for a block
with a match_cast; a call_tir's operand leaves read without a walk), FuseTIR 2.23-2.43 ->
0.94-0.97 (its call rewriter keeps the bindings that call no fused function; its DCE reads
main's flat bindings for globals instead of walking every node), LegalizeOps 1.94-2.09 ->
1.65-1.78 (a struct info's cache key and known-shapes answer memoized together),
ToNonDataflow 1.22-1.33 -> 0.72-0.83 (a call_tir renamed in one loop). Relax chain100k
5.66-5.94 -> 5.08-5.25 (LegalizeOps 1.46-1.55 -> 1.23-1.31, FuseOps 1.29-1.36 -> 0.90-0.99).
Relay is unchanged within the noise (ladder100k 17.25-19.21 vs 16.99-18.07 s, chain100k
9.50-9.71 vs 9.41-9.84). Left in Relax:
the lowering passes (CallTIRRewrite, StaticPlanBlockMemory, KillAfterLastUse, VMShapeLower,
~1.3-1.6 s each: per-binding work), FoldConstant (~1.1), DCE's use-def walk in FuseTIR.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = ["chain10k", "chain100k", "ladder10k", "ladder100k", "fanout", "resmlp", "bert12",
          "resnet50"]
DIALECTS = ["relay", "relax"]
COLUMNS = {"relay": ["import", "InferType", "FuseOps", "partition", "passes", "lower", "codegen"],
           "relax": ["import", "LegalizeOps", "FuseOps", "partition", "FuseTIR", "passes",
                     "lower", "codegen"]}
SHAPE = (1, 16)


def _size(name: str) -> int:
    """Operator calls of ``chain10k``/``ladder100k``..., consumers of ``fanout`` (1,000) or
    ``fanoutN``."""
    if name.startswith("fanout"):
        return int(name[len("fanout"):] or 1000)
    return int(name.rstrip("k").lstrip("chainlder")) * 1000


# ------------------------------------------------------------------------------------ Relay
def relay_graph(name: str):
    """(module, params) of one graph."""
    import numpy as np

    import minitvm as tvm
    from minitvm import relay

    if name == "bert12":
        from minitvm.relay.testing import bert

        return bert.get_workload(num_layers=12)
    if name == "resnet50":
        from minitvm.relay.testing import resnet

        return resnet.get_workload(num_layers=50)
    x = relay.var("x", shape=SHAPE, dtype="float32")
    params = {}
    if name.startswith("chain"):
        ops = (relay.sigmoid, relay.negative, relay.abs)
        y = x
        for i in range(_size(name)):
            y = ops[i % 3](y)
    elif name.startswith("ladder"):
        prev, y = x, relay.negative(x)
        for _ in range(_size(name) - 1):
            prev, y = y, relay.add(y, prev)
    elif name.startswith("fanout"):
        s = relay.sigmoid(x)
        y = relay.concatenate([relay.multiply(s, relay.const(float(j)))
                               for j in range(_size(name))], 1)
    elif name == "resmlp":
        rng = np.random.default_rng(0)
        y = x
        for i in range(200):
            w, b = relay.var(f"w{i}", shape=(16, 16)), relay.var(f"b{i}", shape=(16,))
            params[f"w{i}"] = (rng.standard_normal((16, 16)) / 4).astype("float32")
            params[f"b{i}"] = np.zeros(16, "float32")
            y = relay.add(y, relay.nn.relu(relay.nn.bias_add(relay.nn.dense(y, w), b)))
    else:
        raise SystemExit(f"unknown graph {name!r}; choose from {GRAPHS}")
    body = relay.Function(relay.analysis.free_vars(y), y)
    return tvm.IRModule.from_expr(body), {k: tvm.nd.array(v) for k, v in params.items()}


# ------------------------------------------------------------------------------------ Relax
def relax_graph(name: str):
    """(module, params) of one graph."""
    from minitvm import relax

    if name == "bert12":
        return _relax_bert(12), None
    if name == "resnet50":
        return _relax_resnet50(), None
    R = relax.op
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(SHAPE, "float32"))
    params = [x]
    if name == "resmlp":
        for i in range(200):
            params += [relax.Var(f"w{i}", relax.TensorStructInfo((16, 16), "float32")),
                       relax.Var(f"b{i}", relax.TensorStructInfo((16,), "float32"))]
    with bb.function("main", params):
        with bb.dataflow():
            if name.startswith("chain"):
                ops = (R.sigmoid, R.negative, R.abs)
                y = x
                for i in range(_size(name)):
                    y = bb.emit(ops[i % 3](y))
            elif name.startswith("ladder"):
                prev, y = x, bb.emit(R.negative(x))
                for _ in range(_size(name) - 1):
                    prev, y = y, bb.emit(R.add(y, prev))
            elif name.startswith("fanout"):
                s = bb.emit(R.sigmoid(x))
                ys = [bb.emit(R.multiply(s, relax.const(float(j), "float32")))
                      for j in range(_size(name))]
                y = bb.emit(R.concat(ys, axis=1))
            elif name == "resmlp":
                y = x
                for i in range(200):
                    w, b = params[1 + 2 * i], params[2 + 2 * i]
                    h = bb.emit(R.add(R.matmul(y, R.permute_dims(w)), b))
                    y = bb.emit(R.add(y, R.nn.relu(h)))
            else:
                raise SystemExit(f"unknown graph {name!r}; choose from {GRAPHS}")
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get(), None


def _relax_bert(layers: int):
    sys.path.insert(0, HERE)
    from bench_relax_models import BertLayer

    from minitvm.relax.frontend import nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([BertLayer() for _ in range(layers)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    mod, _ = Encoder().export_tvm({"forward": {"x": nn.spec.Tensor((1, 128, 768), "float32")}})
    return mod


def _relax_resnet50():
    """ResNet-50 v1 (bottlenecks 3-4-6-3, batch norm in inference mode), NCHW 224x224, weights
    as the function's parameters."""
    from minitvm import relax

    R, bb = relax.op, relax.BlockBuilder()
    x = relax.Var("data", relax.TensorStructInfo((1, 3, 224, 224), "float32"))
    params = [x]

    def var(shape):
        v = relax.Var(f"p{len(params)}", relax.TensorStructInfo(shape, "float32"))
        params.append(v)
        return v

    def conv_bn(h, cin, cout, k, stride, relu=True):
        w = var((cout, cin, k, k))
        h = bb.emit(R.nn.conv2d(h, w, strides=stride, padding=k // 2))
        g, b, m, v = (var((cout,)) for _ in range(4))
        h = bb.emit(relax.TupleGetItem(bb.emit(R.nn.batch_norm(h, g, b, m, v, axis=1)), 0))
        return bb.emit(R.nn.relu(h)) if relu else h

    body = []

    def build(h):
        h = conv_bn(h, 3, 64, 7, 2)
        h = bb.emit(R.nn.max_pool2d(h, pool_size=3, strides=2, padding=1))
        cin = 64
        for stage, (units, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512),
                                                   strict=True)):
            for u in range(units):
                stride = 2 if stage > 0 and u == 0 else 1
                r = conv_bn(h, cin, width, 1, 1)
                r = conv_bn(r, width, width, 3, stride)
                r = conv_bn(r, width, width * 4, 1, 1, relu=False)
                sc = conv_bn(h, cin, width * 4, 1, stride, relu=False) if u == 0 else h
                h = bb.emit(R.nn.relu(bb.emit(R.add(r, sc))))
                cin = width * 4
        h = bb.emit(R.mean(h, axis=[2, 3]))
        w = var((1000, cin))
        return bb.emit(R.matmul(h, R.permute_dims(w)))

    # parameters are created while the body is built: build it in a scratch builder first
    with bb.function("scratch", [x]):
        with bb.dataflow():
            body.append(bb.emit_output(build(x)))
        bb.emit_func_output(body[0])
    scratch = bb.get()["scratch"]
    return relax.transform.Normalize()(
        __import__("minitvm").IRModule({"main": relax.Function(params, scratch.body,
                                                               scratch.ret_struct_info)}))


# ------------------------------------------------------------------------------------ child
def _install(dialect: str):
    """Phase wrappers for this process: compile_phases' (kernels, codegen), the partitioner
    in both dialects' FuseOps, and Relax's build steps."""
    import importlib

    import compile_phases as cp

    # (by module path: the packages re-export functions of the same names)
    relax_fuse = importlib.import_module("minitvm.relax.transform.fuse_ops")
    relax_build = importlib.import_module("minitvm.relax.vm.build")
    relay_fuse = importlib.import_module("minitvm.relay.transform.fuse_ops")

    worker_dir = tempfile.mkdtemp(prefix="minitvm-scaling-")
    atexit.register(shutil.rmtree, worker_dir, True)  # (the phases are read before exit)
    instrument = cp.install(worker_dir)
    for mod in (relay_fuse, relax_fuse):
        cp._wrap(mod, "partition_graph", "partition")
    cp._wrap(relax_build, "codegen", "VM codegen")
    cp._wrap(relax_build, "optimize_prim_func", "kernels: lowering (TE -> PrimFunc, schedules)")
    cp._wrap(relax_build, "compile_prim_func", "kernels: TIR passes, keys (compile_prim_func)")
    return cp, instrument


def _column(dialect: str, phase: str) -> str:
    if phase in ("import", "partition"):
        return phase
    if phase.startswith("pass "):
        name = phase[5:]
        return name if name in COLUMNS[dialect] else "passes"
    if phase.startswith("kernels: lowering") or phase.startswith("kernels: TIR") \
            or phase.startswith("kernels: TIR text") or phase == "kernels: compile_te glue":
        return "lower"
    return "codegen"


def child(name: str, dialect: str) -> None:
    """Build one graph in this process; print its phases as one JSON line."""
    sys.path.insert(0, HERE)
    cp, instrument = _install(dialect)
    import minitvm as tvm

    t0 = time.thread_time()
    mod, params = (relay_graph if dialect == "relay" else relax_graph)(name)
    imported = time.thread_time() - t0
    with tvm.transform.PassContext(opt_level=3, instruments=[instrument]):
        cp.CLOCK.start()
        if dialect == "relay":
            from minitvm import relay

            relay.build(mod, target="llvm", params=params)
        else:
            from minitvm import relax

            relax.build(mod, "llvm")
        phases = cp.CLOCK.stop()
    cols: dict[str, float] = {"import": imported}
    detail: dict[str, float] = {}
    for k, v in phases.items():
        c = _column(dialect, k)
        cols[c] = cols.get(c, 0.0) + v
        if c in ("passes", "codegen"):
            detail[k] = v
    print(json.dumps({"cols": cols, "detail": detail}))


# ----------------------------------------------------------------------------------- parent
def run_one(name: str, dialect: str, timeout: float) -> dict | None:
    env = dict(os.environ, MINITVM_COMPILE_JOBS="1")
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="minitvm-scaling-cache-") as cache:
        env["MINITVM_CACHE_DIR"] = cache
        try:
            out = subprocess.run([sys.executable, __file__, "--child", name, dialect], env=env,
                                 capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    if out.returncode != 0:
        tail = "\n".join(out.stderr.strip().splitlines()[-3:])
        return {"error": tail}
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(dialect: str, rows: list, verbose: bool) -> str:
    cols = COLUMNS[dialect]
    lines = [f"{dialect}: CPU seconds by phase (one thread, cold kernel cache, serial compile)",
             f"  {'graph':11s}" + "".join(f"{c:>12s}" for c in cols) + f"{'total':>10s}"]
    for name, r in rows:
        if r is None or "error" in r:
            msg = "timeout" if r is None else "error: " + r["error"].splitlines()[-1][:80]
            lines.append(f"  {name:11s}  {msg}")
            continue
        total = sum(r["cols"].values())
        cells = ""
        for c in cols:
            v = r["cols"].get(c, 0.0)
            cells += f"{v:11.2f}{'*' if v > total / 10 else ' '}"
        lines.append(f"  {name:11s}{cells}{total:10.2f}")
        if verbose:
            top = sorted(r["detail"].items(), key=lambda kv: -kv[1])[:3]
            lines.append("  " + " " * 11 + "; ".join(f"{k} {v:.2f}" for k, v in top))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--dialects", default=",".join(DIALECTS))
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("GRAPH", "DIALECT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    for dialect in args.dialects.split(","):
        rows = []
        for name in args.graphs.split(","):
            rows.append((name, run_one(name, dialect, args.timeout)))
            print(table(dialect, rows[-1:], args.verbose).splitlines()[-1 - args.verbose],
                  file=sys.stderr, flush=True)
        print(table(dialect, rows, args.verbose), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
