"""The 1x1 conv schedule's 32-lane tiles (``schedule/conv_pointwise.py``'s ``WIDTH`` on AVX-512:
two zmm a tile row; channel-vector tiles of up to 12 pixels): numerics against numpy on pixel
counts and output channel counts that are multiples of 32 and not (an overlapping last panel,
a narrower last channel panel, the fallback to 16-lane tiles), 14x14 and 7x7 planes, strided
convs, every kind of epilogue, weights as a constant and not; the geometry and the packed
weight layout. The wide tiles are forced (``WIDTH`` patched) so that an AVX2 host runs them
too; LLVM splits their vectors there."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise as _build

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA")


@pytest.fixture
def wide(monkeypatch):
    """32-lane tiles whatever the host's ISA."""
    monkeypatch.setattr(conv_pointwise, "WIDTH", {"avx512": 32, "avx2": 32})



def _conv_stage(shape, o, strides=(1, 1)):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(o, shape[1], 1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, strides=strides))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


def _acc_shapes(prim) -> set:
    return {tuple(int(d) for d in s.buffer.shape) for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "pw_acc"}


CASES = [
    # (N, C, H, W), O, epilogue, strides, the kernel and the tile width that take it
    ((1, 40, 8, 8), 64, "bias_clip", (1, 1), "pixels", 32),        # 2 panels of 32 pixels
    ((2, 24, 8, 12), 20, "residual_relu", (1, 1), "pixels", 32),   # 96 pixels, 20 channels
    ((1, 96, 23, 23), 64, "residual_relu", (1, 1), "pixels", 32),  # 529: last panel overlaps
    ((1, 64, 28, 28), 48, "bias_relu", (1, 1), "pixels", 32),      # 784: 16 pixels twice
    ((1, 256, 8, 8), 24, "residual_relu", (1, 1), "pixels", 32),   # packed (256 channels)
    ((1, 64, 14, 14), 48, "residual_relu", (1, 1), "channels", 32),  # 14x14; 32 + 16 lanes
    ((1, 24, 7, 7), 40, "bias_clip", (1, 1), "channels", 32),      # 7x7; 32 + 8 lanes
    ((2, 16, 7, 7), 24, "swish", (1, 1), "channels", 32),          # 24 channels in 32 lanes
    ((1, 256, 7, 7), 96, "residual_relu", (1, 1), "channels", 32),  # 4 channel blocks of 64
    ((1, 160, 14, 14), 64, "bias_clip", (1, 1), "channels", 32),   # pixel tiles outer
    ((1, 16, 3, 3), 64, "residual_relu", (1, 1), "channels", 32),  # 9 pixels: one tile
    ((1, 32, 28, 28), 64, "residual_relu", (2, 2), "channels", 32),  # strided to 14x14
    ((2, 16, 16, 16), 32, "bias_relu", (2, 2), "pixels", 32),      # strided to 8x8
    ((1, 48, 14, 14), 72, "none", (2, 2), "channels", 32),         # strided to 7x7; 64 + 8
    ((1, 20, 17, 17), 13, "bias_clip", (1, 1), "pixels", 16),      # neither at 32: 16 lanes
]


