"""Relax's torch.unique_consecutive writes its runs straight into int64 buffers it returns
(``schedule.unique_runs.unique_runs_outputs_prim_func``): one call_tir with four outputs, the
inverse returned as the kernel wrote it, leading slices of first indices and counts, no cast;
exact against torch (NaN runs, -0.0, one run, all distinct, 100,000 elements, rank 2)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


class _Runs(torch.nn.Module):
    def forward(self, x):
        return torch.unique_consecutive(x, return_inverse=True, return_counts=True)


def _import(x):
    return from_exported_program(torch.export.export(_Runs(), (x,)))


def _check(mod, inputs):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for x in inputs:
        got = [g.numpy() for g in vm["main"](tvm.nd.array(x.numpy()))]
        want = [w.numpy() for w in _Runs()(x)]
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def _one_kernel_writes_the_returned_buffers(mod):
    text = mod.script()
    assert "R.astype" not in text  # nothing cast after the kernel
    calls = [line for line in text.splitlines() if "R.call_tir(" in line]
    assert len(calls) == 1 and calls[0].count("R.Tensor(") == 4, calls
    kernel = next(f for f in mod.functions.values() if isinstance(f, tvm.tir.PrimFunc))
    assert [p.name for p in kernel.params][1:] == ["first", "inverse", "counts", "count"]


def test_int64_runs_match_torch_up_to_100k():
    rng = np.random.default_rng(0)
    n = 100000
    sorted_runs = torch.from_numpy(np.sort(rng.integers(0, 5000, n)))
    mod = _import(sorted_runs)
    _check(mod, [sorted_runs, torch.zeros(n, dtype=torch.int64),  # one run
                 torch.arange(n, dtype=torch.int64),  # every element its own run
                 torch.from_numpy(rng.integers(0, 2, n))])


def test_float_nan_and_signed_zero_runs_of_a_matrix_from_one_kernel():
    x = torch.tensor([[0.0, -0.0, float("nan"), float("nan")],
                      [1.5, 1.5, -float("inf"), 0.0]], dtype=torch.float32)
    rng = np.random.default_rng(1)
    other = torch.from_numpy(rng.choice([0.0, 1.0, np.nan], (2, 4)).astype("float32"))
    mod = _import(x)
    _one_kernel_writes_the_returned_buffers(mod)
    _check(mod, [x, other])
