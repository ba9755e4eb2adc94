"""``conv_vnni``'s pixel lanes (``pixel_lanes``): 1x1 stride-1 convs of uint8 data and int8
weights with 16 output pixels in the vector lanes. Exact against numpy's integer conv over
planes that are no whole number of vectors (a partly stored last vector), channel counts not a
multiple of 4, output channels not a multiple of 16 or 4 (a last block of fewer), a batch,
the fused epilogues (float32, requantized to uint8, a residual read along the pixels), one and
two threads; which convs take it (strided, padded, a plane under a vector or leaving many
lanes idle, and 3x3 filters keep the channel lanes). Where the host has no VNNI (``pretend_avx2``)
the same graphs run on the other schedules, as exact."""

import numpy as np
import pytest
from conv_reference import conv_kernel, conv_ref, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.schedule import conv_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _build(x_shape, w, strides=(1, 1), pads=(0, 0, 0, 0), epilogue=None):
    x = relay.var("x", shape=x_shape, dtype="uint8")
    params = [x]
    y = relay.nn.conv2d(x, relay.const(w), strides=strides, padding=pads,
                        channels=w.shape[0], kernel_size=w.shape[2:], out_dtype="int32")
    if epilogue is not None:  # (a zero-point correction and a requantizing multiply)
        corr = np.arange(w.shape[0], dtype="int32").reshape(1, -1, 1, 1) * 100
        y = relay.multiply(relay.cast(relay.subtract(y, relay.const(corr)), "float32"),
                           relay.const(np.float32(0.5)))
    if epilogue in ("uint8", "residual"):
        y = relay.add(relay.round(relay.multiply(y, relay.const(np.float32(1 / 2048)))),
                      relay.const(np.float32(100)))
    if epilogue == "residual":  # (a uint8 tensor shaped like the output, read along pixels)
        r = relay.var("r", shape=(x_shape[0], w.shape[0]) + tuple(x_shape[2:]), dtype="uint8")
        params.append(r)
        y = relay.add(y, relay.cast(r, "float32"))
    if epilogue in ("uint8", "residual"):
        y = relay.cast(relay.clip(y, 0, 255), "uint8")
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _want(x, w, epilogue, r=None, strides=(1, 1), pads=(0, 0, 0, 0)):
    want = conv_ref(x, w, strides, pads)
    if epilogue is None:
        return want.astype("int32")
    o = w.shape[0]
    want = ((want - np.arange(o).reshape(1, -1, 1, 1) * 100) * 0.5).astype("float32")
    if epilogue == "float32":
        return want
    want = np.round(want * np.float32(1 / 2048)) + np.float32(100)
    if r is not None:
        want = want + r.astype("float32")
    return np.clip(want, 0, 255).astype("uint8")


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(conv_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


@pytest.mark.parametrize("shape, o", [
    ((1, 32, 14, 14), 64),   # 196 pixels: 12 vectors and 4 pixels
    ((2, 18, 5, 8), 32),     # a batch, 40 pixels, 18 channels (a tail of 2)
    ((1, 64, 4, 4), 16),     # one vector exactly
    ((1, 33, 6, 11), 48),    # 66 pixels: 4 vectors and 2
    ((1, 48, 28, 28), 96),   # large enough for the thread pool
    ((1, 40, 28, 28), 24),   # MobileNetV2's 24 output channels: a weight of 32 (zero rows)
    ((2, 20, 5, 9), 10),     # 10 channels: a block of 8 and one of 2
    ((1, 16, 5, 13), 3),     # 3 channels: one block of fewer than 8
    ((1, 8, 3, 117), 16),    # rows of 117 packed 16 words a vector (7 and 5 words)
])
@pytest.mark.parametrize("epilogue", [None, "float32", "uint8", "residual"])
def test_pixel_lanes_are_exact(shape, o, epilogue):
    rng = np.random.default_rng(o + shape[1])
    w = rng.integers(-128, 128, (o, shape[1], 1, 1)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    x[0, 0, 0, 0], w[0, 0, 0, 0] = 255, -128  # (the extremes)
    feeds = {"x": x}
    r = None
    if epilogue == "residual":
        r = rng.integers(0, 256, (shape[0], o) + shape[2:]).astype("uint8")
        feeds["r"] = r
    lib = _build(shape, w, epilogue=epilogue)
    want = _want(x, w, epilogue, r)
    for threads in (1, 2):
        got = run_graph(lib, feeds, threads)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if conv_vnni.available():  # the pixel tiles took it, the epilogue applied in their stores
        names = _names(lib)
        assert "vp_acc" in names and "vn_acc" not in names and "conv2d" not in names


@pytest.mark.parametrize("shape, k, strides, pads", [
    ((1, 32, 8, 8), 1, (2, 2), (0, 0, 0, 0)),   # strided
    ((1, 32, 6, 6), 1, (1, 1), (1, 1, 1, 1)),   # padded
    ((1, 32, 3, 3), 1, (1, 1), (0, 0, 0, 0)),   # 9 pixels: under a vector
    ((1, 32, 8, 8), 3, (1, 1), (1, 1, 1, 1)),   # a 3x3 filter
    ((1, 24, 9, 9), 1, (2, 2), (0, 0, 0, 0)),   # strided, 24 output channels (a tile of 8)
    ((1, 64, 7, 7), 1, (1, 1), (0, 0, 0, 0)),   # 7x7: 15 of 64 lanes idle (PIXEL_MAX_IDLE)
    ((1, 32, 3, 6), 1, (1, 1), (0, 0, 0, 0)),   # 18 pixels: 14 of 32 idle
])
def test_other_convs_keep_channel_lanes(shape, k, strides, pads):
    rng = np.random.default_rng(5)
    w = rng.integers(-128, 128, (shape[1], shape[1], k, k)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    lib = _build(shape, w, strides, pads, epilogue="uint8")
    np.testing.assert_array_equal(run_graph(lib, {"x": x}),
                                  _want(x, w, "uint8", strides=strides, pads=pads))
    if conv_vnni.available():
        names = _names(lib)
        assert "vn_acc" in names and "vp_acc" not in names


def test_pixel_lanes_rule():
    """``pixel_lanes`` on geometries: 1x1, stride 1, no padding, at least 16 pixels, at most
    ``PIXEL_MAX_IDLE`` of them idle in the last vector, and only while ``PIXEL_LANES`` is
    on."""
    g = dict(kh=1, kw=1, sh=1, sw=1, pt=0, pl=0, h=4, w=4, hp=4, wp=4, oh=4, ow=4)
    assert conv_vnni.pixel_lanes(g)
    assert not conv_vnni.pixel_lanes({**g, "sh": 2})
    assert not conv_vnni.pixel_lanes({**g, "kh": 3, "kw": 3})
    assert not conv_vnni.pixel_lanes({**g, "oh": 3, "ow": 5})
    assert not conv_vnni.pixel_lanes({**g, "pt": 1, "hp": 6})
    assert not conv_vnni.pixel_lanes({**g, "h": 7, "w": 7, "hp": 7, "wp": 7, "oh": 7, "ow": 7})
    assert conv_vnni.pixel_lanes({**g, "h": 10, "w": 10, "hp": 10, "wp": 10, "oh": 10,
                                  "ow": 10})  # (12 of 112 lanes idle)


@pytest.mark.skipif(not conv_vnni.available(), reason="needs AVX-512 VNNI")
def test_pixel_tile_holds_rows_by_vectors_accumulators():
    """A 1x1 conv of 196 pixels x 64 output channels runs full tiles of ``PIXEL_ROWS``
    channels x ``PIXEL_VECTORS`` pixel vectors (8 x 3: 24 accumulators, where 4 x 1 was bound
    by the latency of its 4 vpdpbusd chains) and a last one of the 4 pixels past 3 x 48."""
    shape, o = (1, 32, 14, 14), 64
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (o, shape[1], 1, 1)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    lib = _build(shape, w, epilogue="uint8")
    np.testing.assert_array_equal(run_graph(lib, {"x": x}), _want(x, w, "uint8"))
    tiles = {tuple(int(d) for d in s.buffer.shape)
             for s in walk_stmts(conv_kernel(lib).prim_func.body)
             if isinstance(s, S.DeclBuffer) and s.buffer.name == "vp_acc"}
    rows, vectors = conv_vnni.PIXEL_ROWS, conv_vnni.PIXEL_VECTORS
    assert (rows, vectors) == (8, 3)
    assert (rows, vectors * conv_vnni.LANES) in tiles
    assert all(r <= rows and n <= vectors * conv_vnni.LANES for r, n in tiles)
