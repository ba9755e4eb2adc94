"""Grouped convs of a few channels a group (ResNeXt's 4 or 8) in output-channel tiles on the
depthwise schedule (``depthwise_grouped``): numbers against a float64 numpy reference at one
and two threads (odd planes, stride 2, asymmetric padding, dilation, batch 2, residual
epilogues, groups whose output channels are not a multiple of the tile's, rows narrower than
a vector), the kernels of both dialects taking the tiles, the tile shapes, and rows of fewer
than ``NARROW_MIN_WIDTH`` pixels keeping one channel at a time."""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import build_conv, conv_prim, grouped_conv_ref, run_graph

import minitvm as tvm
from minitvm import relax
from minitvm.backend import kernel_cache
from minitvm.schedule import depthwise_grouped, depthwise_loops
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _tiled(prim) -> bool:
    """Does the PrimFunc compute output-channel tiles (their let-bound input vectors)?"""
    return any(isinstance(s, S.LetStmt) and s.var.name.startswith("dg_in")
               for s in walk_stmts(prim.body))


def _check(lib, inputs, want, atol=2e-5):
    scale = np.max(np.abs(want))
    for threads in (1, 2):
        got = run_graph(lib, inputs, threads)
        np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=atol)


@pytest.mark.parametrize("shape,o,groups,strides,pads,dil,epi", [
    ((1, 32, 20, 20), 32, 8, (1, 1), (1, 1), (1, 1), "bias_relu"),  # 4 a group, rows of 16 + 4
    ((2, 64, 17, 28), 64, 8, (1, 1), (1, 1), (1, 1), "residual_relu"),  # 8 a group, batch 2
    ((2, 32, 33, 35), 48, 8, (2, 2), (1, 1), (1, 1), "bias_relu"),  # stride 2, 6 outputs a group
    ((1, 12, 18, 40), 12, 2, (1, 1), (1, 0, 2, 1), (1, 1), "none"),  # 6 a group, uneven pads
    ((1, 16, 21, 22), 32, 4, (1, 1), (2, 2), (2, 2), "bias_relu"),  # dilation 2, 8 outputs
    ((1, 24, 9, 66), 24, 3, (2, 2), (1, 1), (1, 1), "residual_relu"),  # stride 2, rows of 33
])
def test_grouped_tiles_match_reference(shape, o, groups, strides, pads, dil, epi):
    kernel_cache.clear_cache()
    lib, inputs, want = build_conv(shape, o, 3, strides, pads, dil, epi,
                                   np.random.default_rng(sum(shape)), groups)
    assert _tiled(conv_prim(lib))
    _check(lib, inputs, want)


def test_switched_off_gives_the_same_numbers(monkeypatch):
    """Without the tiles the same conv runs one output channel at a time, to the same numbers."""
    args = ((1, 32, 20, 24), 32, 3, (1, 1), (1, 1), (1, 1), "bias_relu")
    kernel_cache.clear_cache()
    lib, inputs, want = build_conv(*args, np.random.default_rng(3), 8)
    assert _tiled(conv_prim(lib))
    monkeypatch.setattr(depthwise_grouped, "CHANNEL_TILES", False)
    kernel_cache.clear_cache()
    old, _, _ = build_conv(*args, np.random.default_rng(3), 8)
    assert not _tiled(conv_prim(old))
    np.testing.assert_allclose(run_graph(lib, inputs), run_graph(old, inputs), rtol=1e-5,
                               atol=1e-5)
    _check(old, inputs, want)


@pytest.mark.parametrize("hw,stride,tiled", [
    (14, 1, True),  # rows of 14: two overlapping 8-lane vectors
    (10, 1, True),  # rows of 10: 8 + 4 lanes
    (24, 2, True),  # strided rows of 12
    (7, 1, False),  # rows of 7 keep one channel at a time (the packed plane)
    (13, 2, False),  # strided rows of 7
])
def test_narrow_rows(hw, stride, tiled):
    """Rows narrower than a machine vector take tiles of narrower vectors from ``NARROW_MIN_WIDTH``
    pixels; both kinds match the reference."""
    kernel_cache.clear_cache()
    lib, inputs, want = build_conv((2, 32, hw, hw), 64, 3, (stride, stride), groups=8,
                                   epi="residual_relu")
    assert _tiled(conv_prim(lib)) == tiled
    _check(lib, inputs, want)


