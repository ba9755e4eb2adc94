"""``conv_winograd``'s GEMM panels: whole ``nr``-wide register tiles, then one tail panel only
as wide as the tiles left (``tail_width``), moved back to end at the band's last tile; the band
size counts that tail; the panels run per ``xi`` with the output-channel tiles innermost. Built
convs at both tile widths (16, 32), with bands whose tile count leaves no tail, a tail of at
most 16 and one of more, match a float64 reference at one and two threads."""

import pytest
from conv_reference import knob_table
from test_conv_winograd import _build, _check, _conv, _stage, _uses_winograd

from minitvm.schedule import conv_winograd


@pytest.mark.parametrize("left,nr,want", [
    (0, 32, 0), (1, 32, 16), (16, 32, 16), (17, 32, 32), (31, 32, 32),
    (0, 16, 0), (5, 16, 16), (15, 16, 16)])
def test_tail_width_is_the_fewest_vectors_of_16(left, nr, want):
    assert conv_winograd.tail_width(left, nr) == want


def test_band_rows_counts_the_tail_panel(monkeypatch):
    # 14 x 14 tiles (64 -> 64 at 56x56, F(4x4)), 9216 bytes a tile: at most 8 rows a band.
    # At nr = 32 bands of 7 rows (98 tiles: 3 x 32 + a tail of 16) compute 224 tiles in all,
    # as at nr = 16; with the last panel a whole 32 moved back they computed 256
    monkeypatch.setattr(conv_winograd, "BAND_BYTES", 1024 * 1024)
    monkeypatch.setitem(conv_winograd.BAND_SLACK, conv_winograd.vector_isa(), 0.0)

    def computed(rows, nr):
        tiles = rows * 14
        return -(-14 // rows) * (tiles // nr * nr + conv_winograd.tail_width(tiles % nr, nr))

    assert computed(conv_winograd.band_rows(14, 14, 16, 9216), 16) == 224
    rows = conv_winograd.band_rows(14, 14, 32, 9216)
    assert rows * 14 >= 32 and computed(rows, 32) == 224
    assert -(-14 // rows) * -(-rows * 14 // 32) * 32 > 224


def test_band_rows_slack_takes_smaller_bands(monkeypatch):
    """Within ``BAND_SLACK`` of the fewest tiles, the most bands: 64 -> 64 at 56x56 in 5
    bands of 3 tile rows (240 tiles, 7% more than 224) at a slack of 0.1; none at 0.05."""
    monkeypatch.setattr(conv_winograd, "BAND_BYTES", 1024 * 1024)
    isa = conv_winograd.vector_isa()
    monkeypatch.setitem(conv_winograd.BAND_SLACK, isa, 0.1)
    assert conv_winograd.band_rows(14, 14, 32, 9216) == 3
    monkeypatch.setitem(conv_winograd.BAND_SLACK, isa, 0.05)
    assert conv_winograd.band_rows(14, 14, 32, 9216) in (7, 8)
    # 128 -> 128 at 28x28 (7 x 7 tiles): one band of 49 (64 computed); two bands compute 96
    monkeypatch.setitem(conv_winograd.BAND_SLACK, isa, 0.1)
    assert conv_winograd.band_rows(7, 7, 32, 36 * 128 * 4) == 7


def test_default_tile_width_by_isa(monkeypatch):
    t = _stage((1, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1)
    for isa, nr in (("avx512", 32), ("avx2", 16)):
        monkeypatch.setattr(conv_winograd, "vector_isa", lambda isa=isa: isa)
        assert conv_winograd.default_knobs(t)["wino_nr"] == nr
        assert conv_winograd.geometry(t)["nr"] == nr


PANEL_CASES = [  # (input shape, output channels, F(m), a band's tiles % 32 at nr = 32 with a
    # BAND_SLACK of 0.1)
    ((1, 32, 32, 32), 24, 4, 0),  # bands of 32 tiles: whole panels only
    ((1, 16, 28, 28), 17, 4, 17),  # 7 x 7 = 49 tiles: a 32-wide tail over 15 of the panel's
    ((1, 24, 56, 56), 16, 4, 2),  # two bands of 98 tiles: a 16-wide tail
    ((2, 20, 14, 14), 32, 2, 17),  # F(2x2), 49 tiles, batch 2
    ((1, 16, 10, 40), 16, 2, 4),  # 5 x 20 tiles: a 16-wide tail
]


@pytest.mark.parametrize("nr", [16, 32])
@pytest.mark.parametrize("shape,o,m,left", PANEL_CASES)
def test_panels_and_tails_match_reference(shape, o, m, left, nr, monkeypatch):
    monkeypatch.setitem(conv_winograd.BAND_SLACK, conv_winograd.vector_isa(), 0.1)
    # (one image a band, as the cases count their tiles: bands of whole images are
    # test_conv_winograd_images.py's)
    monkeypatch.setitem(conv_winograd.IMAGE_BAND_BYTES, conv_winograd.vector_isa(), 0)
    t = _stage(shape, (o, shape[1], 3, 3), 1, 1, 1)
    g = conv_winograd.geometry(t, {"wino_m": m, "wino_nr": nr})
    assert g is not None
    if nr == 32:
        assert g["tiles"] % 32 == left
    mod, params, inputs, want = _conv(shape, o, 1, "residual_relu" if m == 4 else "bias_relu")
    table = knob_table(mod, params, impl="winograd", wino_m=m, wino_nr=nr)
    lib = _build(mod, params, table)
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=1e-5 if m == 2 else 5e-5)


@pytest.mark.parametrize("inner", [True, False])
@pytest.mark.parametrize("shape,o,m,left", PANEL_CASES[1:4])
def test_both_gemm_loop_orders_match_reference(shape, o, m, left, inner, monkeypatch):
    """The channel tiles innermost (AVX-512) or outermost (AVX2's order, its last panel a
    whole one moved back), at the host's tile width."""
    monkeypatch.setitem(conv_winograd.CHANNEL_TILES_INNER, conv_winograd.vector_isa(), inner)
    mod, params, inputs, want = _conv(shape, o, 1, "residual_relu")
    table = knob_table(mod, params, impl="winograd", wino_m=m)
    lib = _build(mod, params, table)
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=1e-5 if m == 2 else 5e-5)


HALF_TAIL_CASES = [  # (input shape, output channels, F(m)): the tiles of a row, vectors of them
    ((1, 16, 47, 47), 20, 4),  # 12 tiles: 8 + a half vector of 4 (Inception's 47x47)
    ((1, 16, 47, 47), 16, 2),  # 24 tiles: 16 + 8
    ((2, 16, 6, 80), 16, 2),  # 40 tiles: 16, 16 + 8 (a loop of whole vectors), batch 2
    ((1, 16, 35, 35), 16, 4),  # 9 tiles: 8 + 4 over 3 of the 8's, a ragged row (35 of 36)
    ((1, 16, 56, 56), 16, 4),  # 14 tiles: 6 left, more than half: 8 + 8 moved back
]


@pytest.mark.parametrize("half", [True, False])
@pytest.mark.parametrize("shape,o,m", HALF_TAIL_CASES)
def test_half_vector_tail_matches_reference(shape, o, m, half, monkeypatch):
    """The transforms' last vector of a row half as wide where the tiles left fit it
    (``HALF_TAIL``, on for AVX-512), or a whole one moved back (AVX2's)."""
    monkeypatch.setitem(conv_winograd.HALF_TAIL, conv_winograd.vector_isa(), half)
    mod, params, inputs, want = _conv(shape, o, 1, "residual_relu")
    table = knob_table(mod, params, impl="winograd", wino_m=m)
    lib = _build(mod, params, table)
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=1e-5 if m == 2 else 5e-5)
