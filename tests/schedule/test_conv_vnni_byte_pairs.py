"""``conv_vnni`` on an AVX2 host without VNNI: uint8 data and an int8 weight run as int16 pairs
(``conv_vnni.BYTE_PAIRS``: the bytes zero-extended as the input is packed, the weight
sign-extended as it is packed, ``vpmaddwd``), exactly numpy's int64 convolution: channel tiles
(3x3, strides, uneven padding, odd channel counts), 1x1 convs with pixels in the lanes (AVX2
tiles of ``AVX2_PIXEL_TILE``), a weight given at run time, a fused requantizing epilogue, two
threads. On AVX-512 with VNNI the same convs stay ``BYTES`` (``vpdpbusd``) in 8 x 3 tiles."""

import numpy as np
import pytest
from conv_reference import conv_kernel, requantize_uint8, run_graph
from schedule_isa import force_isa
from test_conv_vnni_pairs import conv_int64

import minitvm as tvm
from minitvm import relay
from minitvm.frontend_common import onnx_quant
from minitvm.runtime import jit
from minitvm.schedule import conv_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_avx2 = pytest.mark.skipif(not jit.host_has("avx2"), reason="the host has no AVX2")


@pytest.fixture
def avx2(monkeypatch):
    """Schedules made as on an AVX2 host without VNNI."""
    force_isa(monkeypatch, "avx2")
    monkeypatch.setattr(conv_vnni, "available", lambda: False)


def _conv(x_shape, w, s, pads, const_weight=True, epilogue=False):
    x = relay.var("x", shape=x_shape, dtype="uint8")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype="int8")
    y = relay.nn.conv2d(x, wv, strides=(s, s), padding=pads, channels=w.shape[0],
                        kernel_size=w.shape[2:], out_dtype="int32")
    if epilogue:  # (a zero point's share subtracted per channel, scaled, requantized)
        corr = (np.arange(w.shape[0], dtype="int32") * 100).reshape(1, -1, 1, 1)
        y = requantize_uint8(relay.multiply(relay.cast(relay.subtract(y, relay.const(corr)),
                                                       "float32"),
                                            relay.const(np.float32(0.5))))
    params = [x] if const_weight else [x, wv]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(conv_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


def _case(shape, o, k, seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (o, shape[1], k, k)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    x[0, 0, -1, -1], x[0, -1, 0, 0], w[0, 0, -1, -1], w[0, -1, 0, 0] = 255, 255, -128, -128
    return x, w


def _one_conv(k: int):
    """A 16 -> 16 uint8 conv of a ``k`` x ``k`` int8 weight at 8x8, type-inferred."""
    w = np.ones((16, 16, k, k), "int8")
    x = relay.var("x", shape=(1, 16, 8, 8), dtype="uint8")
    y = relay.nn.conv2d(x, relay.const(w), channels=16, kernel_size=(k, k), out_dtype="int32")
    return w, relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))


