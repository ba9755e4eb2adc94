"""The Relax torch importer's helpers on symbolic sizes, built with a BlockBuilder (no torch
needed): the native grid-sample call with a grid whose batch and output dims are symbolic
(``spatial.grid_sample_kernel``) and cummax / cummin over a static axis of a tensor with a
symbolic batch (``frontend_common.torch_order.cumulative_extreme``); one build each, run at
several sizes against numpy."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.frontend_common import torch_order
from minitvm.relax.frontend.spatial import grid_sample_kernel
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
