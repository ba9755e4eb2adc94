"""``conv_lanes.WIDE_STRIDED_ANY_PLANE``: on the hosts that switch it on (Rocket Lake), a strided
groups-1 conv of at most 9 taps a filter and at least 32 input channels, whose output channels
are a multiple of ``WIDE``, takes 64-lane tiles on a plane of any size, in the "channels"
order, in one pass over the input channels where a tile's weights fit
``WIDE_MAX_TILE_WEIGHT_BYTES`` (else in channel blocks); with it off such a plane keeps 16-lane
tiles in rows. The kernels match numpy at batch 1 and 4
(images on the pool), on one and two threads, with a residual epilogue."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, run_graph

from minitvm.backend import kernel_cache
from minitvm.schedule import conv_lanes
from minitvm.schedule.common import host_key, vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _geometry(c, o, hw, s=2, k=3, p=1, groups=1):
    oh = (hw + 2 * p - k) // s + 1
    return dict(n=1, c=c, h=hw, w=hw, o=o, og=o // groups, real_o=o, real_og=o // groups, kh=k,
                kw=k, oh=oh, ow=oh, sh=s, sw=s, dh=1, dw=1, pt=p, pl=p, hp=(oh - 1) * s + k,
                wp=(oh - 1) * s + k, grid=oh * oh, groups=groups, cin=c * groups,
                parallel=False)


def _switch(monkeypatch, on: bool) -> None:
    table = conv_lanes.WIDE_STRIDED_ANY_PLANE
    monkeypatch.setitem(table, host_key(table), on)


@pytest.mark.parametrize("geometry, on, want", [
    (dict(c=128, o=256, hw=28), (64, 0, "channels"), (16, None, None)),
    (dict(c=32, o=64, hw=112), (64, 0, "channels"), (16, None, None)),
    # a tile's weights past WIDE_MAX_TILE_WEIGHT_BYTES: in blocks of channels
    (dict(c=512, o=512, hw=28), (64, conv_lanes.CHANNEL_BLOCK_BYTES, "channels"),
     (16, None, None)),
    (dict(c=96, o=96, hw=56), (16, None, None), (16, None, None)),  # 96: not a multiple of 64
    (dict(c=64, o=64, hw=56, s=1), (64, 0, None), (64, 0, None)),  # stride 1: WIDE already
    (dict(c=32, o=64, hw=56, k=5, p=2), (32, None, None), (32, None, None)),  # 25 taps
    (dict(c=16, o=64, hw=112), (16, None, None), (16, None, None)),  # 16 input channels
])
def test_default_knobs(geometry, on, want, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    for switch, (width, cblock, order) in ((True, on), (False, want)):
        _switch(monkeypatch, switch)
        knobs = conv_lanes.default_knobs(_geometry(**geometry))
        assert knobs["lanes_width"] == width
        if cblock is not None:
            assert knobs["lanes_cblock"] == cblock
        if order is not None:
            assert knobs["lanes_order"] == order


def test_grouped_convs_keep_their_tiles(monkeypatch):
    """A grouped conv (groups of 64 output channels) is not taken: only groups 1 was measured."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    _switch(monkeypatch, True)
    assert not conv_lanes.wide_strided_tiles(_geometry(64, 128, 56, groups=2))
    assert conv_lanes.wide_strided_tiles(_geometry(64, 128, 56))


def _tile_widths(kernel) -> set[int]:
    return {int(s.buffer.shape[1]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


@pytest.mark.parametrize("shape, o", [
    ((1, 32, 24, 24), 64),   # 12x12 output, one pass
    ((4, 32, 20, 20), 64),   # batch 4: images on the pool
    ((1, 288, 10, 10), 64),  # 288 x 9 x 64 floats a tile: blocks of channels
])
def test_wide_strided_matches_numpy(shape, o, monkeypatch):
    _switch(monkeypatch, True)
    kernel_cache.clear_cache()
    lib, inputs, want = build_conv(shape, o, 3, (2, 2), (1, 1), (1, 1), "residual_relu",
                                   np.random.default_rng(11))
    if vector_isa() == "avx512":
        assert _tile_widths(conv_kernel(lib)) == {64}
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()