@needs_pointwise
@pytest.mark.parametrize("case", CASES)
def test_wide_tiles_match_numpy(case, wide):
    shape, o, epi, strides, mode, width = case
    oh, ow = ((shape[2] - 1) // strides[0] + 1, (shape[3] - 1) // strides[1] + 1)
    g = conv_pointwise.geometry(_conv_stage(shape, o, strides))
    assert (g["mode"], g["width"]) == (mode, width)
    lib, feeds, want = _build(shape, o, epi, strides)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    shapes = _acc_shapes(_conv_prim(lib))
    if mode == "pixels":  # rows of output channels x the panel's pixels
        assert {lanes for _, lanes in shapes} == {width}
    else:  # pixels x whole panels of output channels, then the rest
        tails = {conv_pointwise._tile_lanes({"width": width}, lanes)
                 for lanes in (width, o % width) if lanes and lanes <= o}
        assert {lanes for _, lanes in shapes} == tails
        assert {rows for rows, _ in shapes} == {r for _, r, _ in
                                                conv_pointwise.row_tiles(oh * ow, g["rows"])}


@needs_pointwise
@pytest.mark.parametrize("rows", [4, 12])
def test_wide_tiles_other_heights_match_numpy(rows, wide, monkeypatch):
    """The ``pw_rows`` heights (12: 10- and 9-pixel tiles at 7x7, 12 and 11 at 14x14)."""
    monkeypatch.setattr(conv_pointwise, "ROWS_WIDE_CHANNELS",
                        dict.fromkeys(conv_pointwise.ROWS_WIDE_CHANNELS, rows))
    monkeypatch.setattr(conv_pointwise, "ROWS_WIDE_PIXELS", rows)
    monkeypatch.setattr(conv_pointwise, "ROWS_WIDE_PIXELS_DEEP", (rows, 1))
    monkeypatch.setattr(conv_pointwise, "ROWS", rows)
    for shape, o, epi in [((1, 96, 7, 7), 40, "residual_relu"), ((1, 24, 14, 14), 64, "swish"),
                          ((1, 16, 8, 8), 26, "bias_clip")]:
        lib, feeds, want = _build(shape, o, epi)
        np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
        assert {r for r, _ in _acc_shapes(_conv_prim(lib))} <= set(range(1, rows + 1))


@needs_pointwise
@pytest.mark.parametrize("shape, o", [((1, 32, 8, 8), 40),     # pixel vectors, in place
                                      ((1, 32, 7, 7), 64),     # (the implicit GEMM)
                                      ((2, 24, 14, 14), 32)])
def test_wide_tiles_weights_not_constant(shape, o, wide):
    lib, feeds, want = _build(shape, o, "residual_relu", const_weight=False, seed=3)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)


@needs_pointwise
def test_wide_channel_weights_packed_in_32_lane_panels(wide):
    lib, feeds, want = _build((1, 24, 7, 7), 40, "residual_relu")
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    prim = _conv_prim(lib)
    weight = prim.buffer_map[prim.params[1]]
    assert [int(d) for d in weight.shape] == [2, 24, 32]


def test_packed_weight_layout_per_width(wide):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((40, 5, 1, 1)).astype("float32")
    shape, fn = conv_pointwise.packed_weight(_conv_stage((1, 5, 7, 7), 40))
    packed = fn(w)
    assert shape == (2, 5, 32) == packed.shape
    np.testing.assert_array_equal(packed[0], w[:32, :, 0, 0].T)
    np.testing.assert_array_equal(packed[1, :, :8], w[32:, :, 0, 0].T)
    assert not packed[1, :, 8:].any()
    # pixel vectors: [tile][C][rows] whatever the width, 8-row tiles at 32 lanes
    shape, fn = conv_pointwise.packed_weight(_conv_stage((1, 5, 8, 8), 40))
    packed = fn(w)
    assert shape == (40 * 5,)
    assert conv_pointwise.row_tiles(40, conv_pointwise.ROWS_WIDE_PIXELS) == [(0, 8, 5)]
    for start, rows, count in conv_pointwise.row_tiles(40, conv_pointwise.ROWS_WIDE_PIXELS):
        for k in range(count):
            o0 = start + k * rows
            np.testing.assert_array_equal(packed[o0 * 5:(o0 + rows) * 5].reshape(5, rows),
                                          w[o0:o0 + rows, :, 0, 0].T)


