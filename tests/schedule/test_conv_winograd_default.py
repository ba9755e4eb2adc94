"""``conv_winograd``'s default on AVX-512 (``default_choice``): the block size and register
tile width of the largest estimated gain over the direct conv (the multiplies saved times the
share of computed tiles that are the plane's), and Winograd only where that gain and the conv's
work are large enough; AVX2 keeps the largest block and ``NR`` wherever the schedule applies
but for small outputs of fewer channels than the input (``DIRECT_SMALL_OUTPUT``).
The convs whose untuned path changed match a float64 reference at one and two threads. On
AVX-512 the matrices V and M are padded to an odd number of cache lines each; convs whose
matrices were multiples of 4 KB match the reference padded and not."""

import pytest
from test_conv_winograd import _build, _check, _conv, _stage, _uses_winograd

from minitvm.schedule import conv_winograd, knobs, tunable
from minitvm.schedule.lower import LoweringOptions


def _conv_stage(c, o, h, w):
    return _stage((1, c, h, w), (o, c, 3, 3), 1, 1, 1)


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv_winograd, "vector_isa", lambda: "avx512")


@pytest.mark.parametrize("c,o,h,w,want", [
    (64, 64, 56, 56, ("winograd", 4, 32)),  # ResNet-50's stages keep their default
    (128, 128, 28, 28, ("winograd", 4, 32)),
    (256, 256, 14, 14, ("winograd", 2, 32)),
    (128, 128, 4, 32, ("winograd", 2, 32)),  # 8 tiles at m = 4, 32 (a whole tile) at 2
    (256, 256, 16, 16, ("winograd", 4, 16)),  # 16 tiles at m = 4: the 16-wide tile
    (64, 64, 16, 16, ("winograd", 4, 16)),
    (256, 64, 28, 28, ("winograd", 4, 16)),  # a band of 5 of 7 tile rows at 32 wide
    (64, 16, 16, 16, ("direct", 4, 16)),  # under 2^22 multiply-adds
    (64, 64, 8, 8, ("direct", 2, 16)),  # 16 tiles: under 2^22 multiply-adds
    # a band's V capped: 96 tiles computed for 49 at 32 wide, 64 at 16 (its gain 1.46)
    (512, 512, 14, 14, ("direct", 2, 16)),
])
def test_avx512_default_follows_the_estimated_gain(avx512, c, o, h, w, want):
    t = _conv_stage(c, o, h, w)
    k = conv_winograd.default_knobs(t)
    assert (k.get("impl", "direct"), k["wino_m"], k["wino_nr"]) == want
    _, space = tunable.conv2d_space(t, LoweringOptions())
    assert space.default()["impl"] == want[0]
    # the tuner still offers both implementations and every block size and tile width
    assert {"direct", "winograd"} <= set(space.values("impl"))
    assert set(space.values("wino_m")) == set(conv_winograd.block_sizes(t))
    assert set(space.values("wino_nr")) == {16, 32}


@pytest.mark.parametrize("c,o,h,w", [(512, 512, 14, 14), (128, 128, 4, 32), (64, 64, 8, 8),
                                     (16, 16, 16, 16), (64, 16, 32, 32), (128, 24, 14, 14)])
def test_avx2_default_is_the_largest_block(monkeypatch, c, o, h, w):
    monkeypatch.setattr(conv_winograd, "vector_isa", lambda: "avx2")
    t = _conv_stage(c, o, h, w)
    k = conv_winograd.default_knobs(t)
    assert k == dict(impl="winograd", wino_m=max(conv_winograd.block_sizes(t)), wino_nr=16)


@pytest.mark.parametrize("c,o,h,w", [(64, 16, 16, 16), (64, 16, 8, 8), (256, 16, 8, 8),
                                     (64, 32, 8, 8)])
def test_avx2_small_outputs_of_fewer_channels_stay_direct(monkeypatch, c, o, h, w):
    """Fewer output than input channels and at most ``DIRECT_SMALL_OUTPUT`` output elements:
    the direct conv on AVX2 (64->16 at 16x16 was Winograd here before: measured slower in AVX2
    code); the tuner still offers Winograd."""
    monkeypatch.setattr(conv_winograd, "vector_isa", lambda: "avx2")
    t = _conv_stage(c, o, h, w)
    k = conv_winograd.default_knobs(t)
    assert "impl" not in k and k["wino_m"] == max(conv_winograd.block_sizes(t))
    _, space = tunable.conv2d_space(t, LoweringOptions())
    assert space.default()["impl"] == "direct"
    assert "winograd" in set(space.values("impl"))


def test_real_share_counts_tiles_past_the_plane(avx512):
    t = _conv_stage(64, 64, 16, 16)
    assert conv_winograd.real_share(conv_winograd.geometry(t, {"wino_m": 4, "wino_nr": 32})) \
        == 0.5  # 16 tiles in a band of 8 tile rows of 4 (one register tile of 32)
    assert conv_winograd.real_share(conv_winograd.geometry(t, {"wino_m": 4, "wino_nr": 16})) \
        == 1.0
    assert conv_winograd.real_share(conv_winograd.geometry(t, {"wino_m": 2, "wino_nr": 32})) \
        == 1.0


@pytest.mark.parametrize("shape,o,winograd", [
    ((1, 64, 16, 16), 16, False),  # densenet's 64->16: now the direct conv
    ((1, 64, 8, 8), 64, False),
    ((1, 128, 4, 32), 128, True),  # F(2x2) on AVX-512 (F(4x4) before)
    ((1, 128, 16, 16), 128, True),  # the 16-wide tile on AVX-512
    ((1, 64, 16, 16), 64, True),  # 16 wide
])
def test_changed_defaults_match_reference(avx512, shape, o, winograd):
    mod, params, inputs, want = _conv(shape, o, 1, "residual_relu")
    lib = _build(mod, params)
    assert _uses_winograd(lib) == winograd
    _check(lib, inputs, want, rtol=5e-5)


def test_padded_is_an_odd_number_of_lines(monkeypatch):
    for isa, pad in (("avx512", True), ("avx2", False)):
        monkeypatch.setattr(conv_winograd, "vector_isa", lambda isa=isa: isa)
        for n in (1, 16, 17, 1024, 2048, 36 * 64, 64 * 32, 49 * 128):
            got = conv_winograd.padded(n)
            if pad:
                assert got >= n and got % 16 == 0 and got // 16 % 2 == 1 and got - n < 32
            else:
                assert got == n


@pytest.mark.parametrize("pad", [True, False])
@pytest.mark.parametrize("shape,o", [((1, 64, 32, 32), 16), ((1, 32, 32, 32), 32)])
def test_padded_matrices_match_reference(monkeypatch, pad, shape, o):
    """Bands of 32 tiles at F(4x4): V[xi] of 64 x 32 and M[xi] of 32 x 32 floats, 8 and 4 KB."""
    monkeypatch.setitem(conv_winograd.PAD_MATRICES, conv_winograd.vector_isa(), pad)
    t = _stage(shape, (o, shape[1], 3, 3), 1, 1, 1)
    g = conv_winograd.geometry(t, {"wino_m": 4, "wino_nr": 32})
    assert g["tiles"] == 32
    assert (g["vstride"] // 16 % 2 == 1) == pad
    mod, params, inputs, want = _conv(shape, o, 1, "residual_relu")
    tracer = knobs.KnobTable(trace=True)
    _build(mod, params, tracer)
    table = knobs.KnobTable({k: {"impl": "winograd", "wino_m": 4, "wino_nr": 32}
                             for k in tracer.seen})
    lib = _build(mod, params, table)
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=5e-5)
