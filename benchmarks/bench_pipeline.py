"""Compile-time benchmark of relay.build's optimization pipeline (relay.optimize).

Prints, for ResNet-50, BERT-base (12 layers) and long chains, the median wall time of
InferType and of the opt_level-3 pipeline, plus what fusion produced. Apache TVM is not
installable here (no Relay on PyPI), so the column of reference figures is the issue's budget.
Run: python benchmarks/bench_pipeline.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing import bert, resnet


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _optimize(mod, params, level=3):
    with tvm.transform.PassContext(opt_level=level):
        return relay.optimize(mod, target="llvm", params=params)[0]


def fusion_stats(mod) -> dict:
    """Count primitive functions, and convs fused with at least one epilogue op."""
    prims, convs_with_epilogue, multiplies = 0, 0, 0
    calls = []
    relay.analysis.post_order_visit(mod["main"], calls.append)
    for e in calls:
        if isinstance(e, relay.Function) and e.get_attr("Primitive", 0):
            prims += 1
            names = []
            relay.analysis.post_order_visit(e.body, lambda n, names=names: names.append(
                n.op.name) if isinstance(n, relay.Call) and isinstance(n.op, tvm.ir.Op) else None)
            if any(n.startswith("nn.conv2d") or n == "nn.contrib_conv2d_NCHWc" for n in names) \
                    and len(names) > 1:
                convs_with_epilogue += 1
            multiplies += names.count("multiply")
    return {"primitive functions": prims, "convs with fused epilogue": convs_with_epilogue,
            "multiplies left": multiplies}


def chain(n: int):
    x = relay.var("x", shape=(1, 16))
    e = x
    for i in range(n):
        e = relay.nn.relu(e) if i % 3 == 0 else relay.add(e, relay.const(1.0))
    return tvm.IRModule.from_expr(relay.Function([x], e))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one repetition, smaller chains")
    args = ap.parse_args(argv)
    repeat = 1 if args.quick else 3
    rows = []

    mod, params = resnet.get_workload(num_layers=50)

    def fresh_infer():  # a new, untyped graph each time (a typed one is reused, ~0 s)
        net = resnet.get_net(1, 1000, 50, (3, 224, 224), "NCHW", "float32")
        t0 = time.perf_counter()
        relay.transform.InferType()(tvm.IRModule.from_expr(net))
        return time.perf_counter() - t0

    t_infer = statistics.median(fresh_infer() for _ in range(repeat))
    rows.append(("ResNet-50 InferType (fresh graph)", t_infer, "well under 1 s"))
    out = None

    def run_resnet():
        nonlocal out
        out = _optimize(mod, params)

    rows.append(("ResNet-50 opt_level=3 pipeline", _median_time(run_resnet, repeat), "< 1 s"))
    stats = fusion_stats(out)

    bmod, bparams = bert.get_workload(num_layers=12)
    rows.append(("BERT-base (12 layers) opt_level=3", _median_time(
        lambda: _optimize(bmod, bparams), repeat), "< 2 s"))

    sizes = (10_000, 30_000) if args.quick else (10_000, 30_000, 100_000)
    for n in sizes:
        cm = chain(n)
        rows.append((f"{n:,}-node chain opt_level=3", _median_time(
            lambda cm=cm: _optimize(cm, None), 1), "linear"))

    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'seconds':>8}  budget")
    for name, t, budget in rows:
        print(f"{name:<{width}}  {t:8.3f}  {budget}")
    print()
    for k, v in stats.items():
        print(f"ResNet-50 after opt_level=3: {k}: {v}")


if __name__ == "__main__":
    main()
