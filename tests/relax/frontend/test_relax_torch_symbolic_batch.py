"""relax.frontend.torch.from_exported_program under a dynamic batch ``Dim`` on ops that needed
static sizes (found by the ep-relax-dyn sweep of benchmarks/sweep_import_paths.py): a conv whose
group count is the batch, indexing several axes one of which is the batch, max pooling's indices,
cummax / cummin, 3-D grid sampling with a batch-sized grid; one build run at several batch sizes
against PyTorch eager."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")
nn = torch.nn
F = torch.nn.functional

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


def build_dynamic(model, example):
    """One Relax build of ``model`` exported with axis 0 of ``example`` a batch ``Dim``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (example,),
                                 dynamic_shapes=({0: torch.export.Dim("batch", max=64)},))
    mod = from_exported_program(ep)
    return mod, relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def check_batches(model, vm, make, batches=(1, 3), rtol=1e-5, atol=1e-6, outputs=1):
    for b in batches:
        x = make(b)
        with torch.no_grad():
            ref = model(x)
        ref = ref if isinstance(ref, tuple) else (ref,)
        got = vm["main"](x.numpy())
        for i in range(outputs):
            np.testing.assert_allclose(got[i].numpy(), ref[i].numpy(), rtol=rtol, atol=atol,
                                       err_msg=f"batch {b}, output {i}")


class PerSampleConv(nn.Module):
    """Per-sample kernels applied as one conv over the batch folded into channels, with
    ``groups`` the batch (CondConv, hypernetworks)."""

    def __init__(self, c=3, o=4, k=3, stride=1, pad=1, dil=1):
        super().__init__()
        self.c, self.o, self.k, self.stride, self.pad, self.dil = c, o, k, stride, pad, dil
        self.gen = nn.Linear(c, o * c * k * k)
        self.bias = nn.Linear(c, o)

    def forward(self, x):
        b, c, h, w = x.shape
        pooled = x.mean((2, 3))
        wk = self.gen(pooled).reshape(b * self.o, c, self.k, self.k)
        y = F.conv2d(x.reshape(1, b * c, h, w), wk, self.bias(pooled).reshape(b * self.o),
                     stride=self.stride, padding=self.pad, dilation=self.dil, groups=b)
        return y.reshape(b, self.o, y.shape[2], y.shape[3])


@pytest.mark.parametrize("k, stride, pad, dil", [(3, 1, 1, 1), (2, 2, 0, 2)])
def test_conv_grouped_by_the_batch(k, stride, pad, dil):
    """The group count is the symbolic batch (it failed: 'int() argument ... not Var'): one
    matmul per group of its windows, checked at batches 1, 3 and 5 against eager."""
    torch.manual_seed(0)
    model = PerSampleConv(k=k, stride=stride, pad=pad, dil=dil).eval()
    mod, vm = build_dynamic(model, torch.randn(2, 3, 9, 8))
    text = mod.script()
    assert "R.nn.conv2d" not in text and "R.matmul" in text and "R.match_cast" in text
    check_batches(model, vm, lambda b: torch.randn(b, 3, 9, 8), (1, 3, 5), rtol=1e-4,
                  atol=1e-5)


class PerSampleConv1d(nn.Module):
    def forward(self, x):
        b, c, n = x.shape
        w = torch.flip(x[:, :, :3], [2]).repeat(1, 2, 1).reshape(b * 2, c, 3) * 0.5
        return F.conv1d(x.reshape(1, b * c, n), w, padding=1, groups=b)


def test_conv1d_grouped_by_the_batch():
    """The same for a 1-D conv whose kernels come from the input itself."""
    model = PerSampleConv1d()
    _, vm = build_dynamic(model, torch.randn(2, 4, 10))
    check_batches(model, vm, lambda b: torch.randn(b, 4, 10), (1, 3), rtol=1e-4, atol=1e-5)

