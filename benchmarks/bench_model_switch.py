"""Whole models A/B under a module-level switch, in one process: each model of
bench_new_user_models imported once, built once per value of ``--switch`` (a module attribute
under ``minitvm``), every build timed beside ONNX Runtime in the same interleaved rounds (one
thread, thread CPU time, batch 1).

    python benchmarks/bench_model_switch.py --switch schedule.conv_winograd.M_CHUNK_BYTES \\
        --values 262144,4611686018427387904 [--models squeezenet] [--rounds 11]

A value may repeat (``--values A,B,A,B``): the repeated builds are A/A controls, whose spread is
the noise floor of the machine for that model (on a loaded 2-core host it was 2-5%). The
whole-build cache is off, so each build runs the pipeline, the codegen and the memory plan with
the switch set; so are the per-kernel disk cache and the in-process kernel cache (a switch a
kernel's cache key does not see would load the other build's kernels) unless ``--kernel-cache``
says the switch does not change kernels (the memory plan, the run order). Prints per model and build: ms, the ratio to ORT, the
planned intermediate MB, and whether the builds' outputs are bit-identical.

Needs the ``torch``, ``onnx`` and ``onnxruntime`` extras.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

DEFAULT_MODELS = "regnet_like,squeezenet,deeplab_head,det_postprocess,xception_mini"


def _value(text: str):
    """``--values`` item: a Python literal (``None``, ``True``, ``262144``) or else a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def build(mod, params, switch: str, value, kernel_cache: bool):
    """(GraphModule, planned bytes) of ``mod`` built with ``minitvm.<switch>`` set to
    ``value`` (restored after)."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.backend import kernel_cache as kernels
    from minitvm.backend import memory_plan
    from minitvm.contrib import graph_executor

    where, attr = switch.split("[")[0].rsplit(".", 1)
    module = importlib.import_module(f"minitvm.{where}")
    if not hasattr(module, attr):
        raise SystemExit(f"--switch {switch}: minitvm.{where} has no attribute {attr}")
    saved = getattr(module, attr)
    if "[" in switch:  # one host's entry of a per-host switch (a dict): NAME[KEY]
        key = switch.split("[", 1)[1].rstrip("]")
        if not isinstance(saved, dict) or key not in saved:
            raise SystemExit(f"--switch {switch}: {attr} is no per-host dict with key {key!r}")
        value = {**saved, key: value}
    setattr(module, attr, value)
    config = {"relay.backend.use_build_cache": False}
    if not kernel_cache:
        config["relay.backend.use_disk_cache"] = False
        # the in-process kernel cache keys a kernel by its fused function and the lowering
        # options, not by a module switch: without this every build after the first took the
        # first build's kernels (an A/B of a schedule switch was an A/A)
        kernels.clear_cache()
    try:
        with tvm.transform.PassContext(opt_level=3, config=config):
            lib = relay.build(mod, target="llvm", params=params)
    finally:
        setattr(module, attr, saved)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    return gm, memory_plan.peak_bytes(json.loads(lib.get_graph_json()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switch", required=True,
                    help="MODULE.NAME under minitvm, e.g. schedule.conv_winograd.M_CHUNK_BYTES, "
                    "or MODULE.NAME[KEY]: one host's entry of a per-host switch, e.g. "
                    "schedule.resize.NONTEMPORAL_MIN_BYTES[rocketlake]")
    ap.add_argument("--values", required=True, help="comma-separated values, one build each")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--kernel-cache", action="store_true",
                    help="keep the per-kernel disk cache (the switch does not change kernels)")
    args = ap.parse_args()
    try:
        import onnxruntime as ort
        import torch
        from bench_new_user_models import (
            fifth_models,
            fourth_models,
            import_relay,
            models,
            new_models,
            onnx_bytes,
            prepare,
            third_models,
        )
    except ImportError as e:
        print(f"needs the torch and onnx extras (pip install -e '.[torch,onnx]'): {e}")
        return 0
    from minitvm.runtime import threadpool

    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    warnings.filterwarnings("ignore")
    table = {**models(), **new_models(), **third_models(), **fourth_models(), **fifth_models()}
    if any(name not in table for name in args.models.split(",")):
        import bench_new_user_models as bnm  # the later rounds' models (every *_models table)

        for attr in dir(bnm):
            if attr.endswith("_models") and callable(getattr(bnm, attr)):
                table = {**getattr(bnm, attr)(), **table}
    values = args.values.split(",")
    # a repeated value is an A/A control: each build gets its own column
    labels = [v if values.count(v) == 1 else f"{v}#{i}" for i, v in enumerate(values)]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.switch}; one thread, ms "
          f"(thread CPU time), median of {args.rounds} interleaved rounds of median-of-5")
    print(f"{'model':16s} {'value':12s} {'ms':>8s} {'ORT':>8s} {'vs ORT':>7s} {'MB':>6s}")
    for name in args.models.split(","):
        model, inputs = prepare(*table[name])
        margs = tuple(inputs.values())
        mod, params, names, _ = import_relay(model, margs, inputs)
        feed = {k: v.numpy() for k, v in inputs.items()}
        impls, planned, outs = {}, {}, {}
        for label, text in zip(labels, values, strict=True):
            gm, planned[label] = build(mod, params, args.switch, _value(text),
                                       args.kernel_cache)
            for n, v in zip(names, feed.values(), strict=True):
                gm.set_input_zero_copy(n, v)
            gm.run()
            outs[label] = gm.get_output(0).numpy().copy()
            impls[label] = gm.run
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(onnx_bytes(name, model, margs, inputs), so,
                                    providers=["CPUExecutionProvider"])
        ort_feed = {i.name: feed[i.name] for i in sess.get_inputs()}
        impls["ort"] = lambda s=sess, f=ort_feed: s.run(None, f)
        times = settled_rounds(impls, args.rounds, 5, clock=time.thread_time)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        for label in labels:
            print(f"{name:16s} {label:12s} {med[label]:8.3f} {med['ort']:8.3f} "
                  f"{med[label] / med['ort']:6.2f}x {planned[label] / 2**20:6.1f}", flush=True)
        same = all(np.array_equal(outs[k], outs[labels[0]]) for k in labels)
        print(f"{'':16s} outputs bit-identical across the builds: {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
