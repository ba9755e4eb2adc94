"""relax.frontend.torch.from_exported_program on a convolution whose group count is the dynamic
batch (SiamFC's correlation: the exemplar's features are the weights of a conv over the search
features with the batch folded into channels, ``groups=b``): one build runs at several batch
sizes against eager (it failed on ``int()`` of a Var); the static export still runs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


class _Correlate(torch.nn.Module):
    def forward(self, z, x):
        b, c, h, w = x.shape
        out = torch.nn.functional.conv2d(x.reshape(1, b * c, h, w), z, groups=b)
        return out.view(b, 1, out.shape[-2], out.shape[-1])


def _inputs(b):
    g = torch.Generator().manual_seed(0)
    return torch.randn(b, 4, 3, 3, generator=g), torch.randn(b, 4, 8, 8, generator=g)


def _first(got):
    while not hasattr(got, "numpy"):
        got = got[0]
    return got.numpy()


def test_a_symbolic_group_count_runs_at_every_batch():
    batch = torch.export.Dim("batch", min=2, max=16)
    ep = torch.export.export(_Correlate(), _inputs(2),
                             dynamic_shapes=({0: batch}, {0: batch}))
    vm = relax.VirtualMachine(relax.build(from_exported_program(ep), target="llvm"), tvm.cpu())
    for b in (2, 3, 5):
        z, x = _inputs(b)
        got = _first(vm["main"](tvm.nd.array(z.numpy()), tvm.nd.array(x.numpy())))
        np.testing.assert_allclose(got, _Correlate()(z, x).numpy(), rtol=1e-5, atol=1e-5)


def test_a_static_group_count_runs():
    z, x = _inputs(3)
    mod = from_exported_program(torch.export.export(_Correlate(), (z, x)))
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    got = _first(vm["main"](tvm.nd.array(z.numpy()), tvm.nd.array(x.numpy())))
    np.testing.assert_allclose(got, _Correlate()(z, x).numpy(), rtol=1e-5, atol=1e-5)
