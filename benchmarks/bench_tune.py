"""Untuned vs tuned latency beside ONNX Runtime: tune a model's schedules with a short budget,
build with the records, and time the three side by side in this process (same weights/input).

    python benchmarks/bench_tune.py [--models mlp64,resnet_small] [--trials 24] [--seconds 300]
                                    [--records bench_tune.jsonl] [--rounds 5] [--runs 30]

Models: an MLP 784-128-10 at batch 64, and the ResNet stem + 2 basic blocks
(``relay.testing.resnet.get_small_workload``, 1x3x224x224); ``resnet50`` on request. The records file is appended to
and reused: a second run measures only what is new (``--fresh`` starts over). Latencies are the
best of ``--rounds`` interleaved rounds, each the median of ``--runs`` end-to-end runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import minitvm as tvm  # noqa: E402
from minitvm import relay, tune  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relay import testing  # noqa: E402


def mlp_784_128_10(batch: int = 64):
    rng = np.random.default_rng(0)
    x = relay.var("data", shape=(batch, 784))
    w1, b1 = relay.var("w1", shape=(128, 784)), relay.var("b1", shape=(128,))
    w2, b2 = relay.var("w2", shape=(10, 128)), relay.var("b2", shape=(10,))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
    y = relay.nn.bias_add(relay.nn.dense(h, w2), b2)
    params = {"w1": rng.standard_normal((128, 784)).astype("float32") * 0.05,
              "b1": rng.standard_normal(128).astype("float32"),
              "w2": rng.standard_normal((10, 128)).astype("float32") * 0.1,
              "b2": rng.standard_normal(10).astype("float32")}
    mod = tvm.IRModule.from_expr(relay.Function([x, w1, b1, w2, b2], y))
    return mod, {k: tvm.nd.array(v) for k, v in params.items()}


MODELS = {
    "mlp64": ("MLP 784-128-10 b64", mlp_784_128_10),
    "resnet_small": ("ResNet stem+2 blocks", lambda: testing.resnet.get_small_workload()),
    "resnet50": ("ResNet-50 b1", lambda: testing.resnet.get_workload(num_layers=50)),
}
DEFAULT_MODELS = "mlp64,resnet_small"


def _graph_runner(lib, name, x):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))

    def run():
        m.set_input(name, x)
        m.run()
        return m.get_output(0).numpy()

    return run


def bench(key: str, args) -> dict:
    from bench_models import prepare, to_onnx
    from interleave import settled_rounds

    label, make = MODELS[key]
    mod, params = make()
    p = mod["main"].params[0]
    x = np.random.default_rng(0).standard_normal(
        [int(d) for d in p.type_annotation.shape]).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        untuned = relay.build(mod, target="llvm", params=params)
    t0 = time.perf_counter()
    db = tune.tune_relay(mod, params, "llvm", records=args.records, trials=args.trials,
                         seconds=args.seconds, progress="lines" if args.verbose else "none",
                         verbose=True)
    tune_s = time.perf_counter() - t0
    with tune.apply_history_best(args.records), tvm.transform.PassContext(opt_level=3):
        tuned = relay.build(mod, target="llvm", params=params)
    runs = {"untuned": _graph_runner(untuned, p.name_hint, x),
            "tuned": _graph_runner(tuned, p.name_hint, x)}
    ref = runs["untuned"]().copy()
    err = float(np.max(np.abs(runs["tuned"]() - ref)) / max(1e-6, float(np.max(np.abs(ref)))))
    try:
        import onnxruntime as ort

        main, order = prepare(mod, params)
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        # (its idle threads must not spin into minitvm's turn: see interleave.py)
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(to_onnx(main, order), so,
                                    providers=["CPUExecutionProvider"])
        feed = {p.name_hint: x}
        runs["ort"] = lambda: sess.run(None, feed)
    except ImportError:
        pass
    # interleaved rounds: a load spike hits every contender alike
    times = settled_rounds(runs, args.rounds, args.runs)
    best = {k: min(v) * 1e3 for k, v in times.items()}
    tasks = tune.extract_tasks(mod, params)
    tuned_tasks = sum(1 for t in tasks if db.best(t.workload) is not None)
    return dict(model=label, err=err, tune_s=tune_s, tasks=len(tasks), ntuned=tuned_tasks,
                records=len(db), **best)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=DEFAULT_MODELS, help=f"of {','.join(MODELS)}")
    ap.add_argument("--trials", type=int, default=24, help="candidates per task")
    ap.add_argument("--seconds", type=float, default=300.0, help="tuning budget per model")
    ap.add_argument("--records", default="bench_tune.jsonl")
    ap.add_argument("--fresh", action="store_true", help="delete the records file first")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per candidate")
    args = ap.parse_args(argv)
    if args.fresh and os.path.exists(args.records):
        os.remove(args.records)
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(args.threads)
    rows = [bench(k.strip(), args) for k in args.models.split(",")]
    print(f"threads={args.threads}; best of {args.rounds} rounds of median-of-{args.runs} ms; "
          f"records {args.records}")
    print(f"{'model':22s} {'untuned':>8s} {'tuned':>8s} {'ORT':>8s} {'tuned/untuned':>13s} "
          f"{'untuned/ORT':>11s} {'tuned/ORT':>9s} {'tuning':>8s}  tasks")
    for r in rows:
        ort_ms = r.get("ort")

        def ratio(a, b):
            return f"{a / b:.2f}x" if b and b != float("inf") else "n/a"

        print(f"{r['model']:22s} {r['untuned']:8.4f} {r['tuned']:8.4f} "
              f"{ort_ms if ort_ms is not None else float('nan'):8.4f} "
              f"{ratio(r['tuned'], r['untuned']):>13s} {ratio(r['untuned'], ort_ms):>11s} "
              f"{ratio(r['tuned'], ort_ms):>9s} {r['tune_s']:7.1f}s  "
              f"{r['ntuned']}/{r['tasks']} tuned, {r['records']} records "
              f"(max rel err tuned vs untuned {r['err']:.1e})")
    print("ratios are latency ratios: below 1 means the first is faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