def test_words_and_tiles_by_isa():
    """uint8 convs are int16 pairs in 4 x 1 pixel tiles on AVX2 without VNNI (and the importers
    then take the integer conv), bytes in 8 x 3 tiles on AVX-512 with VNNI (their code is
    made, not run here). On AVX2 the channel-lanes tiles (3x3) keep the weight as int8 pairs
    (``BYTE_PAIRS``: 2 bytes a lane), the pixel-lanes ones (1x1) as int16 pairs
    (``WIDE_BYTE_PAIRS``: 4 bytes a lane, a broadcast word)."""
    w, _ = _one_conv(1)
    cases = (("avx2", False, 1, conv_vnni.BYTE_PAIRS, conv_vnni.WIDE_BYTE_PAIRS, (4, 1), 4),
             ("avx2", False, 3, conv_vnni.BYTE_PAIRS, conv_vnni.BYTE_PAIRS, (4, 1), 2),
             ("avx512", True, 1, conv_vnni.BYTES, conv_vnni.BYTES, (8, 3), 4),
             ("avx512", True, 3, conv_vnni.BYTES, conv_vnni.BYTES, (8, 3), 4))
    for isa, vnni, k, words, packed_as, tile, lane in cases:
        with pytest.MonkeyPatch.context() as mp:
            force_isa(mp, isa)
            mp.setattr(conv_vnni, "available", lambda vnni=vnni: vnni)
            mp.setattr(conv_vnni, "pairs_available", lambda: True)
            assert conv_vnni.row_words("uint8") is words
            assert conv_vnni.pixel_tile() == tile
            assert onnx_quant.vnni_conv("uint8", None, "int8", w, None, 1, 16)
            shape, pack = conv_vnni.packed_weight(_stage(_one_conv(k)[1]))
            assert pack.words == conv_vnni.kind_name(packed_as)
            assert shape == (1, 16 // words.per_word, k, k, 16, lane)
    with pytest.MonkeyPatch.context() as mp:  # (AVX2 without VNNI: the float32 conv stays)
        force_isa(mp, "avx2")
        mp.setattr(conv_vnni, "available", lambda: False)
        mp.setattr(conv_vnni, "pairs_available", lambda: False)
        assert not onnx_quant.vnni_conv("uint8", None, "int8", w, None, 1, 16)


def _stage(mod):
    """The conv2d stage of ``mod``'s one conv, as the schedule sees it."""
    from minitvm.relay.backend import te_compiler

    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


CASES = [  # (input shape, output channels, kernel, stride, pads (t, l, b, r))
    ((1, 13, 7, 6), 24, 3, 1, (0, 1, 2, 0)),    # channel tiles: odd channels, uneven padding
    ((1, 3, 11, 11), 16, 3, 2, (0, 0, 1, 1)),   # a stem: 3 channels (a half word), stride 2
    ((1, 17, 8, 9), 40, 1, 1, (0, 0, 0, 0)),    # 1x1: pixels in the lanes, a last tile of 2
    # 1x1 of a plane under a vector (channel lanes: int8 pairs, three channel tiles, the first
    # pixel tile prefetching the next one's weight, clamped at its end), odd pixels
    ((1, 33, 3, 3), 40, 1, 1, (0, 0, 0, 0)),
    ((1, 5, 1, 7), 17, 1, 1, (0, 0, 0, 0)),     # one row of 7 pixels, 17 outputs (a tail of 1)
]


@needs_avx2
@pytest.mark.parametrize("shape, o, k, s, pads", CASES)
def test_byte_pairs_conv_is_exact(avx2, shape, o, k, s, pads):
    x, w = _case(shape, o, k, o + k)
    want = conv_int64(x, w, (s, s), pads, (1, 1))
    lib = _conv(shape, w, s, pads)
    np.testing.assert_array_equal(run_graph(lib, {"x": x}, 1), want.astype("int32"))
    names = _names(lib)
    pixel_lanes = k == 1 and shape[2] * shape[3] >= 16  # (these cases: stride 1, no padding)
    assert "x_vnni" in names and ("vp_acc" if pixel_lanes else "vn_acc") in names
    prim = conv_kernel(lib).prim_func
    shapes = [tuple(int(v) for v in prim.buffer_map[p].shape) for p in prim.params]
    # (channel tiles: int8 pairs; pixel lanes: int16 pairs seen as int8)
    assert (-(-o // 16), -(-shape[1] // 2), k, k, 16, 4 if pixel_lanes else 2) in shapes


@needs_avx2
@pytest.mark.parametrize("k", [1, 3])
def test_byte_pairs_conv_weight_at_run_time_and_epilogue(avx2, k):
    """A weight that is no constant is packed by the kernel into int16 pairs (``w_vnni``); a
    requantizing epilogue is applied in the tile's store; two threads."""
    shape, o = (1, 21, 8, 8), 32
    x, w = _case(shape, o, k, 5)
    pads = (k // 2,) * 4
    want = conv_int64(x, w, (1, 1), pads, (1, 1))
    lib = _conv(shape, w, 1, pads, const_weight=False)
    np.testing.assert_array_equal(run_graph(lib, {"x": x, "w": w}, 2), want.astype("int32"))
    assert "w_vnni" in _names(lib)
    lib = _conv(shape, w, 1, pads, epilogue=True)
    scaled = (want - np.arange(o).reshape(1, -1, 1, 1) * 100) * 0.5
    expect = np.clip(np.round(scaled.astype("float32") * np.float32(1 / 4096)) + 100, 0, 255)
    np.testing.assert_array_equal(run_graph(lib, {"x": x}, 2), expect.astype("uint8"))


def test_pack_weight_byte_pairs_layout():
    """``PackWeight`` of BYTE_PAIRS: ``[O/16, C/2, KH, KW, 16, 2]`` int8 (the pairs kept as
    bytes, sign-extended as the dot loads them), element ``[ob, c2, ky, kx, l, k]`` the weight
    at output channel ``16*ob + l``, input channel ``2*c2 + k`` (zero past the channels)."""
    w = np.random.default_rng(1).integers(-128, 128, (24, 5, 2, 3)).astype("int8")
    p = conv_vnni.PackWeight(24, 5, 2, 3, conv_vnni.kind_name(conv_vnni.BYTE_PAIRS))(w)
    assert p.shape == (2, 3, 2, 3, 16, 2) and p.dtype == np.int8
    q = p
    assert q[1, 1, 0, 2, 5, 1] == w[21, 3, 0, 2] and q[0, 0, 1, 1, 3, 0] == w[3, 0, 1, 1]
    assert not q[:, 2, :, :, :, 1].any() and not q[1, :, :, :, 8:].any()


def test_channel_tiles_by_isa():
    """AVX2's channel-lanes tiles of a filter of several columns hold at most ``AVX2_PIXELS``
    (4) pixels, sizes differing by one at most; 1x1 filters there, and AVX-512 (its tile
    groups are made, not run, here), keep 6s and 5s."""
    for isa, kw, most in (("avx2", 3, conv_vnni.AVX2_PIXELS), ("avx2", 1, 6), ("avx512", 3, 6)):
        with pytest.MonkeyPatch.context() as mp:
            force_isa(mp, isa)
            for oh, ow in ((1, 1), (1, 3), (1, 5), (3, 3), (7, 7), (5, 8)):
                groups = conv_vnni.tile_groups(dict(oh=oh, ow=ow, kw=kw), None, None)
                sizes = {p for _, p, _ in groups}
                assert sum(p * c for _, p, c in groups) == oh * ow
                assert max(sizes) <= most and max(sizes) - min(sizes) <= 1
                if most == 6 and oh * ow >= 20:
                    assert sizes <= {5, 6}


@needs_avx2
@pytest.mark.parametrize("hw, o", [((1, 1), 16), ((1, 3), 24), ((2, 2), 16), ((1, 5), 40),
                                   ((3, 3), 16), ((7, 7), 32), ((5, 4), 16)])
def test_avx2_channel_tiles_at_edge_sizes(avx2, hw, o):
    """3x3 convs (padding 1) whose planes are 1, 3, 4, 5, 9, 49 and 20 pixels: full tiles of
    4, last tiles of 3, 2 or 1, exactly numpy's int64 conv."""
    shape = (1, 7, *hw)
    x, w = _case(shape, o, 3, hw[0] * 10 + hw[1])
    want = conv_int64(x, w, (1, 1), (1, 1, 1, 1), (1, 1))
    lib = _conv(shape, w, 1, (1, 1, 1, 1))
    np.testing.assert_array_equal(run_graph(lib, {"x": x}, 1), want.astype("int32"))
    assert "vn_acc" in _names(lib)
