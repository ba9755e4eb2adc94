"""``conv_lanes.FEW_TAPS_MAX``: on AVX-512 a stride-1, groups-1 conv of at most that many taps
an output (input channels x filter taps: an RGB or grayscale stem on a plane ``conv_direct``
leaves to ``conv_lanes``) takes 16-lane tiles by default, whatever width its output channels
would allow; more taps, a stride, groups or the switch at 0 keep the wider tiles. On AVX2 the
same convs are of few taps with their tiles unchanged (16 lanes the only width). The kernels
match numpy at batch 1 and 3 (images on the pool), on one and two threads."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, run_graph

from minitvm.backend import kernel_cache
from minitvm.schedule import conv_lanes
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _geometry(c, o, hw, s=1, k=3, p=1, groups=1):
    oh = (hw + 2 * p - k) // s + 1
    return dict(n=1, c=c, h=hw, w=hw, o=o, og=o // groups, real_o=o, real_og=o // groups, kh=k,
                kw=k, oh=oh, ow=oh, sh=s, sw=s, dh=1, dw=1, pt=p, pl=p, hp=(oh - 1) * s + k,
                wp=(oh - 1) * s + k, grid=oh * oh, groups=groups, cin=c * groups,
                parallel=False)


@pytest.mark.parametrize("geometry, few, width_else", [
    (dict(c=3, o=32, hw=28), True, 32),          # 27 taps: the ProtoNet stem
    (dict(c=1, o=32, hw=28), True, 32),          # 9 taps: grayscale
    (dict(c=4, o=32, hw=28), False, 32),         # 36 taps: past the limit (32)
    (dict(c=1, o=32, hw=28, k=5, p=2), True, 32),  # 25 taps
    (dict(c=3, o=64, hw=28), True, 64),          # WIDE by default otherwise
    (dict(c=3, o=48, hw=27), True, 48),          # ODD_WIDTH otherwise
    (dict(c=8, o=32, hw=28), False, 32),         # 72 taps
    (dict(c=3, o=32, hw=28, k=5, p=2), False, 32),  # 75 taps
    (dict(c=3, o=32, hw=57, s=2), False, None),  # strided: not measured
    (dict(c=4, o=64, hw=28, groups=2), False, None),  # grouped: not measured
])
def test_default_width(geometry, few, width_else, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    g = _geometry(**geometry)
    assert conv_lanes.few_taps(g) is few
    knobs = conv_lanes.default_knobs(g)
    if few:
        assert knobs["lanes_width"] == conv_lanes.LANES
    elif width_else is not None:
        assert knobs["lanes_width"] == width_else
    monkeypatch.setitem(conv_lanes.FEW_TAPS_MAX, "avx512", 0)  # switched off: the wider tile
    assert not conv_lanes.few_taps(g)
    if width_else is not None:
        assert conv_lanes.default_knobs(g)["lanes_width"] == width_else


@pytest.mark.parametrize("geometry, few", [
    (dict(c=3, o=32, hw=28), True), (dict(c=1, o=16, hw=28), True),
    (dict(c=1, o=6, hw=32, k=5, p=0), True), (dict(c=4, o=32, hw=28), False),
    (dict(c=3, o=32, hw=57, s=2), False)])
def test_avx2_few_taps_keep_their_tiles(geometry, few, monkeypatch):
    """On AVX2 (16 lanes its only width) the same convs are of few taps (what lets
    ``conv_pool`` pool in their tiles), their tiles' knobs as with the switch off."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx2")
    g = _geometry(**geometry)
    assert conv_lanes.few_taps(g) is few
    knobs = conv_lanes.default_knobs(g)
    assert knobs["lanes_width"] == conv_lanes.LANES
    monkeypatch.setitem(conv_lanes.FEW_TAPS_MAX, "avx2", 0)
    assert not conv_lanes.few_taps(g)
    assert conv_lanes.default_knobs(g) == knobs


def _tile_widths(kernel) -> set[int]:
    return {int(s.buffer.shape[1]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


@pytest.mark.parametrize("shape, o", [
    ((1, 3, 28, 28), 32),   # OW 28: not conv_direct's row mode
    ((3, 1, 13, 13), 64),   # batch 3: images on the pool; 9 taps; WIDE otherwise
])
def test_few_taps_conv_matches_numpy(shape, o):
    kernel_cache.clear_cache()
    lib, inputs, want = build_conv(shape, o, 3, (1, 1), (1, 1), (1, 1), "bias_relu",
                                   np.random.default_rng(5))
    if vector_isa() == "avx512":
        assert _tile_widths(conv_kernel(lib)) == {conv_lanes.LANES}
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()
