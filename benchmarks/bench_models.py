"""Latency of four models compiled by minitvm, side by side with numpy op-by-op, PyTorch eager
(2 threads, when installed) and ONNX Runtime (when installed), all in this process on the same
weights. Also compile times, which path each GEMM-like op used (``conv2d:gen`` generated code,
``dense:BLAS`` the BLAS shim; set by ``relay.backend.use_generated_conv/_dense/_batch_matmul``
and ``use_blas``), and ResNet-50's build time (cold and with the kernel cache warm) and planned
peak memory.

    python benchmarks/bench_models.py [--models mlp1,mlp64,resnet_small,bert] [--runs 50]
                                      [--threads 2] [--resnet50] [--blas]

Models: relay.testing.mlp (784-128-64-10; batch 1 and 64), ResNet stem + 2 basic blocks
(``resnet.get_small_workload``, 1x3x224x224), one BERT-base encoder layer (seq 128).
Peers run the graph after SimplifyInference + FoldConstant (batch norm folded away), op by op:
numpy through each op's reference implementation; ONNX Runtime and PyTorch through a direct
translation of the same ops. Latency is end to end: set the input, run, read the output.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.ir.op import Op  # noqa: E402
from minitvm.relay import testing  # noqa: E402
from minitvm.relay.expr import Call, Constant, Tuple, TupleGetItem  # noqa: E402
from minitvm.relay.expr_functor import dataflow_post_order  # noqa: E402

MODELS = {
    "mlp1": ("MLP 784-128-64-10 b1", lambda: testing.mlp.get_workload(batch_size=1)),
    "mlp64": ("MLP 784-128-64-10 b64", lambda: testing.mlp.get_workload(batch_size=64)),
    "resnet_small": ("ResNet stem+2 blocks", lambda: testing.resnet.get_small_workload()),
    "bert": ("BERT-base layer s128", lambda: testing.bert.get_workload()),
}


# ---------------------------------------------------------------------------- the peers' graph
def prepare(mod, params):
    """main with params bound, batch norm simplified and constants folded: a flat op list."""
    from minitvm.relay.build_module import bind_params_by_name
    from minitvm.relay.transform import FoldConstant, InferType, SimplifyInference

    mod = mod.shallow_copy()
    mod["main"] = bind_params_by_name(mod["main"], params)
    with tvm.transform.PassContext(opt_level=3):
        for p in (InferType(), SimplifyInference(), FoldConstant(), InferType()):
            mod = p(mod)
    main = mod["main"]
    order = dataflow_post_order(main.body, lambda e: e.args if isinstance(e, Call) else
                                e.fields if isinstance(e, Tuple) else
                                (e.tuple_value,) if isinstance(e, TupleGetItem) else ())
    return main, order


def numpy_runner(main, order):
    """Op by op with each op's numpy reference (a flat loop over prepared steps)."""
    slot = {id(p): k for k, p in enumerate(main.params)}
    consts, steps = [], []
    n = len(main.params)
    for e in order:
        if id(e) in slot:
            continue
        if isinstance(e, Constant):
            consts.append((n, e.data.numpy()))
        elif isinstance(e, Call) and isinstance(e.op, Op):
            steps.append((n, e.op.get_attr("FNumpy"), e.attrs, [slot[id(a)] for a in e.args],
                          e.checked_type))
        else:
            raise ValueError(f"numpy runner: unsupported {type(e).__name__}")
        slot[id(e)] = n
        n += 1
    out = slot[id(main.body)]

    def run(*inputs):
        env = [None] * n
        env[:len(inputs)] = inputs
        for k, v in consts:
            env[k] = v
        for k, impl, attrs, args, ty in steps:
            env[k] = impl(attrs, [env[a] for a in args], ty)
        return env[out]

    return run


