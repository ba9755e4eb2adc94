"""The twenty-eighth round of new-user architectures (benchmarks/new_user_models_twentyeighth.py)
through relay.frontend.from_pytorch and from_exported_program, built small from the benchmark's
own constructors at opt_level 3, every kernel native, checked against eager PyTorch: AFM's
pairs of fields by ``torch.triu_indices`` and a deep ensemble's expected improvement by
``torch.special.ndtr``, the two ops the round found missing."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import NewUserRound  # noqa: E402
from frontend_models import check_both_importers as _both  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

_round = NewUserRound("twentyeighth")
_model, _rand, _ints = _round.model, _round.rand, _round.ints


def test_afm_nfm_pairs_by_triu_indices():
    m = _model("afm_nfm_ctr", fields=5, card=7, dim=4, att=4)
    _both(m, _ints(7, 6, 5), _rand(6, 5) + 0.5, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lower", [False, True], ids=["triu", "tril"])
def test_tri_indices_offsets_and_dtype(lower):
    """Every offset sign, a wide and a tall matrix, an int32 dtype: equal in dtype and value."""
    pick = torch.tril_indices if lower else torch.triu_indices

    class Pairs(torch.nn.Module):
        def forward(self, x):                                       # (rows, cols)
            r, c = x.shape
            a = pick(r, c, 1)
            b = pick(r, c, -1, dtype=torch.int32)
            return torch.cat([x[a[0], a[1]], x[b[0].long(), b[1].long()] * 2])

    _both(Pairs(), _randn(3, 5))
    _both(Pairs(), _randn(6, 2))


def test_ensemble_expected_improvement_ndtr():
    m = _model("ensemble_ei", members=3, fin=4, hidden=8)
    _both(m, _rand(10, 4), torch.tensor([0.3]), rtol=1e-5, atol=1e-6)
