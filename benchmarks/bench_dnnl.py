"""The "dnnl" external codegen side by side with minitvm's own generated code and ONNX Runtime:
a ResNet basic block and a BERT encoder layer, partitioned for dnnl (``partition_for_dnnl``,
oneDNN through ctypes) vs built whole by minitvm vs ONNX Runtime (when installed), in
interleaved rounds in one process on the same weights.

    python benchmarks/bench_dnnl.py [--models resnet_block,bert] [--rounds 5] [--runs 10]
                                    [--threads 2] [--resnet18]

Each round times every engine ``--runs`` times (end to end: set the input, run, read the
output); the table gives the median over all rounds, and ratios (> 1: dnnl is faster).
Needs the ``dnnl`` extra (``pip install 'minitvm[dnnl]'``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)


def resnet_block(channels: int = 64, size: int = 56):
    """A ResNet basic block: conv-bn-relu, conv-bn, + identity, relu (batch 1)."""
    import minitvm as tvm
    from minitvm import relay

    x = relay.var("data", shape=(1, channels, size, size))
    rng = np.random.default_rng(0)
    params, h = {}, x
    for i in range(2):
        w = relay.var(f"w{i}", shape=(channels, channels, 3, 3))
        g, b, m, v = [relay.var(f"bn{i}_{k}", shape=(channels,)) for k in "gbmv"]
        params[f"w{i}"] = (rng.standard_normal((channels, channels, 3, 3)) * 0.05).astype(
            "float32")
        params[f"bn{i}_g"] = rng.uniform(0.5, 1.5, channels).astype("float32")
        params[f"bn{i}_b"] = rng.standard_normal(channels).astype("float32") * 0.1
        params[f"bn{i}_m"] = rng.standard_normal(channels).astype("float32") * 0.1
        params[f"bn{i}_v"] = rng.uniform(0.5, 1.5, channels).astype("float32")
        h = relay.nn.conv2d(h, w, padding=(1, 1), channels=channels, kernel_size=(3, 3))
        h = relay.nn.batch_norm(h, g, b, m, v)[0]
        if i == 0:
            h = relay.nn.relu(h)
    out = relay.nn.relu(relay.add(h, x))
    func = relay.Function(relay.analysis.free_vars(out), out)
    return tvm.IRModule.from_expr(func), params


def models(resnet18: bool):
    from minitvm.relay import testing

    table = {
        "resnet_block": ("ResNet basic block 64x56x56", resnet_block),
        "bert": ("BERT-base layer s128", lambda: testing.bert.get_workload()),
    }
    if resnet18:
        table["resnet18"] = ("ResNet-18 1x3x224x224",
                             lambda: testing.resnet.get_workload(batch_size=1, num_layers=18))
    return table


def build_runner(mod, params, partition: bool):
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    t0 = time.perf_counter()
    if partition:
        from minitvm.relay.op.contrib.dnnl import partition_for_dnnl

        mod = partition_for_dnnl(mod, params)
        params = None
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    compile_s = time.perf_counter() - t0
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    return m, compile_s, lib


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet_block,bert")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resnet18", action="store_true", help="also ResNet-18 (224x224)")
    args = ap.parse_args(argv)
    # oneDNN (GNU OpenMP) and minitvm's pool get the same number of threads
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.environ.setdefault("TVM_NUM_THREADS", str(args.threads))
    from minitvm.backend.contrib.dnnl import available
    from minitvm.runtime import threadpool

    if not available():
        print("oneDNN is not installed: pip install 'minitvm[dnnl]' (onednn-cpu-gomp)")
        return 1
    threadpool.set_num_threads(args.threads)
    table = models(args.resnet18)
    keys = [k.strip() for k in args.models.split(",")] + (["resnet18"] if args.resnet18 and
                                                          "resnet18" not in args.models else [])
    rows = []
    for key in keys:
        label, make = table[key]
        mod, params = make()
        p = mod["main"].params[0]
        shape = [int(d) for d in p.type_annotation.shape]
        x = np.random.default_rng(1).standard_normal(shape).astype("float32")
        own, own_s, _ = build_runner(mod, params, partition=False)
        dnnl, dnnl_s, dlib = build_runner(mod, params, partition=True)
        n_ext = sum(1 for k in dlib.get_lib().kernels.values() if "external codegen dnnl"
                    in k.reason)
        n_own = len(dlib.get_lib().kernels) - n_ext
        name = p.name_hint

        def runner(m, name=name, x=x):
            def run():
                m.set_input(name, x)
                m.run()
                return m.get_output(0).numpy()
            return run

        engines = {"minitvm": runner(own), "dnnl": runner(dnnl)}
        out_own, out_dnnl = engines["minitvm"]().copy(), engines["dnnl"]().copy()
        err = float(np.max(np.abs(out_own - out_dnnl)) / max(1e-6, np.max(np.abs(out_own))))
        try:
            import onnxruntime as ort
            from bench_models import prepare, to_onnx

            main_fn, order = prepare(mod, params)
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            sess = ort.InferenceSession(to_onnx(main_fn, order), so,
                                        providers=["CPUExecutionProvider"])
            engines["ort"] = lambda sess=sess, feed={name: x}: sess.run(None, feed)
        except ImportError:
            pass
        times = {k: [] for k in engines}
        for fn in engines.values():
            fn()  # warm up
        for _ in range(args.rounds):  # interleaved: every engine once per round
            for k, fn in engines.items():
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    fn()
                    times[k].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        rows.append((label, med, own_s, dnnl_s, err, n_ext, n_own))

    print(f"threads={args.threads}; median ms over {args.rounds} interleaved rounds x "
          f"{args.runs} runs (end to end)")
    print(f"{'model':28s} {'minitvm':>9s} {'dnnl':>9s} {'ORT':>9s} {'mt/dnnl':>8s} "
          f"{'ort/dnnl':>8s}  build(own/dnnl)  kernels(dnnl/own)  rel err")
    for label, med, own_s, dnnl_s, err, n_ext, n_own in rows:
        ort_ms = med.get("ort")
        ort_txt = f"{ort_ms:9.3f}" if ort_ms is not None else "      n/a"
        ort_ratio = f"{ort_ms / med['dnnl']:7.2f}x" if ort_ms is not None else "     n/a"
        print(f"{label:28s} {med['minitvm']:9.3f} {med['dnnl']:9.3f} {ort_txt} "
              f"{med['minitvm'] / med['dnnl']:7.2f}x {ort_ratio}  {own_s:5.2f}s/{dnnl_s:5.2f}s"
              f"      {n_ext}/{n_own}            {err:.1e}")
    print("ratios > 1 mean the dnnl-partitioned build is faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
