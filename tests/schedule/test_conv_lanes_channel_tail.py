"""``conv_lanes`` on output channels not a multiple of 16 (groups 1): the packed weight is padded
with zero channels up to whole tiles and the last tile stores only the real channels (such convs
ran on ``conv_direct`` 2.3-3.2x slower than ONNX Runtime); and on planes of 9 to 19 output
pixels. Each matches numpy (the loop orders in turn), with strides, odd planes, a batch,
dilation and the fused epilogue."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, run_graph, taking_turns

from minitvm.schedule import conv_direct, conv_lanes, conv_lanes_tile
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


@pytest.fixture(autouse=True)
def few_channels_on_lanes(monkeypatch):
    """The 3-output case stays on ``conv_lanes``, whose tail it tests: convs of at most
    ``conv_direct.FEW_CHANNELS_DIRECT_MAX`` outputs now run on ``conv_direct`` by default
    (tested in test_conv_direct_few_channels)."""
    monkeypatch.setattr(conv_direct, "FEW_CHANNELS_DIRECT_MAX", 0)


def _tile_widths(kernel) -> set[int]:
    """The output channels of the kernel's tiles (its accumulators' second axis)."""
    return {int(s.buffer.shape[1]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


CASES = [  # shape, output channels, filter, strides, padding, dilation, epilogue
    ((1, 12, 17, 17), 120, 3, (1, 1), (1, 1), (1, 1), "bias_relu"),  # 128: 64 or 32 wide
    ((1, 100, 13, 13), 100, 3, (1, 1), (1, 1), (1, 1), "residual_relu"),  # 112: 16s only
    ((1, 36, 27, 27), 44, 3, (2, 2), (1, 1), (1, 1), "residual_relu"),  # 48 wide, stride 2
    ((2, 24, 11, 9), 20, 3, (1, 1), (2, 2), (2, 2), "bias_relu"),  # 32, dilated, a batch
    ((1, 16, 10, 10), 36, 5, (1, 1), (2, 2), (1, 1), "none"),  # 5x5, no epilogue
    ((1, 8, 9, 9), 23, 3, (2, 2), (1, 1), (1, 1), "bias_relu"),  # a tail of 16 + 4 + 2 + 1
    ((1, 40, 27, 27), 12, 3, (2, 2), (1, 1), (1, 1), "residual_relu"),  # fewer than 16
    ((1, 24, 14, 14), 3, 3, (1, 1), (1, 1), (1, 1), "bias_relu"),  # 3 outputs
    # planes of fewer than 20 output pixels (not all sums of 6s and 5s): even tiles
    ((1, 64, 4, 4), 120, 3, (1, 1), (1, 1), (1, 1), "residual_relu"),  # 16 pixels
    ((1, 48, 5, 5), 64, 3, (2, 2), (1, 1), (1, 1), "bias_relu"),  # 3x3: 9 pixels
    ((1, 32, 3, 5), 96, 3, (1, 1), (1, 1), (1, 1), "bias_relu"),  # 3x5: 15 pixels
]


# (the loop orders take turns over the cases; the 100-channel case, whose input channels run in
# blocks with partial sums in the "channels" order, runs in both)
@pytest.mark.parametrize("case, order", taking_turns(CASES, conv_lanes.ORDERS, every={1}))
def test_channel_tail_matches_numpy(case, order, force_knobs):
    """Padded output channels: the conv runs on ``conv_lanes`` (its tiles in the kernel), at one
    and two threads, and the padding channels are never stored."""
    shape, o, k, strides, pads, dil, epi = case
    force_knobs(lanes_order=order)
    lib, inputs, want = build_conv(shape, o, k, strides, pads, dil, epi,
                                   np.random.default_rng(o))
    widths = _tile_widths(conv_kernel(lib))
    assert widths and all(w % conv_lanes.LANES == 0 for w in widths)
    for threads in (1, 2):
        got = run_graph(lib, inputs, threads)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("o, padded", [(20, 32), (100, 112), (120, 128), (16, 16), (64, 64)])
def test_packed_weight_pads_with_zero_channels(o, padded):
    """The weight packs as ``[O'/16, C, KH, KW, 16]`` for ``O'`` the output channels rounded
    up to 16; the added channels are zeros."""
    w = np.random.default_rng(o).standard_normal((o, 3, 3, 3)).astype("float32")
    packed = conv_lanes.PackWeight(padded, 3, 3, 3, o)(w)
    assert packed.shape == (padded // 16, 3, 3, 3, 16)
    back = packed.transpose(0, 4, 1, 2, 3).reshape(padded, 3, 3, 3)
    np.testing.assert_array_equal(back[:o], w)
    assert not back[o:].any()


@pytest.mark.parametrize("count, want", [
    (20, [(0, 16), (16, 4)]), (23, [(0, 16), (16, 4), (20, 2), (22, 1)]),
    (44, [(0, 16), (16, 16), (32, 8), (40, 4)]), (16, [(0, 16)])])
def test_last_tile_stores_in_power_of_two_pieces(count, want):
    """The last tile's real channels are stored in vectors of 16, then powers of two."""
    assert conv_lanes_tile.pieces(count) == want


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("extent", range(conv_lanes.MIN_PIXELS, 30))
def test_small_planes_are_cut_exactly(extent, width):
    """Any plane from ``MIN_PIXELS`` up is cut in tiles covering it exactly, none larger than
    ``tile_pixels``."""
    g = dict(lanes_width=width)
    groups = conv_lanes.plane_tiles(g, extent)
    sizes = [p for _, p, m in groups for _ in range(m)]
    assert sum(sizes) == extent and max(sizes) <= conv_lanes.tile_pixels(g)
    assert [f for f, _, _ in groups] == [sum(p * m for _, p, m in groups[:i])
                                         for i in range(len(groups))]
