"""torch.linalg's factorizations and solves through the Relax torch.export importer
(``frontend_common.torch_linalg``, shared with Relay, on the loop kernels of ``topi.linalg``:
Cholesky and LU with partial pivoting), decomposed and whole: each op against eager on random
well-conditioned batches, a system needing row exchanges, an exactly singular matrix, an order
past the old unrolled limit of 16, the ``info`` of the ``_ex`` forms on failing input, and the
refusal of a symbolic order."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import TorchImportError, from_exported_program  # noqa: E402

from .exported_program_run import Fn  # noqa: E402


def _check(fn, *xs, decompose: bool, rtol: float = 2e-5):
    """Every output of ``fn`` built native by Relax equals eager's (dtype, shape, value)."""
    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(*xs)
    ref = [r.numpy() for r in (ref if isinstance(ref, tuple) else (ref,))]
    mod = from_exported_program(torch.export.export(model, xs), run_ep_decomposition=decompose)
    ex = relax.build(mod, "llvm")
    assert ex.numpy_calls() == {}
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.nd.array(x.numpy()) for x in xs])
    out = [o.numpy() for o in out]
    assert len(out) == len(ref)
    for o, r in zip(out, ref, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        scale = max(np.abs(r[np.isfinite(r)]).max(initial=1.0), 1.0)
        np.testing.assert_allclose(o, r, rtol=rtol, atol=rtol * 0.1 * scale)


def _gaussian_process_and_flow(a, b, s):
    factor = torch.linalg.cholesky(s)
    sign, log_abs = torch.linalg.slogdet(a)
    return (factor, torch.linalg.cholesky(s, upper=True), torch.cholesky_solve(b, factor),
            torch.cholesky_solve(b, factor.mT, upper=True), torch.logdet(s),
            torch.linalg.solve(a, b), torch.linalg.inv(a), sign, log_abs, torch.linalg.det(a))


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "whole"])
def test_factorizations_match_eager_on_batches(matrices, decompose):
    a, b = matrices.well_conditioned(3, 2, 4, 4), torch.randn(3, 2, 4, 3)
    _check(_gaussian_process_and_flow, a, b, matrices.positive_definite(3, 2, 4, 4),
           decompose=decompose)


def _pivoted(a, b, singular):
    return (torch.linalg.solve(a, b), torch.linalg.solve(a, b[..., 0]),
            torch.linalg.solve(a, b.mT, left=False), torch.linalg.det(a),
            *torch.linalg.slogdet(singular), torch.linalg.det(singular))


def test_pivoting_vectors_left_false_and_singular(matrices):
    """Zero and tiny leading pivots (elimination without row exchanges divides by them), a
    vector right-hand side, ``X A = B``, and a zero column (det 0, slogdet ``(0, -inf)``)."""
    a = matrices.well_conditioned(2, 5, 5)
    a[0, 0, 0], a[1, 0, 0] = 0.0, 1e-7
    a[1] = a[1][[4, 0, 1, 3, 2]]
    singular = torch.randn(2, 5, 5)
    singular[:, :, 1] = 0.0
    _check(_pivoted, a, torch.randn(2, 5, 2), singular, decompose=True, rtol=1e-5)


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "whole"])
def test_an_order_past_sixteen_matches_eager(matrices, decompose):
    a, b = matrices.well_conditioned(2, 36, 36), torch.randn(2, 36, 2)
    _check(lambda a, b, s: (torch.linalg.solve(a, b), torch.linalg.inv(a),
                            *torch.linalg.slogdet(a), torch.linalg.cholesky(s)),
           a, b, matrices.positive_definite(36, 36), decompose=decompose, rtol=1e-4)


def _failing(a, b, s):
    x, lu, pivots, info = torch.ops.aten._linalg_solve_ex(a, b)
    return (torch.linalg.cholesky_ex(s)[1], torch.linalg.solve_ex(a, b)[1],
            torch.linalg.inv_ex(a)[1], x[1], lu, pivots, info)


def test_info_of_the_ex_forms_on_failing_input(matrices):
    """LAPACK's ``info`` where the non-``_ex`` forms raise: Cholesky's first leading minor that
    is not positive definite (orders 1 and 3; 0 when PD), LU's first zero pivot (a zero third
    column; 0 when regular), and ATen's ``_linalg_solve_ex`` (the regular system's solution,
    A's LU and pivots) as eager's."""
    s = matrices.positive_definite(3, 4, 4)
    s[0, 0, 0] = -1.0
    s[1, 2, 2] = -50.0
    a = matrices.well_conditioned(2, 5, 5)
    a[0, :, 2] = 0.0
    for decompose in (True, False):  # (decomposed: linalg_solve_ex becomes _linalg_solve_ex)
        _check(_failing, a, torch.randn(2, 5, 2), s, decompose=decompose, rtol=1e-5)


class _Inverse(torch.nn.Module):
    def forward(self, a):
        return torch.linalg.inv(a)


def test_symbolic_orders_are_refused(matrices):
    order = torch.export.Dim("n", min=2, max=8)
    symbolic = torch.export.export(_Inverse(), (matrices.well_conditioned(4, 4),),
                                   dynamic_shapes=({0: order, 1: order},))
    with pytest.raises(TorchImportError, match="symbolic"):
        from_exported_program(symbolic)


def _triangular(low, up, b, br):
    return (torch.linalg.solve_triangular(low, b, upper=False),
            torch.linalg.solve_triangular(low[0], br, upper=False, left=False),
            torch.linalg.solve_triangular(up, b, upper=True, unitriangular=True),
            torch.triangular_solve(b, up, upper=True, transpose=True)[0])


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "whole"])
def test_solve_triangular_reads_only_its_triangle(matrices, decompose):
    """``linalg.solve_triangular`` (both sides, unit diagonal) and the legacy
    ``triangular_solve`` with ``transpose``, on full matrices whose other triangle is noise."""
    full = matrices.well_conditioned(2, 5, 5) + 3 * torch.eye(5)
    _check(_triangular, full, full.clone(), torch.randn(2, 5, 3), torch.randn(2, 4, 5),
           decompose=decompose)


@pytest.mark.parametrize("decompose", [True, False], ids=["decomposed", "whole"])
def test_matrix_exp_scaling_and_squaring(decompose):
    """``linalg.matrix_exp``: a small-norm matrix, a large skew-symmetric one (squarings) and
    zeros, as eager."""
    g = torch.Generator().manual_seed(5)
    w = torch.randn(6, 6, generator=g)
    a = torch.stack([0.1 * torch.randn(6, 6, generator=g), 4 * (w - w.T), torch.zeros(6, 6)])
    _check(lambda a: torch.linalg.matrix_exp(a), a, decompose=decompose)
