"""relax.frontend.torch.from_exported_program on ``torch.eye`` of orders past 255: torch's
decomposition builds the identity from two ``arange``s in uint16 (uint8 below 256), which the
importer must take as an integer dtype like any other; built and run on the Relax VM against
PyTorch eager (Graph U-Net's ``adj + eye(n)`` at n = 400)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402

from .exported_program_run import Fn  # noqa: E402
from .exported_program_run import run_exported as _run  # noqa: E402


@pytest.mark.parametrize("n", [5, 300])
def test_eye_plus_matrix_uint8_and_uint16_aranges(n):
    text = _run(lambda a: a + torch.eye(a.shape[0]), torch.rand(n, n))
    assert "eye" not in text                                      # decomposed, folded away


def test_unsupported_dtype_error_names_it():
    ep = torch.export.export(Fn(lambda x: x + torch.ones(3, dtype=torch.complex32).real.float()),
                             (torch.zeros(3),))
    with pytest.raises(Exception, match="complex32|ComplexHalf|chalf"):
        from_exported_program(ep)
