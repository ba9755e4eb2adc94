"""Channel vectors for an output channel count not a multiple of 8 (``conv_pointwise``'s
``CHANNEL_TAIL``): a classifier's 1x1 conv (SqueezeNet's 512->100 at 13x13) whose pixels fit no
panel; the last panel computes its channels rounded up to 8 and stores only the real ones."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise as _build
from test_conv_pointwise import _conv_stage

from minitvm.backend import kernel_cache
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA (ENABLED)")


@pytest.fixture(autouse=True)
def _fresh_kernels():
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def test_modes_take_channels_for_odd_outputs_only_where_pixels_do_not_fit():
    # 169 pixels fit no 32-pixel panels: channel vectors although 100 is no multiple of 8
    assert conv_pointwise.modes_of(512, 100, 169, 32) == ["channels"]
    # a whole number of panels: pixel vectors alone, as before
    assert conv_pointwise.modes_of(512, 100, 196, 16) == ["pixels"]
    assert conv_pointwise.modes_of(64, 12, 64, 32) == ["pixels"]
    # few input channels: neither at 32 lanes (the 16-lane pixel tiles take it)
    assert conv_pointwise.modes_of(20, 13, 289, 32) == []


def test_tile_lanes_round_the_tail_up_to_a_power_of_two():
    g = {"width": 32}
    assert [conv_pointwise._tile_lanes(g, n) for n in (4, 8, 12, 17, 32)] == [8, 8, 16, 32, 32]
    assert conv_pointwise._tile_lanes({"width": 16}, 12) == 16


@needs_pointwise
@pytest.mark.parametrize("shape, o, epi, strides", [
    ((1, 64, 13, 13), 100, "relu", (1, 1)),  # SqueezeNet's classifier, fewer input channels
    ((2, 72, 7, 7), 10, "bias", (1, 1)),    # one panel of 10 channels (16 lanes), batch 2
    ((1, 64, 5, 5), 37, "residual_relu", (1, 1)),  # a panel and 5 channels, epilogue on the plane
    ((1, 130, 7, 7), 44, "bias_clip", (1, 1)),  # two channel blocks of 65
    ((1, 80, 9, 10), 12, "bias", (2, 2)),  # strided: the subsampled copy first
    ((1, 116, 14, 14), 116, "relu", (1, 1)),  # ShuffleNet: a 20-channel panel in 32 lanes
])
def test_odd_output_channels_match_numpy(shape, o, epi, strides):
    lib, feeds, want = _build(shape, o, epi, strides)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    prim = _conv_prim(lib)
    assert "pw_acc" in {s.buffer.name for s in walk_stmts(prim.body)
                        if isinstance(s, S.DeclBuffer)}
    g = conv_pointwise.geometry(_conv_stage(shape, o, strides=strides))
    # (AVX2's tiles are LANES wide, not 32: these planes are whole or nearly whole panels of
    # them, for the pixel kernel, the default there)
    wide = conv_pointwise.WIDTH[vector_isa()] > conv_pointwise.LANES
    assert g is not None and g["mode"] == ("channels" if wide else g["modes"][0])


def test_few_output_channels_take_taller_pixel_tiles_on_wide_lanes():
    rows, most, _ = conv_pointwise.ROWS_WIDE_CHANNELS_FEW
    # pixel tiles outer, at most two 32-lane panels: 12-pixel tiles
    assert conv_pointwise._rows("channels", 32, 384, 48, 169, None) == rows
    assert conv_pointwise._rows("channels", 32, 384, most, 169, None) == rows
    # more panels, weight panels outer, weights that fit L1 (256->32) or 16-lane tiles: as before
    assert conv_pointwise._rows("channels", 32, 256, 32, 729, None) == \
        conv_pointwise.wide_channel_rows()
    assert conv_pointwise._rows("channels", 32, 384, 96, 169, None) == \
        conv_pointwise.wide_channel_rows()
    assert conv_pointwise._rows("channels", 32, 384, 48, 25, None) == \
        conv_pointwise.wide_channel_rows()
    assert conv_pointwise._rows("channels", 16, 384, 48, 169, None) == conv_pointwise.ROWS
    # a knob still overrides it
    assert conv_pointwise._rows("channels", 32, 384, 48, 169, {"pw_rows": 8}) == 8


@needs_pointwise
@pytest.mark.parametrize("shape, o, epi", [
    ((1, 384, 13, 13), 48, "relu"),        # SqueezeNet's squeeze conv: 12- and 11-pixel tiles
    ((2, 160, 9, 9), 64, "residual_relu"),  # two panels, batch 2, epilogue on the plane
    ((1, 80, 7, 7), 20, "bias_clip"),      # one narrow panel (32 lanes for 20)
])
def test_few_output_channels_match_numpy(shape, o, epi):
    lib, feeds, want = _build(shape, o, epi)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    g = conv_pointwise.geometry(_conv_stage(shape, o))
    tiles = {int(s.buffer.shape[0]) for s in walk_stmts(_conv_prim(lib).body)
             if isinstance(s, S.DeclBuffer) and s.buffer.name == "pw_acc"}
    want_tiles = {r for _, r, _ in conv_pointwise.row_tiles(g["p"], g["rows"])}
    assert g["mode"] == "channels" and tiles == want_tiles


def test_channel_tile_height_follows_the_host(monkeypatch):
    """``ROWS_WIDE_CHANNELS`` by host CPU name, else by vector ISA (``common.host_switch``)."""
    from minitvm.runtime import jit

    big = ("channels", 32, 432, 432, 49, None)  # 432->432 at 7x7: weight panels outer
    monkeypatch.setattr(jit, "host_cpu", lambda: ("rocketlake", "+avx512f"))
    assert conv_pointwise._rows(*big) == conv_pointwise.ROWS_WIDE_CHANNELS["rocketlake"] == 12
    monkeypatch.setattr(jit, "host_cpu", lambda: ("znver4", "+avx512f"))
    assert conv_pointwise._rows(*big) == conv_pointwise.ROWS_WIDE_CHANNELS[vector_isa()] == 8
