"""torch.linalg's factorizations and solves (``frontend_common.torch_linalg`` on the loop
kernels ``relay.op.linalg``: Cholesky and LU with partial pivoting) through from_pytorch and the
Relay torch.export importer: a Gaussian-process head (cholesky, cholesky_solve, logdet), a
flow's log-determinant (slogdet, det) and a Kalman gain (solve, inv) on random well-conditioned
batches, a system that needs pivoting and a singular one against eager (measured: 1.4e-7
relative on 2x3 batches of 5x5 float32), orders past the old unrolled limit of 16, and the
``info`` of the ``_ex`` forms (and ATen's four-output ``_linalg_solve_ex``) on failing input."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, build_and_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend.pytorch import from_exported_program  # noqa: E402


def _both_importers(fn, *xs):
    """Eager's outputs and those of the TorchScript and torch.export imports, in order."""
    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(*xs)
        traced = torch.jit.trace(model, xs)
    ref = [r.numpy() for r in (ref if isinstance(ref, tuple) else (ref,))]
    names = [f"x{i}" for i in range(len(xs))]
    infos = [(n, (tuple(x.shape), str(x.dtype).replace("torch.", ""))) for n, x in
             zip(names, xs, strict=True)]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    scripted = build_and_run(mod, params, {n: x.numpy() for n, x in zip(names, xs, strict=True)})
    emod, eparams = from_exported_program(torch.export.export(model, xs))
    enames = [p.name_hint for p in emod["main"].params][:len(xs)]
    exported = build_and_run(emod, eparams,
                             {n: x.numpy() for n, x in zip(enames, xs, strict=True)})
    return ref, [scripted, exported]


def _gaussian_process_and_flow(a, b, s):
    factor = torch.linalg.cholesky(s)
    sign, log_abs = torch.linalg.slogdet(a)
    return (factor, torch.linalg.cholesky(s, upper=True), torch.cholesky_solve(b, factor),
            torch.cholesky_solve(b, factor.mT, upper=True), torch.logdet(s),
            torch.linalg.solve(a, b), torch.linalg.inv(a), sign, log_abs, torch.linalg.det(a))


def test_factorizations_match_eager_on_batches(matrices):
    a, b = matrices.well_conditioned(2, 3, 5, 5), torch.randn(2, 3, 5, 2)
    s = matrices.positive_definite(2, 3, 5, 5)
    ref, outs = _both_importers(_gaussian_process_and_flow, a, b, s)
    for out in outs:
        assert len(out) == len(ref)
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape and o.dtype == r.dtype
            np.testing.assert_allclose(o, r, rtol=2e-5, atol=2e-6 * np.abs(r).max())


def _pivoted(a, b, singular):
    return (torch.linalg.solve(a, b), torch.linalg.solve(a, b[..., 0]),
            torch.linalg.solve(a, b.mT, left=False), torch.linalg.det(a),
            *torch.linalg.slogdet(singular), torch.linalg.det(singular))


def test_pivoting_vectors_left_false_and_singular(matrices):
    """A zero (then a tiny) leading pivot that elimination without row exchanges would divide
    by, a right-hand vector, ``X A = B`` broadcast over A's batch, and a rank-deficient matrix
    (a zero column: det 0, slogdet ``(0, -inf)``, as LAPACK's zero-pivot skip gives)."""
    a = matrices.well_conditioned(2, 4, 4)
    a[0, 0, 0], a[1, 0, 0] = 0.0, 1e-7
    a[0] = a[0][[0, 3, 1, 2]]
    b = torch.randn(2, 4, 3)
    singular = torch.randn(4, 4)
    singular[:, 2] = 0.0  # a zero pivot column: exactly singular in any rounding
    ref, outs = _both_importers(_pivoted, a, b, singular)
    for out in outs:
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape
            scale = max(np.abs(r[np.isfinite(r)]).max(initial=1.0), 1.0)
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5 * scale)


def test_orders_past_sixteen_match_eager(matrices):
    """The kernels loop over the order (the unrolled compositions stopped at 16): 40 and 33."""
    a, s = matrices.well_conditioned(2, 40, 40), matrices.positive_definite(33, 33)
    b = torch.randn(2, 40, 3)
    ref, outs = _both_importers(lambda a, b, s: (
        torch.linalg.solve(a, b), torch.linalg.inv(a), *torch.linalg.slogdet(a),
        torch.linalg.cholesky(s), torch.cholesky_solve(b[0, :33], torch.linalg.cholesky(s))),
        a, b, s)
    for out in outs:
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape and o.dtype == r.dtype
            np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5 * np.abs(r).max())


