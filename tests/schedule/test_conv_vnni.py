"""``conv_vnni``: conv2d of uint8 data and an int8 weight summed in int32 (``vpdpbusd`` on
AVX-512 VNNI). The results equal numpy's integer convolution exactly, at several shapes:
channel counts not a multiple of 4 (zero bytes in the packed input and weight), stride 2,
dilation, zero padding by the conv, a batch, 16- and 32-channel tiles, planes smaller than
a tile, output channels not a multiple of 16 (a last tile partly stored), wide rows packed a
vector at a time (``PACK_LANES``), a fused epilogue,
and a weight passed at run time (packed by the kernel). Where the host
has no VNNI (``pretend_avx2``) the same graphs run on the other schedules, as exact."""

import numpy as np
import pytest
from conv_reference import conv_kernel, conv_ref, requantize_uint8, run_graph, taking_turns
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import relay
from minitvm.schedule import conv_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _build(x_shape, w, strides, pads, dil=(1, 1), const_weight=True, epilogue=False):
    x = relay.var("x", shape=x_shape, dtype="uint8")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype="int8")
    y = relay.nn.conv2d(x, wv, strides=strides, padding=pads, dilation=dil,
                        channels=w.shape[0], kernel_size=w.shape[2:], out_dtype="int32")
    if epilogue:  # (a zero-point correction and a requantizing multiply, as the importer's)
        corr = np.arange(w.shape[0], dtype="int32").reshape(1, -1, 1, 1) * 1000
        y = relay.multiply(relay.cast(relay.subtract(y, relay.const(corr)), "float32"),
                           relay.const(np.float32(0.5)))
    if epilogue == "uint8":  # (and requantized: round, add a zero point, saturate)
        y = requantize_uint8(y)
    params = [x] if const_weight else [x, wv]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(conv_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


CASES = [  # (input shape, output channels, kernel, stride, pads (t, l, b, r), dilation)
    ((1, 64, 4, 4), 128, 3, 1, (1, 1, 1, 1), 1),   # 32-channel tiles, a plane of 16 pixels
    ((1, 18, 9, 9), 32, 3, 2, (1, 1, 1, 1), 1),    # stride 2, 18 channels (a tail of 2)
    ((1, 13, 7, 6), 16, 3, 1, (0, 1, 2, 0), 1),    # 16 wide, uneven padding, 13 channels
    ((2, 20, 12, 12), 48, 3, 1, (2, 2, 2, 2), 2),  # a batch, dilation 2, 48 = 16-wide tiles
    ((1, 64, 8, 8), 32, 1, 2, (0, 0, 0, 0), 1),    # a 1x1 conv, stride 2
    ((1, 16, 2, 2), 16, 3, 1, (1, 1, 1, 1), 1),    # a plane of 4 pixels
    ((1, 64, 16, 16), 64, 3, 1, (1, 1, 1, 1), 1),  # large enough for the thread pool
    ((1, 20, 9, 9), 24, 3, 2, (1, 1, 1, 1), 1),    # 24 output channels: a last tile of 8
    ((1, 16, 6, 6), 8, 3, 1, (1, 1, 1, 1), 1),     # 8: one tile, half of it stored
    ((1, 36, 7, 7), 40, 1, 2, (0, 0, 0, 0), 1),    # 40 = 32 + a tile of 8, 1x1 stride 2
    ((1, 6, 4, 100), 16, 3, 1, (1, 1, 1, 1), 1),   # padded rows of 102: 6 vectors + 6 words
    ((1, 18, 11, 37), 16, 3, 1, (1, 1, 1, 1), 1),  # padded rows of 39: 2 vectors + 7 words
]


# (the epilogues, none / float32 / requantized to uint8, take turns over the cases; the three
# whose last tile is partly stored run with each)
@pytest.mark.parametrize("case, epilogue", taking_turns(CASES, [False, True, "uint8"],
                                                        every={7, 8, 9}))
def test_vnni_conv_is_exact(case, epilogue):
    shape, o, k, s, pads, d = case
    rng = np.random.default_rng(o + k + shape[1])
    w = rng.integers(-128, 128, (o, shape[1], k, k)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    x[0, 0, 0, 0], w[0, 0, 0, 0] = 255, -128  # (the extremes)
    lib = _build(shape, w, (s, s), pads, (d, d), epilogue=epilogue)
    want = conv_ref(x, w, (s, s), pads, (d, d))
    if epilogue:
        want = ((want - np.arange(o).reshape(1, -1, 1, 1) * 1000) * 0.5).astype("float32")
    if epilogue == "uint8":
        want = np.clip(np.round(want * np.float32(1 / 4096)) + 100, 0, 255).astype("uint8")
    for threads in (1, 2):
        got = run_graph(lib, {"x": x}, threads)
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    if conv_vnni.available():  # the schedule took it, its weight packed as int8 at build time
        assert "vn_acc" in _names(lib)
        # no int32 conv output in memory: an epilogue (float32, or requantized to uint8: of
        # another dtype than the sums) is applied in the tile's store
        assert "conv2d" not in _names(lib)
        prim = conv_kernel(lib).prim_func
        shapes = [tuple(int(v) for v in prim.buffer_map[p].shape) for p in prim.params]
        assert (-(-o // 16), -(-shape[1] // 4), k, k, 16, 4) in shapes
        macs = o * shape[1] * k * k * got.shape[2] * got.shape[3]
        parallel = any(isinstance(st, S.For) and st.kind == S.ForKind.PARALLEL
                       for st in walk_stmts(prim.body))
        assert parallel == (macs >= conv_vnni.PARALLEL_MIN_MACS)


@pytest.mark.parametrize("o", [32, 24])
def test_vnni_conv_weight_at_run_time(o):
    """A weight that is no constant: the kernel packs it (``w_vnni``) each call (24 output
    channels: zero rows past them)."""
    rng = np.random.default_rng(3)
    shape, w = (1, 22, 6, 6), rng.integers(-128, 128, (o, 22, 3, 3)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    lib = _build(shape, w, (1, 1), (1, 1, 1, 1), const_weight=False)
    got = run_graph(lib, {"x": x, "w": w})
    np.testing.assert_array_equal(got, conv_ref(x, w, (1, 1), (1, 1, 1, 1)).astype("int32"))
    if conv_vnni.available():
        assert {"vn_acc", "w_vnni"} <= _names(lib)


def test_pack_weight_layout():
    """``PackWeight``: ``[O/16, C/4, KH, KW, 16, 4]``, element ``[ob, c4, ky, kx, l, k]`` the
    weight at output channel ``16*ob + l``, input channel ``4*c4 + k`` (zero past the last)."""
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (32, 6, 2, 3)).astype("int8")
    p = conv_vnni.PackWeight(32, 6, 2, 3)(w)
    assert p.shape == (2, 2, 2, 3, 16, 4) and p.dtype == np.int8
    assert p[1, 1, 0, 2, 5, 1] == w[21, 5, 0, 2]
    assert not p[:, 1, :, :, :, 2:].any()
    p = conv_vnni.PackWeight(24, 6, 2, 3)(w[:24])  # (output channels past 24: zero rows)
    assert p.shape == (2, 2, 2, 3, 16, 4)
    assert p[1, 1, 0, 2, 5, 1] == w[21, 5, 0, 2] and not p[1, :, :, :, 8:].any()


def test_uint8_weight_stays_off_vnni():
    """``vpdpbusd`` multiplies unsigned by signed bytes: a uint8 weight is another schedule's."""
    rng = np.random.default_rng(2)
    shape, w = (1, 16, 5, 5), rng.integers(0, 256, (16, 16, 3, 3)).astype("uint8")
    x = rng.integers(0, 256, shape).astype("uint8")
    xv = relay.var("x", shape=shape, dtype="uint8")
    y = relay.nn.conv2d(xv, relay.const(w), padding=(1, 1), channels=16, kernel_size=(3, 3),
                        out_dtype="int32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([xv], y)), target="llvm")
    np.testing.assert_array_equal(run_graph(lib, {"x": x}),
                                  conv_ref(x, w, (1, 1), (1, 1, 1, 1)).astype("int32"))
    assert "vn_acc" not in _names(lib)


ROW_CASES = [  # (input shape, output channels, kernel width, stride, pads): one output row
    ((1, 40, 1, 204), 64, 5, 2, (0, 0, 0, 0)),   # the audio net's first Conv1d (pad explicit)
    ((1, 64, 1, 100), 64, 3, 1, (0, 1, 0, 1)),   # 32-channel tiles, 100 pixels
    ((1, 20, 1, 23), 24, 3, 2, (0, 1, 0, 1)),    # 24 channels: a last tile of 8 stored
    ((1, 16, 1, 7), 16, 3, 1, (0, 1, 0, 1)),     # a row shorter than a tile's 6 pixels + 1
    ((2, 16, 1, 50), 8, 3, 1, (0, 1, 0, 1)),     # a batch; 8 channels: half a tile stored
]


# (each case with three of the five epilogues, in turn: each epilogue on three of the cases)
@pytest.mark.parametrize("case, epilogue", taking_turns(
    ROW_CASES, [False, True, "uint8", "residual", "border"], per_case=3))
def test_vnni_row_conv_stores_pixel_vectors(case, epilogue):
    """A conv over one row (a Conv1d's, ``oh == 1``) stores each output channel as vectors of
    the tile's pixels after a transpose in registers (``ROW_STORE``: ``vr_src``), the epilogue
    before the transpose, or after it for one that reads an operand at the pixel (a residual
    add); exact as numpy."""
    shape, o, k, s, pads = case
    rng = np.random.default_rng(o + k + shape[3])
    w = rng.integers(-128, 128, (o, shape[1], 1, k)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    want = conv_ref(x, w, (1, s), pads, (1, 1))
    if epilogue == "border":  # (a zero-point share per output element, requantized to uint8)
        corr = rng.integers(-5000, 5000, (1, o, 1, want.shape[3])).astype("int32")
        xv = relay.var("x", shape=shape, dtype="uint8")
        y = relay.nn.conv2d(xv, relay.const(w), strides=(1, s), padding=pads, channels=o,
                            kernel_size=(1, k), out_dtype="int32")
        y = relay.multiply(relay.cast(relay.subtract(y, relay.const(corr)), "float32"),
                           relay.const(np.float32(0.5)))
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([xv], requantize_uint8(y))),
                              target="llvm")
        feeds = {"x": x}
        want = ((want - corr) * 0.5).astype("float32")
        want = np.clip(np.round(want * np.float32(1 / 4096)) + 100, 0, 255).astype("uint8")
    elif epilogue == "residual":
        xv = relay.var("x", shape=shape, dtype="uint8")
        r = relay.var("r", shape=want.shape, dtype="int32")
        y = relay.nn.conv2d(xv, relay.const(w), strides=(1, s), padding=pads, channels=o,
                            kernel_size=(1, k), out_dtype="int32")
        y = relay.multiply(relay.cast(relay.add(y, r), "float32"), relay.const(np.float32(0.5)))
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([xv, r], y)), target="llvm")
        rv = rng.integers(-1000, 1000, want.shape).astype("int32")
        feeds = {"x": x, "r": rv}
        want = ((want + rv) * 0.5).astype("float32")
    else:
        lib = _build(shape, w, (1, s), pads, epilogue=epilogue)
        feeds = {"x": x}
        if epilogue:
            want = ((want - np.arange(o).reshape(1, -1, 1, 1) * 1000) * 0.5).astype("float32")
        if epilogue == "uint8":
            want = np.clip(np.round(want * np.float32(1 / 4096)) + 100, 0, 255).astype("uint8")
    got = run_graph(lib, feeds, 1)
    np.testing.assert_array_equal(got, want.astype(got.dtype))
    if conv_vnni.available():
        assert {"vn_acc", "vr_src"} <= _names(lib)


def test_row_tiles_for_plane_reading_epilogues():
    """One output row stored through an epilogue that reads an operand at the pixel (applied
    after the transpose, per channel, on pieces of the tile's pixels) gets ``ROW_PIXELS``-pixel
    tiles, one piece each; other rows, planes, and rows shorter than that keep 6s and 5s (on
    AVX2 too, but for filters of several columns: 4s)."""
    from minitvm.tir import expr as E

    n = E.Var("n", "int32")
    plane = E.Var("p", "int32")  # (stands for an operand read at the pixel)

    def at_pixel(idx, val):
        return E.Add(val, E.Cast("float32", idx[3] + plane))

    def per_channel(idx, val):
        return E.Add(val, E.Cast("float32", idx[1]))

    row, two_rows = dict(oh=1, ow=100), dict(oh=2, ow=50)
    eights = [(0, 8, 12), (96, 4, 1)]
    assert conv_vnni.ROW_PIXELS == 8
    assert conv_vnni.tile_groups(row, at_pixel, n) == eights
    for isa in ("avx512", "avx2"):
        with pytest.MonkeyPatch.context() as mp:
            force_isa(mp, isa)
            assert conv_vnni.tile_groups(row, at_pixel, n) == eights
            for g, epi in ((row, per_channel), (row, None), (two_rows, at_pixel)):
                assert conv_vnni.tile_groups(g, epi, n) == [(0, 6, 15), (90, 5, 2)]
            assert conv_vnni.tile_groups(dict(oh=1, ow=7), at_pixel, n) == [(0, 4, 1),
                                                                            (4, 3, 1)]
            # (a filter of several columns on AVX2: ``AVX2_PIXELS``)
            wide = conv_vnni.tile_groups(dict(two_rows, kw=3), None, n)
            assert wide == ([(0, 4, 25)] if isa == "avx2" else [(0, 6, 15), (90, 5, 2)])
    assert conv_vnni.row_tiles(16) == [(0, 8, 2)]


@pytest.mark.parametrize("residual", [False, True])
def test_vnni_plane_conv_stores_pixel_vectors(residual):
    """A 2-D conv's tiles store pixel vectors too (their pixels are consecutive in the flat
    plane, across rows: ``vr_src``), but for an epilogue that reads an operand at the pixel,
    which keeps the per-pixel channel stores; exact as numpy either way."""
    shape, o = (1, 32, 7, 9), 48
    rng = np.random.default_rng(8)
    w = rng.integers(-128, 128, (o, 32, 3, 3)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    want = conv_ref(x, w, (1, 1), (1, 1, 1, 1), (1, 1))
    xv = relay.var("x", shape=shape, dtype="uint8")
    r = relay.var("r", shape=want.shape, dtype="int32")
    y = relay.nn.conv2d(xv, relay.const(w), padding=(1, 1, 1, 1), channels=o,
                        kernel_size=(3, 3), out_dtype="int32")
    y = relay.add(y, r) if residual else y
    y = requantize_uint8(relay.multiply(relay.cast(y, "float32"), relay.const(np.float32(0.5))))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([xv, r] if residual else [xv],
                                                                y)), target="llvm")
    rv = rng.integers(-1000, 1000, want.shape).astype("int32")
    feeds = {"x": x, "r": rv} if residual else {"x": x}
    want = (want + (rv if residual else 0)) * 0.5
    want = np.clip(np.round(want.astype("float32") * np.float32(1 / 4096)) + 100, 0, 255)
    np.testing.assert_array_equal(run_graph(lib, feeds, 1), want.astype("uint8"))
    if conv_vnni.available():
        assert ("vr_src" in _names(lib)) == (not residual)
