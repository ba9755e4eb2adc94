"""Per-call overhead of Relax VM programs whose sizes depend on data (torch.nonzero, torch.unique,
torch.unique_consecutive of 16 elements, imported with torch.export): the generated Python of
straight-line functions (``vm.straight_line``, the default) against the instruction-by-instruction
interpreter, beside a static program of the same size (the native entry) and PyTorch eager;
interleaved rounds, CPU time of this thread, medians.
``TVM_NUM_THREADS=1 python benchmarks/bench_relax_dynamic_overhead.py [n]``"""

from __future__ import annotations

import statistics
import sys
import time

import torch

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


CASES = {
    "static relu+1": lambda x: torch.relu(x) + 1,
    "nonzero(x > 0)": lambda x: torch.nonzero(x > 0),
    "unique": lambda x: torch.unique(x, return_inverse=True, return_counts=True),
    "unique_consecutive": lambda x: torch.unique_consecutive(
        x, return_inverse=True, return_counts=True),
}


def per_call(fn, n: int) -> float:
    t0 = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - t0) / n


def main(n: int = 16, rounds: int = 9, calls: int = 300) -> None:
    torch.set_num_threads(1)
    x = torch.round(torch.randn(n) * 2)
    nd = tvm.nd.array(x.numpy())
    print(f"{'program':22s} {'generated us':>13s} {'interpreted us':>15s} {'torch us':>9s}")
    for name, fn in CASES.items():
        vm = relax.VirtualMachine(relax.build(from_exported_program(
            torch.export.export(Fn(fn), (x,))), "llvm"), tvm.cpu())
        run = vm["main"]

        def interpreted(vm=vm, run=run):
            vm.straight_line = False
            try:
                run(nd)
            finally:
                vm.straight_line = True

        fns = {"gen": lambda run=run: run(nd), "interp": interpreted,
               "torch": lambda fn=fn: fn(x)}
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(rounds):
            for k, f in fns.items():
                times[k].append(per_call(f, calls))
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        print(f"{name:22s} {med['gen']:13.1f} {med['interp']:15.1f} {med['torch']:9.1f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
