"""``torch.topk`` whose ``k`` is a symbolic expression of an exported dynamic batch (an
expert-choice router's capacity, ``b * t * f // e``: each expert's top tokens) imports as the
first ``k`` of a sort; ``relax.topk`` takes ``k`` only as an integer and the import failed.
One build, run at two batch sizes against eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


class _ExpertChoice(torch.nn.Module):
    def forward(self, aff):                                        # (b, t, e)
        b, t, e = aff.shape
        vals, idx = aff.reshape(b * t, e).t().topk(b * t * 2 // e, -1)   # (e, b * t / 2)
        return vals, idx


def test_topk_of_a_batch_dependent_k():
    model = _ExpertChoice()
    batch = torch.export.Dim("batch", min=1, max=64)
    ex = torch.export.export(model, (torch.rand(2, 8, 4),), dynamic_shapes=({0: batch},))
    mod = from_exported_program(ex)
    assert "R.topk" not in mod["main"].script()                   # k is no integer here
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (2, 3):
        x = torch.from_numpy(np.random.default_rng(b).random((b, 8, 4)).astype("float32"))
        want = model(x)
        got = vm["main"](tvm.nd.array(x.numpy()))
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