def to_onnx(main, order):
    """The prepared graph as an ONNX model (opset 17)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names, nodes, inits = {}, [], []
    for p in main.params:
        names[id(p)] = p.name_hint
    counter = [0]

    def fresh(base="t"):
        counter[0] += 1
        return f"{base}{counter[0]}"

    def init(arr, base="c"):
        nm = fresh(base)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), nm))
        return nm

    def shape_of(t):
        return [int(d) for d in t.shape]

    for e in order:
        if id(e) in names:
            continue
        if isinstance(e, Constant):
            names[id(e)] = init(e.data.numpy())
            continue
        if isinstance(e, Tuple):  # (read by a concatenate: its fields' names)
            names[id(e)] = [names[id(f)] for f in e.fields]
            continue
        op, a = e.op.name, e.attrs
        if op == "concatenate":
            names[id(e)] = fresh()
            nodes.append(helper.make_node("Concat", names[id(e.args[0])], [names[id(e)]],
                                          axis=int(a.axis)))
            continue
        ins = [names[id(x)] for x in e.args]
        out = fresh()
        names[id(e)] = out
        simple = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div",
                  "nn.relu": "Relu", "erf": "Erf", "sqrt": "Sqrt", "exp": "Exp",
                  "tanh": "Tanh", "sigmoid": "Sigmoid", "negative": "Neg", "maximum": "Max"}
        if op in simple:
            nodes.append(helper.make_node(simple[op], ins, [out]))
        elif op == "rsqrt":
            s = fresh()
            nodes += [helper.make_node("Sqrt", ins, [s]),
                      helper.make_node("Reciprocal", [s], [out])]
        elif op == "nn.dense":
            w = e.args[1]
            if isinstance(w, Constant):
                nodes.append(helper.make_node("MatMul", [ins[0], init(w.data.numpy().T)],
                                              [out]))
            else:
                nodes.append(helper.make_node("Gemm", ins, [out], transB=1))
        elif op == "nn.bias_add":
            nd = len(e.checked_type.shape)
            axis = a.axis % nd
            b = e.args[1]
            shp = [1] * (nd - axis)
            shp[0] = -1
            bias = init(b.data.numpy().reshape(shp)) if isinstance(b, Constant) else ins[1]
            nodes.append(helper.make_node("Add", [ins[0], bias], [out]))
        elif op in ("nn.softmax", "nn.log_softmax"):
            nodes.append(helper.make_node("Softmax" if op == "nn.softmax" else "LogSoftmax",
                                          ins, [out], axis=int(a.axis)))
        elif op == "nn.batch_flatten":
            nodes.append(helper.make_node("Flatten", ins, [out], axis=1))
        elif op in ("reshape", "squeeze", "expand_dims"):
            nodes.append(helper.make_node("Reshape", [ins[0], init(np.array(
                shape_of(e.checked_type), np.int64))], [out]))
        elif op == "transpose":
            nodes.append(helper.make_node("Transpose", ins, [out], perm=list(a.axes)))
        elif op == "nn.batch_matmul":
            x, y = ins
            if a.transpose_a:
                t = fresh()
                nodes.append(helper.make_node("Transpose", [x], [t], perm=[0, 2, 1]))
                x = t
            if a.transpose_b:
                t = fresh()
                nodes.append(helper.make_node("Transpose", [y], [t], perm=[0, 2, 1]))
                y = t
            nodes.append(helper.make_node("MatMul", [x, y], [out]))
        elif op == "nn.conv2d":
            p = list(a.padding)
            p = p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p
            nodes.append(helper.make_node("Conv", ins, [out], strides=list(a.strides),
                                          pads=[p[0], p[1], p[2], p[3]],
                                          dilations=list(a.dilation), group=int(a.groups)))
        elif op == "nn.max_pool2d":
            p = list(a.padding)
            p = p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p
            nodes.append(helper.make_node("MaxPool", ins, [out], kernel_shape=list(a.pool_size),
                                          strides=list(a.strides), pads=p,
                                          ceil_mode=int(a.ceil_mode)))
        elif op == "nn.avg_pool2d":
            p = list(a.padding)
            p = p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p
            nodes.append(helper.make_node("AveragePool", ins, [out],
                                          kernel_shape=list(a.pool_size), strides=list(a.strides),
                                          pads=p, ceil_mode=int(a.ceil_mode),
                                          count_include_pad=int(a.count_include_pad)))
        elif op == "clip":
            nodes.append(helper.make_node("Clip", [ins[0], init(np.float32(a.a_min)),
                                                   init(np.float32(a.a_max))], [out]))
        elif op == "nn.conv2d_transpose":
            p = list(a.padding)
            p = p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p
            nodes.append(helper.make_node("ConvTranspose", ins, [out], strides=list(a.strides),
                                          pads=[p[0], p[1], p[2], p[3]],
                                          output_padding=list(a.output_padding),
                                          dilations=list(a.dilation), group=int(a.groups)))
        elif op == "nn.global_avg_pool2d":
            nodes.append(helper.make_node("GlobalAveragePool", ins, [out]))
        elif op in ("mean", "variance"):
            axes = [int(x) for x in (a.axis if isinstance(a.axis, (list, tuple)) else [a.axis])]
            src = ins[0]
            if op == "variance":
                d, sq = fresh(), fresh()
                nodes += [helper.make_node("Sub", [ins[0], ins[1]], [d]),
                          helper.make_node("Mul", [d, d], [sq])]
                src = sq
            nodes.append(helper.make_node("ReduceMean", [src], [out], axes=axes,
                                          keepdims=int(a.keepdims)))
        else:
            raise ValueError(f"no ONNX translation for {op}")
    inputs = [helper.make_tensor_value_info(p.name_hint, TensorProto.FLOAT,
                                            shape_of(p.checked_type)) for p in main.params]
    outputs = [helper.make_tensor_value_info(names[id(main.body)], TensorProto.FLOAT,
                                             shape_of(main.body.checked_type))]
    graph = helper.make_graph(nodes, "model", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _pads(p):
    p = list(p)
    return p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p


def _torch_op(e, v):
    """One prepared Relay call in PyTorch (``v``: its arguments' tensors)."""
    import torch
    import torch.nn.functional as F

    op, a = e.op.name, e.attrs
    if op == "add":
        return v[0] + v[1]
    if op == "subtract":
        return v[0] - v[1]
    if op == "multiply":
        return v[0] * v[1]
    if op == "divide":
        return v[0] / v[1]
    if op == "nn.relu":
        return torch.relu(v[0])
    if op == "erf":
        return torch.erf(v[0])
    if op == "rsqrt":
        return torch.rsqrt(v[0])
    if op == "sqrt":
        return torch.sqrt(v[0])
    if op == "nn.dense":
        return F.linear(v[0], v[1])
    if op == "nn.bias_add":
        nd = v[0].dim()
        axis = a.axis % nd
        return v[0] + v[1].reshape([-1] + [1] * (nd - axis - 1))
    if op == "nn.softmax":
        return torch.softmax(v[0], int(a.axis))
    if op == "nn.batch_flatten":
        return torch.flatten(v[0], 1)
    if op in ("reshape", "squeeze", "expand_dims"):
        return v[0].reshape([int(d) for d in e.checked_type.shape])
    if op == "transpose":
        return v[0].permute(*[int(x) for x in a.axes])
    if op == "nn.batch_matmul":
        x = v[0].transpose(1, 2) if a.transpose_a else v[0]
        y = v[1].transpose(1, 2) if a.transpose_b else v[1]
        return torch.bmm(x, y)
    if op == "nn.conv2d":
        p = _pads(a.padding)
        x = F.pad(v[0], (p[1], p[3], p[0], p[2])) if (p[0], p[1]) != (p[2], p[3]) else v[0]
        pad = 0 if (p[0], p[1]) != (p[2], p[3]) else (p[0], p[1])
        return F.conv2d(x, v[1], None, tuple(a.strides), pad, tuple(a.dilation),
                        int(a.groups))
    if op == "nn.max_pool2d":
        p = _pads(a.padding)
        return F.max_pool2d(v[0], tuple(a.pool_size), tuple(a.strides), (p[0], p[1]),
                            ceil_mode=bool(a.ceil_mode))
    if op == "nn.global_avg_pool2d":
        return F.adaptive_avg_pool2d(v[0], 1)
    if op in ("mean", "variance"):
        axes = [int(x) for x in (a.axis if isinstance(a.axis, (list, tuple)) else [a.axis])]
        if op == "mean":
            return v[0].mean(axes, keepdim=bool(a.keepdims))
        return ((v[0] - v[1]) ** 2).mean(axes, keepdim=bool(a.keepdims))
    raise ValueError(f"no PyTorch translation for {op}")


def torch_module(main, order):
    """The prepared graph as a ``torch.nn.Module`` (constants as frozen parameters): what
    PyTorch eager runs op by op, and what ``torch.export`` hands to the Relax importer."""
    import torch

    class Graph(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.slots = {}
            for e in order:
                if isinstance(e, Constant) and id(e) not in self.slots:
                    name = f"c{len(self.slots)}"
                    self.slots[id(e)] = name
                    self.register_parameter(name, torch.nn.Parameter(
                        torch.from_numpy(e.data.numpy().copy()), requires_grad=False))

        def forward(self, x):
            env = {k: getattr(self, n) for k, n in self.slots.items()}
            env[id(main.params[0])] = x
            for e in order:
                if id(e) not in env:
                    env[id(e)] = _torch_op(e, [env[id(a)] for a in e.args])
            return env[id(main.body)]

    return Graph().eval()


def torch_runner(main, order, threads: int):
    """The prepared graph in PyTorch eager mode."""
    import torch

    torch.set_num_threads(threads)
    model = torch_module(main, order)

    def run(x):
        with torch.no_grad():
            return model(x)

    return run


# ---------------------------------------------------------------------------- timing
CLOCK = time.perf_counter  # --cpu-time: time.thread_time (the calling thread's CPU time)


def paths(lib) -> str:
    """Which path each GEMM-like op used (BLAS or generated code), numpy fallbacks, the entry."""
    g = lib.get_lib()
    fb = len(g.fallback_functions)
    anchors = {"nn.conv2d": "conv2d", "nn.dense": "dense", "nn.batch_matmul": "batch_matmul",
               "nn.matmul": "matmul"}
    used: dict = {}
    for k in g.kernels.values():
        if k.kind != "native" or k.source is None:
            continue
        from minitvm.relay.backend.te_compiler import func_ops

        for op in func_ops(k.source):
            if op in anchors:
                used.setdefault(anchors[op], set()).add("BLAS" if "mtvm_sgemm" in k.ir
                                                        else "gen")
    parts = [f"{op}:{'+'.join(sorted(v))}" for op, v in sorted(used.items())] or ["gen"]
    if fb:
        parts.append(f"{fb} numpy kernels")
    parts.append("1-call entry" if g.entry is not None else "python loop")
    return " ".join(parts)


CONFIG: dict = {}  # PassContext config of minitvm's build (``--blas`` fills it)


def bench_model(key: str, runs: int, threads: int, rows: list) -> None:
    from minitvm.backend import kernel_cache
    from minitvm.codegen.build import clear_cache
    from minitvm.runtime import blas

    label, make = MODELS[key]
    mod, params = make()
    p = mod["main"].params[0]
    shape = [int(d) for d in p.type_annotation.shape]
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    kernel_cache.clear_cache()
    clear_cache()
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3, config=CONFIG):
        lib = relay.build(mod, target="llvm", params=params)
    compile_s = time.perf_counter() - t0
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    name = p.name_hint

    def run_tvm():
        m.set_input(name, x)
        m.run()
        return m.get_output(0).numpy()

    out = run_tvm().copy()
    res = {"model": label, "compile_s": compile_s, "path": paths(lib)}
    runners = {"minitvm": run_tvm}
    main, order = prepare(mod, params)
    blas.set_num_threads(threads)  # numpy's own BLAS threading for the numpy peer
    np_run = numpy_runner(main, order)
    ref = np_run(x)
    res["err"] = float(np.max(np.abs(out - ref)) / max(1e-6, float(np.max(np.abs(ref)))))
    runners["numpy"] = lambda: np_run(x)
    res["ort"] = res["torch"] = None
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3  # no warnings about the unused initializers we export
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(to_onnx(main, order), so, providers=["CPUExecutionProvider"])
        feed = {name: x}
        runners["ort"] = lambda: sess.run(None, feed)
    except ImportError:
        pass
    try:
        import torch

        tr = torch_runner(main, order, threads)
        xt = torch.from_numpy(x)
        runners["torch"] = lambda: tr(xt).numpy()
    except ImportError:
        pass
    # interleaved rounds, each peer's turn after a pause (interleave.settled_rounds)
    reps = 5
    times = settled_rounds(runners, max(3, runs // reps), reps, CLOCK)
    res.update({k: float(np.median(v)) * 1e3 for k, v in times.items()})
    rows.append(res)


def bench_resnet50() -> str:
    import json

    from minitvm.backend import kernel_cache
    from minitvm.backend.memory_plan import peak_bytes
    from minitvm.codegen.build import clear_cache

    mod, params = testing.resnet.get_workload(num_layers=50)
    kernel_cache.clear_cache()
    clear_cache()
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    warm = time.perf_counter() - t0
    g = json.loads(lib.get_graph_json())
    peak = peak_bytes(g) / 2**20
    naive = sum(int(np.prod(s)) * 4 for s in g["attrs"]["shape"][1]) / 2**20
    weights = sum(v.numpy().nbytes for v in lib.get_params().values()) / 2**20
    return (f"ResNet-50 opt 3: build {cold:.2f} s cold, {warm:.2f} s with the kernel cache warm; "
            f"planned activations+workspace {peak:.1f} MiB (all tensors unshared "
            f"{naive:.1f} MiB; weights {weights:.1f} MiB)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resnet50", action="store_true", help="also time ResNet-50's build")
    ap.add_argument("--blas", action="store_true",
                    help="conv2d (im2col) and dense through BLAS instead of generated GEMMs")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the calling thread's CPU time (fair at --threads 1 on a "
                         "loaded machine; set OPENBLAS_NUM_THREADS=1 for numpy's BLAS)")
    args = ap.parse_args(argv)
    global CLOCK
    if args.cpu_time:
        CLOCK = time.thread_time
    if args.blas:
        CONFIG.update({"relay.backend.use_generated_conv": False,
                       "relay.backend.use_generated_dense": False})
    os.environ.setdefault("TVM_NUM_THREADS", str(args.threads))
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(args.threads)
    rows: list = []
    for key in args.models.split(","):
        bench_model(key.strip(), args.runs, args.threads, rows)

    def fmt(v):
        return "   n/a" if v is None else f"{v:8.4f}"

    def ratio(a, b):
        return "  n/a" if a is None or b is None else f"{b / a:5.2f}x"

    print(f"threads={args.threads}; median ms (end to end: set input, run, read output)")
    print(f"{'model':24s} {'minitvm':>8s} {'numpy':>8s} {'torch':>8s} {'ORT':>8s}  "
          f"{'np/mt':>6s} {'pt/mt':>6s} {'ort/mt':>6s} {'compile':>8s}  path")
    for r in rows:
        print(f"{r['model']:24s} {fmt(r['minitvm'])} {fmt(r['numpy'])} {fmt(r['torch'])} "
              f"{fmt(r['ort'])}  {ratio(r['minitvm'], r['numpy'])} "
              f"{ratio(r['minitvm'], r['torch'])} {ratio(r['minitvm'], r['ort'])} "
              f"{r['compile_s']:7.2f}s  {r['path']} (max rel err {r['err']:.1e})")
    print("ratios > 1 mean minitvm is faster; ort/mt >= 0.67 means within 1.5x of ONNX Runtime")
    if args.resnet50:
        print(bench_resnet50())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
