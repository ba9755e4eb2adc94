"""The Relax torch importer's helpers on symbolic sizes, built with a BlockBuilder (no torch
needed): the native grid-sample call with a grid whose batch and output dims are symbolic
(``spatial.grid_sample_kernel``) and cummax / cummin over a static axis of a tensor with a
symbolic batch (``frontend_common.torch_order.cumulative_extreme``), and Cholesky with the
triangular solves of a symbolic matrix order (``frontend_common.torch_linalg`` on
``schedule.linalg``'s loop kernels); one build each, run at several sizes against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.frontend_common import torch_linalg, torch_order
from minitvm.relax.frontend.spatial import grid_sample_kernel
from minitvm.relax.frontend.torch.aten_linalg_solve import _const, _Kernels
from minitvm.relax.frontend.torch.aten_order import _RelaxOrder
from minitvm.relax.frontend.torch.context import AtenContext
from minitvm.topi.testing.image_nd import grid_sample_python


def build(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = body(AtenContext(bb))
            gv = bb.emit_output(relax.Tuple(list(out)) if isinstance(out, tuple) else out)
        bb.emit_func_output(gv)
    mod = bb.get()
    return mod, relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def test_grid_sample_kernel_with_a_symbolic_grid():
    """A static (1, 2, 3, 4, 5) volume sampled at a (1, p, 1, 1, 3) grid of p points."""
    p = tir.Var("p", "int64")
    vol = relax.Var("vol", relax.TensorStructInfo([1, 2, 3, 4, 5], "float32"))
    grid = relax.Var("grid", relax.TensorStructInfo([1, p, 1, 1, 3], "float32"))
    mod, vm = build([vol, grid], lambda ctx: grid_sample_kernel(ctx, vol, grid, "bilinear",
                                                                 "border", True))
    assert str(mod["main"].ret_struct_info.shape.values[2]) == "p"
    rng = np.random.default_rng(0)
    v = rng.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    for points in (1, 6):
        g = rng.uniform(-1.2, 1.2, (1, points, 1, 1, 3)).astype("float32")
        ref = grid_sample_python(v, np.moveaxis(g, -1, 1), "bilinear", "NCDHW", "border", True)
        np.testing.assert_allclose(vm["main"](v, g).numpy(), ref, rtol=1e-5, atol=1e-6)


def _cum_reference(x, axis, largest):
    """torch.cummax / cummin: the running extreme and the last index reaching it; a NaN takes
    over and stays, its index moving on with later NaNs."""
    x = np.moveaxis(x, axis, -1)
    val, idx = np.empty_like(x), np.zeros(x.shape, "int64")
    for pos in np.ndindex(x.shape[:-1]):
        best, at = x[pos][0], 0
        for j, e in enumerate(x[pos]):
            if np.isnan(e) or (not np.isnan(best) and (e >= best if largest else e <= best)):
                best, at = e, j
            val[pos + (j,)], idx[pos + (j,)] = best, at
    return np.moveaxis(val, -1, axis), np.moveaxis(idx, -1, axis)


def test_cumulative_extreme_of_a_symbolic_batch():
    """cummin along the static last axis of a (b, 2, 5) tensor, b symbolic: the shifts' heads
    are filled like the tensor (no constant of the full shape). (cummax shares the code, one
    comparison flipped; the torch tests run both.)"""
    b = tir.Var("b", "int64")
    x = relax.Var("x", relax.TensorStructInfo([b, 2, 5], "float32"))
    mod, vm = build([x], lambda ctx: torch_order.cumulative_extreme(
        _RelaxOrder(ctx), x, [b, 2, 5], "float32", 2, False))
    assert "R.full_like" in mod.script()
    rng = np.random.default_rng(0)
    for n in (1, 3):
        data = rng.integers(0, 4, (n, 2, 5)).astype("float32")
        data[0, 1, 3] = np.nan
        val, idx = (t.numpy() for t in vm["main"](data))
        ref_val, ref_idx = _cum_reference(data, 2, False)
        np.testing.assert_array_equal(val, ref_val)
        np.testing.assert_array_equal(idx, ref_idx)


def test_cholesky_and_triangular_solves_of_a_symbolic_order():
    """``torch_linalg``'s Cholesky, cholesky_solve and solve_triangular on an (n, n) matrix of
    symbolic order n (a GP's kernel matrix over a dynamic batch of points): the loop kernels
    take the order at run time; one build at orders 1, 3 and 6 against numpy."""
    n = tir.Var("n", "int64")
    a = relax.Var("a", relax.TensorStructInfo([n, n], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([n, 2], "float32"))

    def body(ctx):
        kernels = _Kernels(ctx)
        chol, info = (ctx.emit(v) for v in torch_linalg.cholesky(
            relax.op, kernels, a, (n, n), "float32", _const, ctx.emit))
        alpha = ctx.emit(torch_linalg.cholesky_solve(relax.op, kernels, y, chol, (n, 2),
                                                     (n, n), "float32", _const, ctx.emit))
        v = ctx.emit(torch_linalg.solve_triangular(relax.op, kernels, chol, y, (n, n), (n, 2),
                                                   upper=False))
        return chol, info, alpha, v

    mod, vm = build([a, y], body)
    assert str(mod["main"].ret_struct_info.fields[0].shape.values[0]) == "n"
    rng = np.random.default_rng(0)
    for order in (1, 3, 6):
        m = rng.standard_normal((order, order))
        spd = (m @ m.T + order * np.eye(order)).astype("float32")
        rhs = rng.standard_normal((order, 2)).astype("float32")
        chol, info, alpha, v = (t.numpy() for t in vm["main"](spd, rhs))
        ref = np.linalg.cholesky(spd.astype("float64"))
        np.testing.assert_allclose(chol, ref, rtol=1e-5, atol=1e-5)
        assert int(info) == 0
        np.testing.assert_allclose(alpha, np.linalg.solve(spd.astype("float64"), rhs),
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(v, np.linalg.solve(ref, rhs), rtol=1e-4, atol=1e-5)


def test_symbolic_order_only_where_the_composition_takes_it():
    """LU-based compositions (solve, inverse, determinants) keep refusing a symbolic shape by
    name; a symbolic batch of matrices and non-square symbolic dims are refused too."""
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    with pytest.raises(torch_linalg.LinalgError, match="linalg_solve: matrix shape .* symbolic"):
        torch_linalg.check_order("linalg_solve", (n, n), "float32")
    assert torch_linalg.check_order("cholesky", (2, n, n), "float32", True) is n
    with pytest.raises(torch_linalg.LinalgError, match="cholesky: the batch dims"):
        torch_linalg.check_order("cholesky", (m, n, n), "float32", True)
    with pytest.raises(torch_linalg.LinalgError, match="cholesky: expected square"):
        torch_linalg.check_order("cholesky", (n, m), "float32", True)


def test_lu_compositions_over_a_symbolic_batch():
    """``torch_linalg``'s inverse, slogdet, det and solve on a (b, 3, 3) batch of a symbolic
    count b (a Kalman filter's covariances over a dynamic batch): the LU kernel runs over a
    run-time count of matrices; one build at b = 1, 2 and 5 against numpy."""
    b = tir.Var("b", "int64")
    a = relax.Var("a", relax.TensorStructInfo([b, 3, 3], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([b, 3, 2], "float32"))
    shape = (b, 3, 3)

    def body(ctx):
        kernels = _Kernels(ctx)
        inv = ctx.emit(torch_linalg.inverse(relax.op, kernels, a, shape, "float32", _const,
                                            ctx.emit))
        sign, log_abs = (ctx.emit(v) for v in torch_linalg.slogdet(
            relax.op, kernels, a, shape, "float32", _const, ctx.emit)[:2])
        det = ctx.emit(torch_linalg.det(relax.op, kernels, a, shape, "float32", _const,
                                        ctx.emit)[0])
        x = ctx.emit(torch_linalg.solve(relax.op, kernels, a, y, shape, (b, 3, 2), "float32",
                                        _const, ctx.emit))
        return inv, sign, log_abs, det, x

    _, vm = build([a, y], body)
    rng = np.random.default_rng(1)
    for count in (1, 2, 5):
        m = (rng.standard_normal((count, 3, 3)) + 3 * np.eye(3)).astype("float32")
        rhs = rng.standard_normal((count, 3, 2)).astype("float32")
        inv, sign, log_abs, det, x = (t.numpy() for t in vm["main"](m, rhs))
        m64 = m.astype("float64")
        ref_sign, ref_log = np.linalg.slogdet(m64)
        np.testing.assert_allclose(inv, np.linalg.inv(m64), rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(sign, ref_sign)
        np.testing.assert_allclose(log_abs, ref_log, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(det, np.linalg.det(m64), rtol=1e-4)
        np.testing.assert_allclose(x, np.linalg.solve(m64, rhs), rtol=1e-4, atol=1e-5)


def test_symbolic_batch_dims_broadcast_only_with_themselves_or_one():
    b, c = tir.Var("b", "int64"), tir.Var("c", "int64")
    assert torch_linalg.check_order("linalg_inv", (b, 3, 3), "float32",
                                    symbolic_batch=True) == 3
    assert torch_linalg.batch_shape((b, 3, 3), (1, 3, 2)) == (b,)
    assert torch_linalg.batch_shape((b, 3, 3), (3, 2)) == (b,)
    with pytest.raises(torch_linalg.LinalgError, match="do not broadcast"):
        torch_linalg.batch_shape((b, 3, 3), (c, 3, 2))
