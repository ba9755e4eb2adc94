"""The Relay PyTorch importers on ``diag_embed`` and ``diag``, which the twenty-third round of
new-user models found missing (a backprop Kalman filter builds each step's measurement noise
``R = diag_embed(r)`` from a CNN's per-frame variances): every offset sign, axes placed
elsewhere than the last two, and ``diag`` both ways; checked against eager with every kernel
native, the IR a constant-mask ``where`` (no gather), and torch's refusals."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.common import ImportError_  # noqa: E402


@pytest.mark.parametrize("off,d1,d2", [(0, -2, -1), (1, -2, -1), (-2, -2, -1), (0, 0, 2),
                                       (1, 2, 0), (-1, 1, 3), (0, -1, -2)],
                         ids=["main", "above", "below", "outer-axes", "swapped", "middle",
                              "transposed"])
def test_diag_embed(off, d1, d2):
    _check(Fn(lambda x: torch.diag_embed(x, off, d1, d2)), _randn(2, 3, 4))


def test_diag_embed_kalman_noise_is_a_masked_where():
    """R = diag_embed(softplus(r)) added to H P H^T, as in the filter's innovation covariance."""
    def fn(r, p):
        return p @ p.transpose(1, 2) + torch.diag_embed(torch.nn.functional.softplus(r))

    mod = _check(Fn(fn), _randn(3, 4), _randn(3, 4, 4, seed=1))
    text = mod.astext()
    assert "where(" in text and "take(" not in text


def test_diag_embed_keeps_inf_off_the_diagonal():
    x = torch.tensor([[1.0, float("inf"), -2.0]])
    traced = torch.jit.trace(Fn(lambda v: torch.diag_embed(v)), (x,))
    mod, params = relay.frontend.from_pytorch(traced, [("i0", ((1, 3), "float32"))])
    from frontend_models import build_run_native

    out = build_run_native(mod, params, ["i0"], [x])
    torch.testing.assert_close(torch.from_numpy(out), torch.diag_embed(x))


@pytest.mark.parametrize("off", [0, 2, -1])
def test_diag_vector_and_matrix(off):
    _check(Fn(lambda v, m: torch.diag(v, off).sum(0) + torch.diag(m, off).sum()),
           _randn(4), _randn(4, 5, seed=1))


def test_diag_of_a_3d_tensor_is_refused():
    """(torch refuses it while tracing, so the converter is called directly.)"""
    from minitvm.relay.frontend.pytorch import aten_shape

    class Ctx:
        op_name = "diag"

        @staticmethod
        def shape(_):
            return (2, 3, 4)

        @staticmethod
        def fail(detail):
            return ImportError_(detail)

    with pytest.raises(ImportError_, match="1-D or 2-D tensor, got 3-D"):
        aten_shape._diag(Ctx, [relay.var("x", shape=(2, 3, 4)), 0])
