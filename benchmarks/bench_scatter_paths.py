"""Scatter-heavy new-user models (graph networks, token merging, index_put) through every way
in, timed beside ONNX Runtime at one thread.

    python benchmarks/bench_scatter_paths.py [--models egnn_mini,gat_mini] [--rounds 7]
                                             [--paths ep-relax,onnx-relay] [--steps 8]

Paths (``sweep_import_paths``' names): ``onnx-relay`` and ``onnx-relax`` (the same
``torch.onnx.export`` file, static shapes), ``ep-relax`` and ``ep-relay`` (``torch.export``).
Each built module runs interleaved with ORT and torch eager (``interleave.settled_rounds``,
``time.thread_time``); prints each path's median in ms, its ratio to ORT (to eager where no ONNX
file runs under ORT as eager does) and its largest error relative to eager. ``--steps N`` also
prints the ``N`` costliest steps of each build (the Relax native entry's plan, the graph
executor's native steps; one step at a time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import bench_new_user_models as nu  # noqa: E402
import sweep_import_paths as sw  # noqa: E402
from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402

MODELS = ("egnn_mini", "gat_mini", "sage_max_mean", "tome_vit", "informer_mini")
PATHS = ("onnx-relay", "onnx-relax", "ep-relax", "ep-relay")


def _relay_runner(mod, params, feed: dict):
    with tvm.transform.PassContext(opt_level=3):
        lib = tvm.relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in feed.items():
        gm.set_input(k, v)
    gm.run()
    return gm.run, lambda: gm.get_output(0).numpy(), (lib, gm)


def _relax_runner(mod, arrays):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    args = [tvm.nd.array(a) for a in arrays]
    out = [None]

    def call():
        out[0] = vm["main"](*args)

    call()
    call()  # (the second call runs the recorded plan)
    return call, lambda: sw.first_tensor(out[0]), (vm, args)


def build(path: str, name: str, model, inputs: dict, blob: bytes):
    """(run, output, relax vm and args or None) of ``model`` through ``path``."""
    import onnx

    args = tuple(inputs.values())
    if path in ("onnx-relay", "onnx-relax"):
        om = onnx.load_from_string(blob)
        feed = sw.onnx_feed(om, inputs)
        if path == "onnx-relay":
            mod, params = tvm.relay.frontend.from_onnx(om, {k: v.shape for k, v in feed.items()})
            return _relay_runner(mod, params, feed)
        return _relax_runner(relax.frontend.onnx.from_onnx(om, keep_params_in_input=False),
                             list(feed.values()))
    ep = sw.export(model, args)
    if path == "ep-relax":
        from minitvm.relax.frontend.torch import from_exported_program

        return _relax_runner(from_exported_program(ep), [a.numpy() for a in args])
    from minitvm.relay.frontend.pytorch import from_exported_program

    mod, params = from_exported_program(ep)
    user = [p.name_hint for p in mod["main"].params]
    return _relay_runner(mod, params, {p: a.numpy() for p, a in zip(user, args, strict=True)})


def _timed(names, steps, top: int, rounds: int) -> list[tuple[float, str]]:
    cost = []
    for n, step in zip(names, steps, strict=True):
        step()
        t0 = time.thread_time()
        for _ in range(rounds):
            step()
        cost.append(((time.thread_time() - t0) / rounds * 1e3, n))
    return sorted(cost, reverse=True)[:top]


def relay_steps(lib, gm, top: int, rounds: int = 20) -> list[tuple[float, str]]:
    """The ``top`` costliest native steps of a Relay build: (mean ms, kernel name)."""
    inner = gm if hasattr(gm, "_state") else next(
        o for o in (getattr(gm, a) for a in dir(gm)) if hasattr(o, "_state"))
    native = [s for s in inner._state().steps if s[0] == "native"]
    return _timed([s[3] for s in native], [lambda s=s: s[1](s[2], None, 1) for s in native],
                  top, rounds)


def relax_steps(vm, args, top: int, rounds: int = 20) -> list[tuple[float, str]]:
    """The ``top`` costliest steps of a Relax build's plan: (mean ms, kernel name)."""
    native = vm._native["main"]
    key, arrays = native.conv(*args)
    plan = native.plans[key]
    full = (*arrays, *[np.empty(s, d) for s, d in plan.outs])
    names, words = plan.order(1)
    return _timed(names, [lambda a=w.ctypes.data: plan.run(full, a, 1) for w in words], top,
                  rounds)


def _session(blob: bytes):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])


def onnx_baseline(name: str, model, inputs: dict):
    """(ONNX file, ORT session, feed): ``torch.onnx.export``'s TorchScript exporter, or the
    dynamo one where that fails or ORT rejects its file (egnn_mini, gat_mini); None when
    neither gives a file ORT runs as eager does (tome_vit's scatter_reduce mean)."""
    import onnx

    try:
        blob = nu.onnx_bytes(name, model, tuple(inputs.values()), inputs)
        sess = _session(blob)
    except Exception as e:  # noqa: BLE001 - the exporter or its file, not minitvm
        print(f"{name:16s} (no TorchScript export ORT runs: {sw.first_line(e)[:70]}; "
              "the dynamo export instead)")
        try:
            om, _ = sw.dynamo_onnx(name, model, inputs,
                                   sw.eager(model, tuple(inputs.values())), 1e-3)
        except Exception as e2:  # noqa: BLE001 - sw.Skip: no ONNX baseline
            print(f"{name:16s} (no ONNX baseline: {sw.first_line(e2)[:90]})")
            return None
        blob = om.SerializeToString()
        sess = _session(blob)
    return blob, sess, sw.onnx_feed(onnx.load_from_string(blob), inputs)


def measure(name: str, paths, rounds: int, steps: int) -> None:
    """Time ``name`` through ``paths`` beside ORT and torch eager; print medians and ratios."""
    import torch

    ctor, spec = sw.groups()["all"][name]
    model, inputs = nu.prepare(ctor, spec)
    args = tuple(inputs.values())
    ref = sw.eager(model, args)
    base = onnx_baseline(name, model, inputs)

    def eager():
        with torch.no_grad():
            model(*args)

    impls, outs, vms = {"torch": eager}, {}, {}
    if base is not None:
        blob, sess, feed = base
        impls["ort"] = lambda: sess.run(None, feed)
    for p in paths:
        if base is None and p.startswith("onnx"):
            continue
        try:
            run, out, vm = build(p, name, model, inputs, base[0] if base else None)
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"{name:16s} {p:11s} FAILED {type(e).__name__}: {sw.first_line(e)}")
            continue
        impls[p], outs[p] = run, out
        if vm is not None:
            vms[p] = vm
    times = settled_rounds(impls, rounds, 5, clock=time.thread_time)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    peer = "ort" if "ort" in med else "torch"
    for k in ("ort", "torch"):
        if k in med:
            print(f"{name:16s} {k:11s} {med[k]:9.3f} ms", flush=True)
    for p in outs:
        err = sw.rel_err(outs[p](), ref)
        print(f"{name:16s} {p:11s} {med[p]:9.3f} ms {med[p] / med[peer]:7.2f}x {peer:5s} "
              f"err {err:.1e}", flush=True)
        if steps and p in vms:
            timer = relax_steps if p.endswith("relax") else relay_steps
            for ms, k in timer(*vms[p], steps):
                print(f"{'':30s} {ms:8.3f} ms  {k}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    if not nu.one_thread_with_extras():
        return 1
    for name in a.models.split(","):
        measure(name, a.paths.split(","), a.rounds, a.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
