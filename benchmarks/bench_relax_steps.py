"""Kernel by kernel: a model's Relax build with a dynamic batch beside its Relay build at a static
batch, from the same ONNX file (``bench_dynamic_batch``'s models), at one thread.

    python benchmarks/bench_relax_steps.py --model squeezenet [--batch 4] [--rounds 20]

Prints each build's steps in execution order with their thread CPU time (mean over ``--rounds``
calls of each step alone: the Relax native entry's plan one step at a time, the graph
executor's steps), then both whole calls. The two builds alternate which runs first in each
round, so neither gets the warmer caches. A step's time includes the state of memory the
steps before it left: a memory-bound kernel (a pool after a big conv) can differ between the
builds by where its input lies, with the same code; time such a kernel alone before blaming it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from bench_dynamic_batch import export_dynamic, model_table  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402


def relax_steps(onnx_model, x):
    """(step names, one callable per step, the whole call) of the Relax build at ``x``."""
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(onnx_model), "llvm"),
                              tvm.cpu())
    xt = tvm.nd.array(x)
    vm["main"](xt)
    vm["main"](xt)  # (the second call runs the recorded plan)
    native = vm._native["main"]
    key, arrays = native.conv(xt)
    plan = native.plans[key]
    args = (*arrays, *[np.empty(s, d) for s, d in plan.outs])
    names, words = plan.order(1)  # (the order a call runs at one thread)
    # each step's word address taken once: ``ndarray.ctypes`` builds a helper object, which
    # cost about 2 us per step here, more than many of the kernels timed
    steps = [lambda w=w, a=w.ctypes.data: plan.run(args, a, 1) for w in words]
    return names, steps, lambda: vm["main"](xt)


def relay_steps(onnx_model, x):
    """(kernel names, one callable per native step, the whole run) of the Relay build."""
    from minitvm.contrib import graph_executor

    mod, params = relay.frontend.from_onnx(onnx_model, {"x": x.shape})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", x)
    g.run()
    inner = g if hasattr(g, "_state") else next(
        o for o in (getattr(g, a) for a in dir(g)) if hasattr(o, "_state"))
    state = inner._state()
    names = [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"]
             if n["op"] == "tvm_op"]
    steps = [lambda s=s: s[1](s[2], None, 1) for s in inner._kernel_calls(state)
             if s[0] == "native"]
    return names, steps, g.run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    import onnx
    import torch

    torch.set_num_threads(1)
    threadpool.set_num_threads(1)
    ctor, shape = model_table()[args.model]
    _, buf = export_dynamic(ctor, shape)
    x = np.random.default_rng(0).standard_normal((args.batch, *shape[1:])).astype("float32")
    builds = {"relax": relax_steps(onnx.load_from_string(buf.getvalue()), x),
              "relay": relay_steps(onnx.load_from_string(buf.getvalue()), x)}
    tot = {k: np.zeros(len(v[1])) for k, v in builds.items()}
    whole = {k: [] for k in builds}
    order = list(builds)
    for r in range(args.rounds):
        for k in order if r % 2 else order[::-1]:
            names, steps, call = builds[k]
            for i, step in enumerate(steps):
                t0 = time.thread_time()
                step()
                tot[k][i] += time.thread_time() - t0
            t0 = time.thread_time()
            call()
            whole[k].append(time.thread_time() - t0)
    for k, (names, _, _) in builds.items():
        ms = tot[k] / args.rounds * 1e3
        print(f"== {k}: {len(ms)} steps, sum {ms.sum():.3f} ms, whole call "
              f"{np.median(whole[k]) * 1e3:.3f} ms (median)")
        for i, t in enumerate(ms):
            print(f"  {i:3d} {t:8.3f}  {names[i] if i < len(names) else '?'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
