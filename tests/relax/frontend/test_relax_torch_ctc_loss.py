"""``torch.nn.functional.ctc_loss`` through the Relax torch.export importer (the CTC kernel of
``topi.ctc`` by call_tir, ``frontend_common.torch_ctc`` shared with Relay), whole
(``ctc_loss.IntList``) and decomposed (``_ctc_loss`` and the reduction), against eager.
torch.export takes ``_ctc_loss``'s output shape as data-dependent and refuses it; a shape
function registered for the test's duration (and removed after) lets it trace lengths given
as Python ints with reductions ``none`` and ``sum`` (``mean`` builds a tensor of the lengths,
which torch's fake tensors cannot; the Relay importer's tests cover it)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402

F = torch.nn.functional
_INPUT_LENGTHS, _TARGET_LENGTHS = (12, 10, 7), (4, 2, 3)


@pytest.fixture
def ctc_exportable():
    """A fake (shape) kernel of ``aten::_ctc_loss`` while the test runs."""
    lib = torch.library.Library("aten", "IMPL")

    def shapes(log_probs, targets, input_lengths, target_lengths, blank=0,
               zero_infinity=False):
        width = 2 * max(target_lengths) + 1
        batch = log_probs.shape[1]
        return (log_probs.new_empty((batch,)),
                log_probs.new_empty((batch, log_probs.shape[0], width)))

    torch.library.register_fake("aten::_ctc_loss", shapes, lib=lib)
    yield
    lib._destroy()


class _Loss(torch.nn.Module):
    def __init__(self, reduction: str, blank: int):
        super().__init__()
        self.reduction, self.blank = reduction, blank

    def forward(self, log_probs, targets):
        return F.ctc_loss(log_probs, targets, _INPUT_LENGTHS, _TARGET_LENGTHS, blank=self.blank,
                          reduction=self.reduction)


@pytest.mark.parametrize("reduction", ["none", "sum"])
@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "whole"])
def test_ctc_loss_matches_eager(ctc_exportable, reduction, decompose):
    gen = torch.Generator().manual_seed(0)
    log_probs = torch.randn(12, 3, 6, generator=gen).log_softmax(2)
    targets = torch.randint(0, 5, (3, 4), generator=gen)
    targets[0, 1] = targets[0, 0]
    model = _Loss(reduction, blank=5).eval()
    with torch.no_grad():
        ref = model(log_probs, targets).numpy()
    ep = torch.export.export(model, (log_probs, targets))
    ex = relax.build(from_exported_program(ep, run_ep_decomposition=decompose), "llvm")
    assert ex.numpy_calls() == {}
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(log_probs.numpy()),
                                                      tvm.nd.array(targets.numpy()))
    out = out if hasattr(out, "numpy") else out[0]
    assert out.numpy().shape == ref.shape and out.numpy().dtype == ref.dtype
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
