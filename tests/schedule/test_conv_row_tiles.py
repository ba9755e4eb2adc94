"""Dilated convs skip the filter taps that read only padding: where whole filter columns of some
output columns read padding (``conv_lanes.row_segments``), ``conv_lanes`` tiles each output row
by its runs of columns, each tile running only its run's filter columns (a static range) and
its row's filter rows, from an unpadded channel-blocked copy of the input (``_pack``); such
convs leave ``conv_direct``'s row mode. Numerics against a float64 reference, with fused
epilogues, strides, uneven padding, planes smaller than the dilation, batches and groups."""

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import conv_lanes, conv_winograd
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

ROWS_ON = conv_lanes.ENABLED[vector_isa()] and conv_lanes.ROW_TILES[vector_isa()]


@pytest.fixture(autouse=True)
def fresh_kernels(monkeypatch):
    """3x3 stride-1 convs stay off Winograd; no kernel is reused from another test."""
    monkeypatch.setattr(conv_winograd, "DEFAULT_ON", False)
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _geometry(w, kw, dw, sw, pl, pr):
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    return dict(w=w, ow=ow, kw=kw, dw=dw, sw=sw, pl=pl)


def _needed(g, ox):
    """Filter columns reading an input column at output column ``ox``, by brute force."""
    return [kx for kx in range(g["kw"]) if 0 <= ox * g["sw"] - g["pl"] + kx * g["dw"] < g["w"]]


@pytest.mark.parametrize("w,kw,dw,sw,pl,pr", [
    (32, 3, 6, 1, 6, 6), (32, 3, 18, 1, 18, 18), (32, 3, 40, 1, 40, 40), (13, 3, 6, 1, 6, 6),
    (27, 3, 5, 2, 3, 7), (40, 5, 3, 2, 6, 6), (9, 7, 3, 1, 9, 2), (32, 3, 1, 1, 1, 1)])
def test_col_segments_are_the_runs_of_needed_columns(w, kw, dw, sw, pl, pr):
    """The runs cover the output columns in order, and every column of a run needs exactly
    its run's contiguous filter columns (none, where all read padding)."""
    g = _geometry(w, kw, dw, sw, pl, pr)
    runs = conv_lanes.col_segments(g)
    assert runs[0][0] == 0 and sum(n for _, n, _, _ in runs) == g["ow"]
    for (c0, n, lo, hi), nxt in zip(runs, runs[1:] + [None], strict=True):
        if nxt is not None:
            assert nxt[0] == c0 + n and nxt[2:] != (lo, hi)
        for ox in range(c0, c0 + n):
            assert _needed(g, ox) == list(range(lo, hi))


@pytest.mark.parametrize("dil,rows", [(1, False), (2, False), (4, True), (6, True),
                                      (12, True), (18, True)])
def test_row_segments_only_where_enough_is_skipped(dil, rows):
    """32 columns of a 3-wide filter: runs at dilation 4 and up (8% of the taps or more, runs
    of 4 columns or more), not at 1 or 2 (runs of 1 or 2 columns); a 7x7 plane padded by one
    (runs of 1, 5, 1) keeps the flattened tiles."""
    g = _geometry(32, 3, dil, 1, dil, dil)
    assert (conv_lanes.row_segments(g) is not None) == (rows and ROWS_ON)
    assert conv_lanes.row_segments(_geometry(7, 3, 1, 1, 1, 1)) is None


@pytest.mark.parametrize("cols", list(range(1, 40)))
def test_even_tiles_cover_a_run(cols):
    """The fewest tiles of at most 6 pixels, sizes within one of each other, covering the run
    in order (6s and 5s from 20 pixels up, as ``pixel_tiles``)."""
    groups = conv_lanes.even_tiles(cols)
    pos, sizes = 0, []
    for first, pixels, count in groups:
        assert first == pos and 1 <= pixels <= 6 and count >= 1
        pos += pixels * count
        sizes += [pixels] * count
    assert pos == cols and len(sizes) == -(-cols // 6) and max(sizes) - min(sizes) <= 1
    if cols >= 20:
        assert groups == conv_lanes.pixel_tiles(cols)


def _build(shape, o, k, strides, pads, dil, groups=1, epi="bias_relu", seed=0):
    """conv2d of a constant weight (+ bias, + residual, relu) through relay.build:
    (lib, inputs, want)."""
    rng = np.random.default_rng(seed)
    cg, og = shape[1] // groups, o // groups
    wv = rng.standard_normal((o, cg, k, k)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    want = np.concatenate([conv_ref(xv[:, i * cg:(i + 1) * cg], wv[i * og:(i + 1) * og],
                                    strides, pads, dil) for i in range(groups)], axis=1)
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=strides, padding=pads, dilation=dil,
                        kernel_size=(k, k), channels=o, groups=groups)
    params, inputs = [x], {"x": xv}
    if epi != "none":
        y = relay.nn.bias_add(y, relay.const(bias))
        want = want + bias[:, None, None]
    if epi == "residual_relu":
        r = relay.var("r", shape=want.shape)
        rv = rng.standard_normal(want.shape).astype("float32")
        params.append(r)
        inputs["r"] = rv
        y = relay.add(y, r)
        want = want + rv
    if epi != "none":
        y = relay.nn.relu(y)
        want = np.maximum(want, 0)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")
    return lib, inputs, want


def _run(lib, inputs):
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for name, v in inputs.items():
        gm.set_input(name, v)
    gm.run()
    return gm.get_output(0).numpy()


def _kernel(lib):
    (kernel,) = [k for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return kernel


def _row_tiled(kernel) -> bool:
    """Does the kernel read the packed copy (``_pack``) through row tiles?"""
    return any(isinstance(s, S.DeclBuffer) and s.buffer.name == "xpack"
               for s in walk_stmts(kernel.prim_func.body))


def _kx_ranges(kernel) -> set[tuple[int, int]]:
    """(first, count) of every filter-column loop of the kernel."""
    return {(int(s.min.value), int(s.extent.value)) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.For) and s.loop_var.name.startswith("kx")
            and isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm)}