def _failing(a, b, s):
    x, lu, pivots, info = torch.ops.aten._linalg_solve_ex(a, b)
    return (torch.linalg.cholesky_ex(s)[1], torch.linalg.solve_ex(a, b)[1],
            torch.linalg.inv_ex(a)[1], x[1], lu, pivots, info)


def test_info_of_the_ex_forms_on_failing_input(matrices):
    """LAPACK's ``info`` where torch's non-``_ex`` forms raise: Cholesky's first leading minor
    that is not positive definite (order 1 and 3 here, 0 for a PD matrix), LU's first zero pivot
    (a singular matrix with a zero third column, 0 for a regular one); the solve of the regular
    matrix and the LU / pivots of ATen's ``_linalg_solve_ex`` as eager's."""
    s = matrices.positive_definite(3, 4, 4)
    s[0, 0, 0] = -1.0
    s[1, 2, 2] = -50.0
    a = matrices.well_conditioned(2, 5, 5)
    a[0, :, 2] = 0.0
    b = torch.randn(2, 5, 2)
    ref, outs = _both_importers(_failing, a, b, s)
    assert ref[0].tolist() == [1, 3, 0] and ref[1].tolist() == [3, 0]
    for out in outs:
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape and o.dtype == r.dtype
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5 * np.abs(r).max())


def _triangular(low, up, b, br):
    return (torch.linalg.solve_triangular(low, b, upper=False),
            torch.linalg.solve_triangular(up, b, upper=True),
            torch.linalg.solve_triangular(low[0], br, upper=False, left=False),
            torch.linalg.solve_triangular(up, b, upper=True, unitriangular=True),
            *torch.triangular_solve(b, up, upper=True, transpose=True),
            torch.triangular_solve(b, low, upper=False, unitriangular=True)[0])


def test_solve_triangular_sides_unit_and_legacy_transpose(matrices):
    """``linalg.solve_triangular`` (lower / upper, ``left=False`` with A broadcast over B's
    batch, ``unitriangular``) and the legacy ``triangular_solve`` (its ``transpose`` and its
    second output, A) read only A's triangle: the other one holds noise here."""
    full = matrices.well_conditioned(2, 6, 6) + 3 * torch.eye(6)
    low, up = full.clone(), full.clone()  # both full: only the named triangle may be read
    b, br = torch.randn(2, 6, 3), torch.randn(2, 4, 6)
    ref, outs = _both_importers(_triangular, low, up, b, br)
    for out in outs:
        assert len(out) == len(ref)
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape and o.dtype == r.dtype
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5 * np.abs(r).max())


def test_solve_triangular_column_and_shape_errors():
    model = Fn(lambda a, b: torch.linalg.solve_triangular(a, b.unsqueeze(-1), upper=False)
               .squeeze(-1)).eval()
    a, b = torch.eye(3) * 2, torch.randn(3)
    traced = torch.jit.trace(model, (a, b))
    mod, params = relay.frontend.from_pytorch(traced, [("a", ((3, 3), "float32")),
                                                       ("b", ((3,), "float32"))])
    np.testing.assert_allclose(build_and_run(mod, params, {"a": a.numpy(), "b": b.numpy()})[0],
                               b.numpy() / 2, rtol=1e-6)
    from minitvm.frontend_common import torch_linalg

    with pytest.raises(torch_linalg.LinalgError, match="B must be a \\(batch of\\) matrices"):
        torch_linalg.solve_triangular(relay.op, None, None, None, (3, 3), (3,), upper=False)
    with pytest.raises(torch_linalg.LinalgError, match="do not fit \\(right side\\)"):
        torch_linalg.solve_triangular(relay.op, None, None, None, (3, 3), (2, 4), False, False)


def test_matrix_exp_scaling_and_squaring():
    """``linalg.matrix_exp`` on a batch: a small-norm matrix (no squaring), a large
    skew-symmetric one (1-norm ~60: six squarings, an orthogonal result) and zeros (the
    identity), as run-time inputs so that no constant folding hides the kernels."""
    g = torch.Generator().manual_seed(5)
    w = torch.randn(7, 7, generator=g)
    a = torch.stack([0.1 * torch.randn(7, 7, generator=g), 4 * (w - w.T),
                     torch.zeros(7, 7)])
    ref, outs = _both_importers(lambda a: torch.linalg.matrix_exp(a), a)
    for out in outs:
        assert out[0].shape == ref[0].shape and out[0].dtype == ref[0].dtype
        np.testing.assert_allclose(out[0], ref[0], rtol=2e-5, atol=2e-5 * np.abs(ref[0]).max())
