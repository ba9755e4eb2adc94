"""``conv_winograd``'s bands of several whole images (``IMAGE_BAND_BYTES``, AVX2): a batch of
small planes runs its GEMM panels across the tiles of a few images, so fewer tiles are computed
past the plane. ``band_images`` takes the divisor of the batch that computes the fewest tiles an
image within the budget (leaving at least ``INNER_PARALLEL_BELOW`` bands for the pool where the
bands run there); AVX-512 keeps one image a band; such convs (odd planes, channel tails, no
padding, a residual epilogue, bands on the pool) match a float64 reference at one and two
threads."""

import pytest
from conv_reference import knob_table
from schedule_isa import force_isa
from test_conv_winograd import _build, _check, _conv, _stage, _uses_winograd

from minitvm.schedule import conv_winograd


@pytest.fixture
def avx2(monkeypatch):
    force_isa(monkeypatch, "avx2")


@pytest.mark.parametrize("n,th,tw,rows,parallel,want", [
    (32, 7, 7, 4, False, 4),  # 14x14 at F(2x2): 4 images, 196 tiles in 13 panels of 16
    (32, 7, 7, 4, True, 4),  # 8 bands left for the pool
    (8, 7, 7, 4, True, 2),  # 4 images would leave 2 bands for the pool
    (1, 7, 7, 4, False, 1),  # one image
    (6, 5, 5, 5, False, 3),  # 25 tiles an image: 75 in 5 panels
    (8, 8, 8, 2, False, 1),  # bands of 16 tiles already whole panels
    (5, 7, 7, 4, False, 5),  # a prime batch: all of it, 245 tiles (256 computed)
    (7, 7, 7, 4, False, 1),  # all 7 would pass the budget
])
def test_band_images_fewest_tiles_an_image(avx2, n, th, tw, rows, parallel, want):
    tile_bytes = 16 * (16 + 32) * 4
    assert conv_winograd.band_images(n, th, tw, 16, rows, tile_bytes, parallel) == want


def test_band_images_within_the_budget(avx2, monkeypatch):
    monkeypatch.setitem(conv_winograd.IMAGE_BAND_BYTES, "avx2", 2 * 49 * 1000)
    assert conv_winograd.band_images(32, 7, 7, 16, 4, 1000) == 2
    monkeypatch.setitem(conv_winograd.IMAGE_BAND_BYTES, "avx2", 0)
    assert conv_winograd.band_images(32, 7, 7, 16, 4, 1000) == 1


def test_avx512_keeps_one_image_a_band(monkeypatch):
    force_isa(monkeypatch, "avx512")
    g = conv_winograd.geometry(_stage((32, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1))
    assert (g["imgs"], g["tiles"], g["tasks"]) == (1, g["rows"] * 7, 32 * g["bands"])


def test_avx2_soft_decision_tree_conv_takes_four_images(avx2):
    g = conv_winograd.geometry(_stage((32, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1))
    assert (g["imgs"], g["rows"], g["tiles"], g["tasks"]) == (4, 7, 196, 8)
    assert conv_winograd.real_share(g) == pytest.approx(196 / 208)


CASES = [  # (input shape, output channels, padding, epilogue, F(m), images a band)
    ((8, 16, 14, 14), 32, 1, "bias_relu", 2, 2),  # soft_decision_tree's conv, bands on the pool
    ((4, 16, 14, 14), 16, 1, "residual_relu", 2, 4),  # one band of the whole batch
    ((6, 17, 10, 10), 19, 1, "bias_relu", 2, 3),  # channel tails, 5x5 tiles
    ((4, 17, 16, 12), 19, 0, "residual_relu", 2, 4),  # no padding, 14x10 output
    ((2, 16, 17, 17), 16, 1, "bias_relu", 2, 2),  # ragged rows (17: 9 blocks of 2)
    ((4, 16, 11, 16), 16, 1, "none", 4, 4),  # F(4x4), each image's last tile row past it
]


@pytest.mark.parametrize("shape,o,pad,epi,m,imgs", CASES)
def test_bands_of_images_match_reference(avx2, shape, o, pad, epi, m, imgs):
    g = conv_winograd.geometry(_stage(shape, (o, shape[1], 3, 3), 1, pad, 1), {"wino_m": m})
    assert g["imgs"] == imgs
    mod, params, inputs, want = _conv(shape, o, pad, epi)
    lib = _build(mod, params, knob_table(mod, params, impl="winograd", wino_m=m))
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=1e-5 if m == 2 else 5e-5)