@pytest.mark.parametrize("shape,o,k,strides,pads,dil,groups,epi,rows", [
    ((1, 32, 32, 32), 32, 3, (1, 1), (6, 6, 6, 6), (6, 6), 1, "bias_relu", True),  # DeepLab
    # (30x30: a 32x32 plane would be split into dilation phases by Legalize, _legalize_dilated)
    ((1, 32, 30, 30), 16, 3, (1, 1), (4, 4, 4, 4), (4, 4), 1, "residual_relu", True),
    ((1, 24, 32, 32), 16, 3, (1, 1), (12, 12, 12, 12), (12, 12), 1, "bias_relu", True),
    ((1, 16, 32, 32), 16, 3, (1, 1), (18, 18, 18, 18), (18, 18), 1, "bias_relu", True),
    ((1, 8, 20, 20), 16, 3, (1, 1), (24, 24, 24, 24), (24, 24), 1, "bias_relu", True),  # 1x1
    ((1, 20, 24, 24), 16, 3, (1, 1), (8, 5, 8, 5), (9, 7), 1, "bias_relu", True),  # unequal
    ((1, 12, 30, 27), 32, 3, (1, 1), (4, 6, 2, 5), (6, 6), 1, "none", True),
    ((2, 16, 40, 40), 16, 3, (2, 2), (8, 8, 8, 8), (8, 8), 1, "residual_relu", True),  # stride 2
    ((1, 16, 26, 33), 16, 3, (2, 1), (6, 4, 6, 4), (6, 8), 1, "bias_relu", True),
    ((1, 32, 24, 24), 32, 3, (1, 1), (6, 6, 6, 6), (6, 6), 2, "bias_relu", True),  # groups
    ((1, 300, 20, 20), 16, 3, (1, 1), (6, 6, 6, 6), (6, 6), 1, "bias_relu", True),  # blocks
    ((1, 3, 32, 32), 16, 3, (1, 1), (6, 6, 6, 6), (6, 6), 1, "bias_relu", True),  # 3 channels
    ((4, 8, 24, 24), 16, 5, (1, 1), (8, 8, 8, 8), (4, 4), 1, "residual_relu", True),  # 5x5
    ((1, 16, 32, 32), 16, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, "bias_relu", False),  # d=2
    ((1, 16, 32, 32), 16, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_relu", False),
])
def test_dilated_convs_match_reference(shape, o, k, strides, pads, dil, groups, epi, rows):
    """Row tiles where whole filter columns read padding (dilation 4 up; a 20x20 plane at
    dilation 24 is a 1x1 conv for every pixel), else the former schedules; all match float64."""
    lib, inputs, want = _build(shape, o, k, strides, pads, dil, groups, epi)
    assert _row_tiled(_kernel(lib)) == (rows and ROWS_ON)
    np.testing.assert_allclose(_run(lib, inputs), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not ROWS_ON, reason="row tiles are switched off for this ISA (ROW_TILES)")
def test_tiles_run_only_their_runs_filter_columns():
    """Dilation 6 on 32 columns: runs of 6, 20 and 6 columns need filter columns 1-2, 0-2 and
    0-1, so the kernel's column loops are (1, 2), (0, 3) and (0, 2); at dilation 18 the middle
    run (columns 14-17) needs only the centre column."""
    lib, _, _ = _build((1, 16, 32, 32), 16, 3, (1, 1), (6, 6, 6, 6), (6, 6))
    assert _kx_ranges(_kernel(lib)) == {(1, 2), (0, 3), (0, 2)}
    kernel_cache.clear_cache()
    lib, _, _ = _build((1, 16, 32, 32), 16, 3, (1, 1), (18, 18, 18, 18), (18, 18))
    assert _kx_ranges(_kernel(lib)) == {(1, 2), (1, 1), (0, 2)}


@pytest.mark.skipif(not ROWS_ON, reason="row tiles are switched off for this ISA (ROW_TILES)")
def test_switched_off_row_tiles_keep_conv_direct(monkeypatch):
    """With ``ROW_TILES`` off a dilated 32x32 conv stays on ``conv_direct``'s row mode, and the
    results agree with the row tiles'."""
    lib, inputs, want = _build((1, 16, 32, 32), 16, 3, (1, 1), (6, 6, 6, 6), (6, 6))
    on = _run(lib, inputs)
    monkeypatch.setattr(conv_lanes, "ROW_TILES", {"avx512": False, "avx2": False})
    kernel_cache.clear_cache()
    lib, inputs, _ = _build((1, 16, 32, 32), 16, 3, (1, 1), (6, 6, 6, 6), (6, 6))
    kernel = _kernel(lib)
    assert not _row_tiled(kernel)
    assert not any(isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"
                   for s in walk_stmts(kernel.prim_func.body))
    np.testing.assert_allclose(_run(lib, inputs), on, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(on, want, rtol=1e-4, atol=1e-4)


def _deeplab_geometry(dil: int) -> dict:
    """``conv_lanes.geometry`` of DeepLab's 256 -> 64 3x3 branch at 32x32, dilation ``dil``."""
    return dict(n=1, c=256, h=32, w=32, o=64, kh=3, kw=3, oh=32, ow=32, sh=1, sw=1, dh=dil,
                dw=dil, pt=dil, pl=dil, hp=32 + 2 * dil, wp=32 + 2 * dil, grid=1024, groups=1,
                og=64, cin=256, real_o=64, parallel=True)


@pytest.mark.skipif(not ROWS_ON, reason="row tiles are switched off for this ISA (ROW_TILES)")
def test_row_tile_default_knobs_block_the_channels():
    """A row-tiled geometry (dilation 6) defaults to the row tiles' channel block, which cuts
    its 256 channels in blocks; the same conv undilated (no row tiles) keeps its own."""
    g = _deeplab_geometry(6)
    knobs = conv_lanes.default_knobs(g)
    assert knobs["lanes_cblock"] == conv_lanes.ROW_TILES_CHANNEL_BLOCK_BYTES
    assert conv_lanes.channel_block(conv_lanes.with_knobs(g, knobs)) < g["c"]
    flat = _deeplab_geometry(1)
    assert conv_lanes.row_segments(flat) is None
    assert conv_lanes.default_knobs(flat)["lanes_cblock"] != \
        conv_lanes.ROW_TILES_CHANNEL_BLOCK_BYTES


@pytest.mark.skipif(not ROWS_ON, reason="row tiles are switched off for this ISA (ROW_TILES)")
@pytest.mark.parametrize("unroll", [False, True])
def test_row_tile_columns_unrolled_per_host(monkeypatch, unroll):
    """A row-tiled geometry's filter columns are unrolled or loops as its host's entry says
    (``ROW_TILES_UNROLL_KX``); the same conv undilated keeps them unrolled (3 columns)."""
    monkeypatch.setattr(conv_lanes, "ROW_TILES_UNROLL_KX", {"rocketlake": unroll,
                                                            "avx512": unroll, "avx2": unroll})
    assert conv_lanes.default_knobs(_deeplab_geometry(6))["lanes_unroll_kx"] is unroll
    assert conv_lanes.default_knobs(_deeplab_geometry(1))["lanes_unroll_kx"] is True


@pytest.mark.skipif(not ROWS_ON, reason="row tiles are switched off for this ISA (ROW_TILES)")
@pytest.mark.parametrize("unroll", [False, True])
def test_deeplab_branch_row_tiles_columns_as_loops_match_reference(monkeypatch, unroll):
    """DeepLab-like dilation-6 branch (fewer channels) with the row tiles' filter columns as
    loops or unrolled: both match float64."""
    monkeypatch.setattr(conv_lanes, "ROW_TILES_UNROLL_KX", {"rocketlake": unroll,
                                                            "avx512": unroll, "avx2": unroll})
    kernel_cache.clear_cache()
    lib, inputs, want = _build((1, 32, 32, 32), 32, 3, (1, 1), (6, 6, 6, 6), (6, 6))
    kinds = {s.kind for s in walk_stmts(_kernel(lib).prim_func.body)
             if isinstance(s, S.For) and s.loop_var.name.startswith("kx")}
    assert kinds == {S.ForKind.UNROLLED if unroll else S.ForKind.SERIAL}
    np.testing.assert_allclose(_run(lib, inputs), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not ROWS_ON, reason="row tiles are switched off for this ISA (ROW_TILES)")
def test_deeplab_branch_row_tiles_in_channel_blocks_match_reference():
    """DeepLab's dilation-6 branch as built: row tiles over blocks of input channels, their
    partial sums in a scratch between blocks (``cl_sums``), matching float64."""
    lib, inputs, want = _build((1, 256, 32, 32), 64, 3, (1, 1), (6, 6, 6, 6), (6, 6))
    kernel = _kernel(lib)
    assert _row_tiled(kernel)
    assert any(isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_sums"
               for s in walk_stmts(kernel.prim_func.body))
    np.testing.assert_allclose(_run(lib, inputs), want, rtol=1e-4, atol=1e-4)
