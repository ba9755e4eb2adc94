"""A/B of Relax's fusion barriers (``R.stop_fusion``) on the models whose importers place them
(grid sampling: the modulated deformable conv; col2im: a fold), against the same Relax module
with the barriers removed before the build and against Relay (whose importer places
``annotation.stop_fusion`` at the same values). One thread, interleaved rounds, thread CPU time.

    python benchmarks/bench_relax_fusion_barrier.py [--models deform_conv_net,fold] [--rounds 7]

Needs the ``torch`` extra. Prints each time, the ratios and the largest error against PyTorch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TVM_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


def _models() -> dict:
    import torch
    from new_user_models_eighth import eighth_models
    from torch import nn

    class Fold(nn.Module):
        """An unfold, a pointwise GELU on the columns and a fold back (FuseFormer's soft
        split and composition)."""

        def forward(self, x):
            cols = nn.functional.gelu(nn.functional.unfold(x, 7, padding=3, stride=3))
            return nn.functional.fold(cols, (60, 60), 7, padding=3, stride=3)

    deform, shape = eighth_models()["deform_conv_net"]
    return {"deform_conv_net": (deform, (torch.randn(*shape),)),
            "fold": (Fold, (torch.randn(1, 32, 60, 60),))}


def _relax_runner(model, args, keep_barriers: bool):
    import torch

    from minitvm.relax.frontend.torch import from_exported_program

    with torch.no_grad():
        mod = from_exported_program(torch.export.export(model, args))
    if not keep_barriers:
        mod = relax.transform.RemoveStopFusion()(mod)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    feed = [tvm.nd.array(a.numpy()) for a in args]
    return lambda: vm["main"](*feed)


def _relay_runner(model, args):
    import torch

    traced = torch.jit.trace(model, args, check_trace=False)
    mod, params = relay.frontend.from_pytorch(
        traced, [(f"i{k}", (tuple(a.shape), "float32")) for k, a in enumerate(args)])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, a in enumerate(args):
        gm.set_input(f"i{k}", a.numpy())

    def run():
        gm.run()
        return gm.get_output(0)

    return run


def _output(x):
    while isinstance(x, list | tuple):
        x = x[0]
    return x.numpy()


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="deform_conv_net,fold")
    ap.add_argument("--rounds", type=int, default=7)
    opts = ap.parse_args()
    table = _models()
    print(f"{'model':16s} {'relax (barriers)':>17s} {'relax (none)':>13s} {'relay':>9s}  "
          f"{'none/barriers':>13s} {'relay/barriers':>14s}  max rel. error")
    for name in opts.models.split(","):
        ctor, args = table[name]
        torch.manual_seed(0)
        model = ctor().eval()
        with torch.no_grad():
            ref = model(*args).numpy()
        impls = {"barriers": _relax_runner(model, args, True),
                 "none": _relax_runner(model, args, False),
                 "relay": _relay_runner(model, args)}
        err = max(float(np.abs(_output(f()) - ref).max() / np.abs(ref).max())
                  for f in impls.values())
        times: dict = {k: [] for k in impls}
        for _ in range(opts.rounds):
            for k, f in impls.items():
                f()
                t = time.thread_time()
                for _ in range(5):
                    f()
                times[k].append((time.thread_time() - t) / 5 * 1e3)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name:16s} {med['barriers']:14.3f} ms {med['none']:10.3f} ms "
              f"{med['relay']:6.3f} ms  {med['none'] / med['barriers']:12.2f}x "
              f"{med['relay'] / med['barriers']:13.2f}x  {err:.1e}")


if __name__ == "__main__":
    main()
