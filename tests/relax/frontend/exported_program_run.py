"""Shared by the Relax torch.export importer tests: a function wrapped as a module, exported
with torch.export, imported with ``from_exported_program``, built and run on the Relax VM and
compared with PyTorch eager, dtype and shape included. Needs torch (the importing test skips
first)."""

from __future__ import annotations

import numpy as np
import torch

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program


class Fn(torch.nn.Module):
    """``fn`` as a module."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def run_exported(fn, *inputs) -> str:
    """Check ``fn(*inputs)`` through torch.export -> Relax -> the VM against eager (its first
    output); returns the imported module's TVMScript, for the tests on its form."""
    return run_exported_module(Fn(fn), *inputs)


def run_exported_module(model, *inputs) -> str:
    """``run_exported`` of a module (in eval mode)."""
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
    mod = from_exported_program(torch.export.export(model, inputs))
    text = mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(t.numpy()) for t in inputs])
    while not hasattr(out, "numpy"):
        out = out[0]
    out = out.numpy()
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    return text
