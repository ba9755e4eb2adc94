"""Latency of torch.linalg's factorizations imported with torch.export into Relax (the loop
kernels of ``schedule.linalg``: Cholesky, LU with partial pivoting, triangular solves) against
PyTorch eager (LAPACK) at orders 8 to 256; interleaved rounds (``interleave.settled_rounds``),
medians, the ratio ours / torch (below 1: faster).
``TVM_NUM_THREADS=1 python benchmarks/bench_torch_linalg.py [--rounds R]``"""

from __future__ import annotations

import argparse
import statistics
import warnings

import numpy as np
import torch
from interleave import settled_rounds

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _spd(batch: int, n: int, rng) -> np.ndarray:
    a = rng.standard_normal((batch, n, n)).astype("float32")
    return a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype="float32")


OPS = {
    "cholesky": (torch.linalg.cholesky, 1),
    "solve (4 rhs)": (lambda a, b: torch.linalg.solve(a, b), 2),
    "inv": (torch.linalg.inv, 1),
    "slogdet": (torch.linalg.slogdet, 1),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="1x8,64x8,16x32,4x64,1x128,1x256")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"{'op':<14} {'batch x n':>10} {'minitvm us':>11} {'torch us':>10} {'ratio':>7}")
    for size in args.sizes.split(","):
        batch, n = (int(v) for v in size.split("x"))
        a = torch.from_numpy(_spd(batch, n, rng))
        b = torch.from_numpy(rng.standard_normal((batch, n, 4)).astype("float32"))
        for name, (fn, arity) in OPS.items():
            xs = (a, b)[:arity]
            model = Fn(fn).eval()
            ex = relax.build(from_exported_program(torch.export.export(model, xs)), "llvm")
            vm = relax.VirtualMachine(ex, tvm.cpu())
            ins = [tvm.nd.array(x.numpy()) for x in xs]
            out, ref = vm["main"](*ins), model(*xs)
            out = out[0] if not hasattr(out, "numpy") else out
            ref = ref[0] if isinstance(ref, tuple) else ref
            np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-3, atol=1e-3)
            with torch.no_grad():
                times = settled_rounds({"ours": lambda f=vm["main"], i=ins: f(*i),
                                        "torch": lambda m=model, x=xs: m(*x)}, args.rounds, 20)
            ours, theirs = (statistics.median(times[k]) * 1e6 for k in ("ours", "torch"))
            print(f"{name:<14} {size:>10} {ours:>11.1f} {theirs:>10.1f} {ours / theirs:>7.2f}")


if __name__ == "__main__":
    main()
