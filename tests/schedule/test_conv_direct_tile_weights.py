"""``conv_direct``'s register tile reads its weights through a view from its first output
channel (``_tile_weights``): every tap indexes the view's row by a constant, also in the
kernel outlined for a parallel loop over the tiles. Checked on 1-D convs (a conv2d over one
row, as ``nn.conv1d`` is legalized) big enough for the pool: the view's reads and numerics
against a float64 reference at one and two threads, with short channel tiles and a residual.
Row-mode convs whose panels overhang the grid by much go to ``conv_lanes``
(``conv_direct.row_overhang``)."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, conv_prim, run_graph

from minitvm.backend import kernel_cache
from minitvm.schedule import conv_direct
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order_visit, walk_stmts


@pytest.fixture(autouse=True)
def fresh_kernels():
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _tile_reads(prim):
    """The first index of every load of a ``w_tile`` view, the variables of the unrolled loops,
    and whether a loop is parallel."""
    firsts = []

    def visit(node):
        if isinstance(node, E.BufferLoad) and node.buffer.name == "w_tile":
            firsts.append(node.indices[0])

    post_order_visit(prim.body, visit)
    loops = [s for s in walk_stmts(prim.body) if isinstance(s, S.For)]
    unrolled = {id(s.loop_var) for s in loops if s.kind == S.ForKind.UNROLLED}
    return firsts, unrolled, any(s.kind == S.ForKind.PARALLEL for s in loops)


@pytest.fixture
def no_overhang_switch(monkeypatch):
    """Row-mode convs stay in ``conv_direct`` however far their panels overhang."""
    monkeypatch.setattr(conv_direct, "ROW_OVERHANG_LANES", {"avx512": 0, "avx2": 0})


@pytest.mark.parametrize("c,o,width,k,epi", [
    (96, 96, 48, 5, "bias_relu"),       # VITS's text encoder conv: 12-channel tiles
    (96, 100, 48, 7, "residual_relu"),  # two short tiles of 8 after 8 full ones
    (64, 64, 256, 7, "none"),           # its decoder's conv
])
def test_tile_weights_in_parallel_tiles_match_reference(c, o, width, k, epi, no_overhang_switch):
    lib, feeds, want = build_conv((1, c, 1, width), o, (1, k), pads=(0, k // 2), epi=epi)
    prim = conv_prim(lib)
    firsts, unrolled, parallel = _tile_reads(prim)
    assert parallel, "the conv should be big enough to split over the pool"
    # (each row of the tile a constant once its unrolled loop is unrolled: no tile variable)
    assert firsts and all(isinstance(i, E.IntImm) or id(i) in unrolled for i in firsts)
    for threads in (1, 2):
        got = run_graph(lib, feeds, threads)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("grid,overhang", [(48, True), (16, True), (80, False), (112, False),
                                           (256, False)])
def test_row_overhang_a_quarter_of_the_grid(grid, overhang, monkeypatch):
    """Panels of 32 pixels over a row of ``grid``: to ``conv_lanes`` from a quarter more."""
    monkeypatch.setattr(conv_direct, "ROW_OVERHANG_LANES", {"avx512": 4, "avx2": 4})
    g = dict(rows_mode=True, nr=32, grid=grid, panels=-(-grid // 32))
    assert conv_direct.row_overhang(g) == overhang
    assert not conv_direct.row_overhang(dict(g, rows_mode=False))
    monkeypatch.setattr(conv_direct, "ROW_OVERHANG_LANES", {"avx512": 0, "avx2": 0})
    assert not conv_direct.row_overhang(g)


def test_overhanging_row_conv_on_lanes_matches_reference(monkeypatch):
    """VITS's 96 -> 96 k5 conv over 48 pixels with the switch on: its weight is packed for
    ``conv_lanes`` (where the host's tile overhangs: AVX-512's 32 pixels), same numerics."""
    monkeypatch.setattr(conv_direct, "ROW_OVERHANG_LANES", {"avx512": 4, "avx2": 4})
    lib, feeds, want = build_conv((1, 96, 1, 48), 96, (1, 5), pads=(0, 2), epi="residual_relu")
    lanes = conv_direct.default_tile()[1] == 32
    assert bool(conv_kernel(lib).input_packs) == lanes
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, feeds, threads), want, rtol=1e-4, atol=1e-3)