def test_geometry_width_and_rows(wide):
    g = conv_pointwise.geometry(_conv_stage((1, 256, 14, 14), 96))
    assert (g["mode"], g["width"], g["rows"]) == ("channels", 32,
                                                  conv_pointwise.wide_channel_rows())
    # at most two panels, pixel tiles outer, 64 KB of weights: 12-pixel tiles
    g = conv_pointwise.geometry(_conv_stage((1, 256, 14, 14), 64))
    assert (g["mode"], g["width"], g["rows"]) == ("channels", 32,
                                                  conv_pointwise.ROWS_WIDE_CHANNELS_FEW[0])
    # pixel vectors: 8 channel rows, 12 from the host's ROWS_WIDE_PIXELS_DEEP input channels
    # (256, a panel of 32 KB or more; 96 on rocketlake: test_conv_pointwise_deep_rows)
    g = conv_pointwise.geometry(_conv_stage((1, 256, 56, 56), 64))
    assert (g["mode"], g["width"], g["rows"]) == ("pixels", 32, 12)
    g = conv_pointwise.geometry(_conv_stage((1, 255, 32, 32), 64))
    deep = 12 if 255 >= conv_pointwise.wide_pixel_rows_from() else 8
    assert (g["mode"], g["width"], g["rows"]) == ("pixels", 32, deep)
    g = conv_pointwise.geometry(_conv_stage((1, 95, 32, 32), 64))
    assert (g["mode"], g["width"], g["rows"]) == ("pixels", 32, 8)
    assert g["pw_pack"] is True  # (PACK_MIN_CHANNELS_WIDE input channels)
    assert conv_pointwise.geometry(_conv_stage((1, 96, 56, 56), 24))["pw_pack"] is False
    # the knobs: the narrow tiles, other heights
    g = conv_pointwise.geometry(_conv_stage((1, 256, 14, 14), 64), {"pw_width": 16})
    assert (g["width"], g["rows"]) == (16, 6)
    g = conv_pointwise.geometry(_conv_stage((1, 256, 14, 14), 64), {"pw_rows": 12})
    assert g["rows"] == 12
    # pixel vectors asked for where 32-pixel panels would waste too much: 16-pixel ones
    g = conv_pointwise.geometry(_conv_stage((1, 96, 14, 14), 64), {"pw_mode": "pixels"})
    assert (g["mode"], g["width"]) == ("pixels", 16)


def test_geometry_keeps_avx2_tiles(monkeypatch):
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: "avx2")
    for shape, o in [(((1, 256, 14, 14)), 64), ((1, 64, 56, 56), 256), ((1, 512, 7, 7), 128)]:
        g = conv_pointwise.geometry(_conv_stage(shape, o))
        assert (g["width"], g["rows"]) == (16, 6)
    assert conv_pointwise.geometry(_conv_stage((1, 256, 56, 56), 64))["pw_pack"] is False


def test_modes_per_width():
    # 196 pixels: 16-pixel panels overlap by 12, 32-pixel ones by 28 (too many)
    assert conv_pointwise.modes_of(96, 64, 196, 16) == ["pixels", "channels"]
    assert conv_pointwise.modes_of(96, 64, 196, 32) == ["channels"]
    assert conv_pointwise.modes_of(64, 64, 784, 32) == ["pixels", "channels"]
    assert conv_pointwise.modes_of(48, 20, 289, 32) == []
    # (from CHANNEL_TAIL_MIN_INPUTS input channels, channel vectors with a tail for 20)
    assert conv_pointwise.modes_of(64, 20, 289, 32) == ["channels"]


def test_row_tiles_cover_at_every_height():
    for most in conv_pointwise.ROWS_CHOICES:
        for extent in range(0, 300):
            groups = conv_pointwise.row_tiles(extent, most)
            covered, start = 0, 0
            for first, rows, count in groups:
                assert first == start and 1 <= rows <= most and count >= 1
                start += rows * count
                covered += rows * count
            assert covered == extent
    assert conv_pointwise.row_tiles(49, 12) == [(0, 10, 4), (40, 9, 1)]
    assert conv_pointwise.row_tiles(196, 12) == [(0, 12, 9), (108, 11, 8)]
    with pytest.raises(ValueError, match="at least 2 rows"):
        conv_pointwise.row_tiles(10, 1)
