"""relax.frontend.torch.from_exported_program on what probing ops near round 17's objectives
found missing on the Relax path: ``copysign`` (a -0.0 sign, infinities, integer operands,
a number) and ``empty_permuted`` (which torch.export's ``zeros_like`` / ``ones_like`` become,
as in the hinge and cosine embedding losses) and ``tril_indices`` / ``triu_indices`` (offsets,
an int32 dtype); built and run on the Relax VM against eager."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402

from .exported_program_run import run_exported as _run  # noqa: E402

_SPECIAL = torch.tensor([0.0, -0.0, 1.5, -2.0, float("inf"), float("-inf"), 3.0, -1e-30])


def test_copysign_signed_zeros_and_infinities():
    a, b = _SPECIAL.repeat_interleave(8), _SPECIAL.repeat(8)
    _run(torch.copysign, a, b)
    _run(lambda x: torch.copysign(x, -0.0), _SPECIAL)
    _run(torch.copysign, torch.arange(-3, 4), -torch.arange(-3, 4))


def test_embedding_losses_through_empty_permuted():
    y = torch.tensor([1.0, -1.0, 1.0, -1.0])

    def fn(a, b):
        return torch.cat([F.hinge_embedding_loss(a, torch.sign(b), reduction="none").flatten(),
                          F.cosine_embedding_loss(a, b, y, margin=0.2, reduction="none")])

    gen = torch.Generator().manual_seed(0)
    _run(fn, torch.randn(4, 6, generator=gen), torch.randn(4, 6, generator=gen))


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_tril_triu_indices_gather(offset):
    """A pair-feature model's triangle of a [5, 7] matrix picked by tril / triu indices."""
    def fn(x):
        lo = torch.tril_indices(5, 7, offset)
        hi = torch.triu_indices(5, 7, offset, dtype=torch.int32)
        return torch.cat([x[lo[0], lo[1]], x[hi[0], hi[1]], hi[1].float()])

    _run(fn, torch.randn(5, 7, generator=torch.Generator().manual_seed(1)))
