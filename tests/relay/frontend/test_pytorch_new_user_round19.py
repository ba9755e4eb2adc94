"""The nineteenth round of new-user architectures (benchmarks/new_user_models_nineteenth.py)
through relay.frontend.from_pytorch, built small from the benchmark's own constructors, each
built at opt_level 3 and checked against eager PyTorch with every kernel native; plus the
importer gaps the round found, each through the importers it touched."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_traced_native as _run  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from new_user_models_nineteenth import nineteenth_models  # noqa: E402


def _model(name, **small):
    torch.manual_seed(1)
    return nineteenth_models()[name][0](**small).eval()


def test_gru_state_into_gru_cell_left_unfrozen():
    """A GRU's final state fed to a GRUCell (a seq2seq decoder's first step): torch.jit.freeze
    leaves the GRU's weights as prim::GetAttr off ``self`` (OpNotImplemented before); the
    importer reads them from the module."""

    class EncoderThenCell(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(6, 8, batch_first=True)
            self.cell = torch.nn.GRUCell(8, 8)

        def forward(self, x):
            y, h = self.gru(x)
            return self.cell(y[:, -1], h[0])

    torch.manual_seed(3)
    m = EncoderThenCell().eval()
    x = _randn(2, 5, 6)
    traced = torch.jit.trace(m, (x,))
    frozen = torch.jit.freeze(traced)
    graph = frozen.graph.copy()
    torch._C._jit_pass_inline(graph)
    assert any(n.kind() == "prim::GetAttr" for n in graph.nodes())  # the case this covers
    _run(m, x, rtol=1e-5, atol=1e-6)
