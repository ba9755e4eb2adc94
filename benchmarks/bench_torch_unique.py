"""One-thread latency of torch.unique (flattened with NaNs, along ``dim``) and
torch.unique_consecutive (flattened, along ``dim``) imported with torch.export: minitvm's Relay
(its VM: the result lengths depend on the data) and Relax builds against PyTorch eager;
interleaved rounds, CPU time of this thread, medians.
``TVM_NUM_THREADS=1 python benchmarks/bench_torch_unique.py [name prefix ...]``"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import torch

import minitvm as tvm
from minitvm import relax, relay
from minitvm.relax.frontend.torch import from_exported_program as relax_import
from minitvm.relay.frontend.pytorch import from_exported_program as relay_import


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def cases():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1000, 100000).astype("float32")
    x[rng.random(x.size) < 0.01] = np.nan
    yield "unique 100000 floats, 1% NaN", lambda x: torch.unique(
        x, return_inverse=True, return_counts=True), torch.from_numpy(x)
    rows = torch.from_numpy(rng.integers(0, 4, (20000, 6)))
    yield "unique dim=0 20000x6 int64", lambda x: torch.unique(
        x, dim=0, return_inverse=True, return_counts=True), rows
    cols = torch.from_numpy(rng.integers(0, 3, (4, 5000)).astype("int32"))
    yield "unique dim=1 4x5000 int32", lambda x: torch.unique(
        x, dim=1, return_inverse=True, return_counts=True), cols
    runs = torch.from_numpy(np.sort(rng.integers(0, 5000, 100000)))
    yield "unique_consecutive 100000 sorted int64", lambda x: torch.unique_consecutive(
        x, return_inverse=True, return_counts=True), runs
    rows = torch.repeat_interleave(torch.from_numpy(rng.random((5000, 8), "float32")), 3, 0)
    yield "unique_consecutive dim=0 15000x8 float32", lambda x: torch.unique_consecutive(
        x, dim=0, return_inverse=True, return_counts=True), rows


def runners(fn, x):
    ep = torch.export.export(Fn(fn), (x,))
    mod, params = relay_import(ep)
    with tvm.transform.PassContext(opt_level=3):
        run = relay.create_executor("vm", mod=mod, target="llvm", params=params).evaluate()
    vm = relax.VirtualMachine(relax.build(relax_import(ep), "llvm"), tvm.cpu())
    arr, nd = x.numpy(), tvm.nd.array(x.numpy())
    return {"relay": lambda: run(arr), "relax": lambda: vm["main"](nd),
            "torch": lambda: fn(x)}


def per_call(fn, n: int) -> float:
    t0 = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - t0) / n


def main(rounds: int = 7, calls: int = 10) -> None:
    torch.set_num_threads(1)
    for name, fn, x in cases():
        if sys.argv[1:] and not name.startswith(tuple(sys.argv[1:])):
            continue
        fns = runners(fn, x)
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(rounds):
            for k, f in fns.items():
                times[k].append(per_call(f, calls))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"{name}: relay {med['relay']:.3f} ms ({med['relay'] / med['torch']:.2f}x torch), "
              f"relax {med['relax']:.3f} ms ({med['relax'] / med['torch']:.2f}x torch), "
              f"torch {med['torch']:.3f} ms")


if __name__ == "__main__":
    main()