@pytest.mark.parametrize("ow,want", [(56, 16), (16, 16), (15, 8), (8, 8), (7, 4)])
def test_row_lanes(ow, want):
    assert depthwise_grouped.row_lanes({"ow": ow, "lanes": 16}) == want


@pytest.mark.parametrize("m,ow,oh,want", [
    (4, 56, 56, (4, 1, 4)),  # ResNeXt-50's first stage: 4 channels x 4 vectors
    (8, 28, 28, (4, 3, 2)),  # its second: 4 channels x 3 rows x 2 vectors
    (6, 18, 17, (3, 3, 2)),  # 3 divides 6
    (4, 112, 112, (4, 1, 6)),  # a row of 7 vectors in two tiles
    (2, 28, 2, (2, 2, 2)),  # no more rows than the plane has
])
def test_tile_shape(monkeypatch, m, ow, oh, want):
    monkeypatch.setattr(depthwise_grouped, "vector_isa", lambda: "avx512")
    g = {"m": m, "ow": ow, "oh": oh, "lanes": 16}
    assert depthwise_grouped.tile_shape(g, len(depthwise_loops._segments(ow, 16))) == want


@pytest.mark.parametrize("stride,hw", [(1, 24), (2, 40)])
def test_relax_build_takes_the_tiles(stride, hw):
    """relax.build lowers a ResNeXt-like grouped conv through the same tiles."""
    rng = np.random.default_rng(5)
    groups, cg = 8, 4
    c = groups * cg
    wt = rng.standard_normal((c, cg, 3, 3)).astype("float32")
    bias = rng.standard_normal((1, c, 1, 1)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([2, c, hw, hw], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=stride, padding=1,
                                           groups=groups))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.add(y, relax.const(bias)))))
        bb.emit_func_output(gv)
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    assert _tiled(rec.prim_func)
    a = rng.standard_normal((2, c, hw, hw)).astype("float32")
    ref = np.maximum(grouped_conv_ref(a, wt, groups, (stride, stride), (1,) * 4) + bias, 0)
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(a)).numpy()
    scale = np.max(np.abs(ref))
    np.testing.assert_allclose(got / scale, ref / scale, rtol=0, atol=2e-5)


@pytest.mark.parametrize("hw,stride", [(28, 1), (14, 1), (30, 2)])
def test_transcendental_epilogue_fused_into_the_tiles(hw, stride):
    """A SiLU after the conv (rows of at most 32, which the depthwise schedule runs in a pass of
    its own) is stored through by the tiles, to the reference's numbers."""
    from minitvm import relay

    rng = np.random.default_rng(hw)
    c, groups = 32, 8
    wv = rng.standard_normal((c, c // groups, 3, 3)).astype("float32") / 6
    bias = rng.standard_normal(c).astype("float32")
    xv = rng.standard_normal((1, c, hw, hw)).astype("float32")
    x = relay.var("x", shape=xv.shape)
    y = relay.nn.bias_add(relay.nn.conv2d(x, relay.const(wv), strides=(stride, stride),
                                          padding=(1, 1), groups=groups), relay.const(bias))
    y = y * relay.sigmoid(y)
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    assert _tiled(conv_prim(lib))
    z = grouped_conv_ref(xv, wv, groups, (stride, stride), (1,) * 4) + bias[:, None, None]
    _check(lib, {"x": xv}, z / (1 + np.exp(-z)))


def test_tiles_need_no_loop_passes():
    """The weights are scalars loaded before the row loop, so the kernel takes LLVM's minimal
    pipeline (the light one took seconds on the tiles' straight-line code)."""
    from minitvm.codegen.build import ir_pipeline_level
    from minitvm.runtime import jit

    kernel_cache.clear_cache()
    lib, _, _ = build_conv((1, 64, 28, 28), 64, 3, groups=8)
    prim = conv_prim(lib)
    assert _tiled(prim)
    assert ir_pipeline_level(prim, 3) == jit.MINIMAL_PIPELINE
