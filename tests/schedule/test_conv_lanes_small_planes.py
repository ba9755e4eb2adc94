"""``conv_lanes`` on the small planes of late stages: planes of 1-8 output pixels (a 3x3 conv
at 1x1 or 2x2, stride 2 at 4x4) run here rather than on ``conv_direct``; on AVX-512 a plane
whose pixel classes would cut the tiles smaller than the padded copy's reads the padded copy
(``tap_cycles``), and an odd number of 16s of output channels on a small plane is padded to
32-lane tiles (``PAD_WIDTH``)."""

import numpy as np
import pytest
from conv_reference import build_conv
from conv_reference import conv_kernel as _conv_kernel

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_lanes
from minitvm.schedule.common import host_key, vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _names(kernel) -> set[str]:
    return {s.buffer.name for s in walk_stmts(kernel.prim_func.body) if isinstance(s, S.DeclBuffer)}


def _geometry(c, o, hw, s=1, k=3, p=1):
    oh = (hw + 2 * p - k) // s + 1
    og = -(-o // 16) * 16
    return dict(n=1, c=c, h=hw, w=hw, o=og, og=og, real_o=o, kh=k, kw=k, oh=oh, ow=oh, sh=s,
                sw=s, dh=1, dw=1, pt=p, pl=p, hp=(oh - 1) * s + k, wp=(oh - 1) * s + k,
                grid=oh * oh, groups=1, cin=c, parallel=False)


@pytest.mark.parametrize("shape, o, strides, epi", [
    ((1, 64, 1, 1), 64, (1, 1), "bias_relu"),        # one pixel: only the centre tap
    ((1, 40, 2, 2), 112, (1, 1), "residual_relu"),   # 4 pixels, 7 16s of output channels
    ((1, 24, 3, 3), 112, (1, 1), "bias_relu"),       # 9 pixels (over the padded copy)
    ((1, 20, 5, 5), 80, (1, 1), "residual_relu"),    # 25 pixels, 80 -> 96 channels
    ((1, 16, 4, 4), 40, (2, 2), "bias_relu"),        # stride 2 to 2x2, a channel tail
    ((1, 16, 2, 2), 24, (2, 2), "none"),             # stride 2 to 1x1
    ((2, 8, 2, 4), 24, (1, 1), "bias_relu"),         # 8 pixels, a batch of two
    ((1, 32, 7, 7), 208, (1, 1), "bias_relu"),       # 7x7, 13 16s
])
def test_small_planes_run_on_lanes_and_match_numpy(shape, o, strides, epi, restore_threads):
    lib, inputs, want = build_conv(shape, o, 3, strides, (1, 1, 1, 1), (1, 1), epi,
                                   np.random.default_rng(5))
    assert ("cl_acc" in _names(_conv_kernel(lib))) == conv_lanes.ENABLED[vector_isa()]
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("hw, s", [(1, 1), (2, 1), (3, 1), (4, 2), (5, 1)])
def test_both_ways_match_numpy_on_small_planes(hw, s, direct, force_knobs):
    """The padded copy and the direct tiles agree on every small plane, whichever the model
    picks."""
    force_knobs(lanes_direct=direct)
    lib, inputs, want = build_conv((1, 24, hw, hw), 112, 3, (s, s), (1, 1, 1, 1), (1, 1),
                                   "bias_relu", np.random.default_rng(6))
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c, o, hw, s, want", [
    (512, 512, 1, 1, True),    # one class of one pixel, one tap (nine over the copy)
    (512, 512, 2, 1, False),   # four 1-pixel classes of 4 taps vs one 4-pixel tile of 9
    (512, 512, 3, 1, False),   # nine 1-pixel classes vs 5 + 4 pixels
    (128, 256, 4, 2, False),   # stride 2 to 2x2
    (256, 256, 5, 1, True),    # 64-lane tiles: the classes' 5s and 4s hold enough pixels
    (512, 512, 7, 1, True),    # within the margin: the direct tiles skip the copy
    (128, 128, 28, 1, True),   # past DIRECT_MODEL_MAX_PIXELS
])
def test_direct_or_copy_by_the_model(c, o, hw, s, want, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    g = _geometry(c, o, hw, s)
    assert conv_lanes.default_knobs(g)["lanes_direct"] is want
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx2")  # (no direct tiles there)
    assert conv_lanes.default_knobs(g)["lanes_direct"] is False


def test_model_counts_the_tiles_taps():
    """512 -> 512 (32 lanes: two zmm a pixel) at 3x3: nine 1-pixel classes (the centre's 9 taps,
    four edges' 6, four corners' 4) at the FMA latency's 4 cycles a tap, against the padded
    copy's tiles of 5 and 4 pixels (10 and 8 accumulators over 2 FMA ports) of 9 taps each."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conv_lanes, "vector_isa", lambda: "avx512")
        g = conv_lanes.with_knobs(_geometry(512, 512, 3), {"lanes_width": 32})
        assert conv_lanes.tap_cycles(g, True) == (9 + 4 * 6 + 4 * 4) * 4
        assert conv_lanes.tap_cycles(g, False) == 9 * 5 + 9 * 4


def _conv_stage(c, o, hw):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=(1, c, hw, hw)), relay.var("w", shape=(o, c, 3, 3))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, padding=(1, 1)))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


@pytest.mark.parametrize("o, hw, isa, want", [
    (112, 5, "avx512", 128),   # 7 16s at 5x5: padded to 32-lane tiles
    (112, 14, "avx512", 112),  # a larger plane keeps 16-lane tiles
    (144, 5, "avx512", 144),   # 48-lane tiles (ODD_WIDTH)
    (48, 5, "avx512", 48),     # ODD_WIDTH too
    (16, 5, "avx512", 16),     # fewer than PAD_WIDTH_MIN_CHANNELS
    (100, 4, "avx512", 128),   # 100 -> 112 -> 128
    (112, 5, "avx2", 112),     # 16-lane tiles on AVX2
])
def test_output_channels_padded_to_32_lanes_on_small_planes(o, hw, isa, want, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    t = _conv_stage(64, o, hw)
    g = conv_lanes.geometry(t)
    assert (g["o"], g["og"], g["real_o"]) == (want, want, o)
    shape, pack = conv_lanes.packed_weight(t)
    w = np.random.default_rng(0).standard_normal((o, 64, 3, 3)).astype("float32")
    packed = pack(w)
    assert packed.shape == shape == (want // 16, 64, 3, 3, 16)
    assert not packed.reshape(want // 16, 64 * 9, 16).transpose(0, 2, 1).reshape(
        want, 64 * 9)[o:].any()


@pytest.mark.parametrize("c, o, hw, s, width", [
    (128, 256, 7, 2, 64),    # stride 2 to 4x4: 64 lanes in one pass (WIDE_STRIDED_MAX_PIXELS)
    (256, 512, 14, 2, 64),   # to 7x7
    (128, 256, 56, 2, 16),   # to 28x28: 16 lanes in rows (ROW_STORE), in blocks of channels
    (512, 512, 14, 2, 32),   # a tile's weights past WIDE_MAX_TILE_WEIGHT_BYTES
])
def test_wide_tiles_for_strided_convs_on_small_planes(c, o, hw, s, width, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    table = conv_lanes.WIDE_STRIDED_ANY_PLANE  # (a host where larger planes keep 16 lanes)
    monkeypatch.setitem(table, host_key(table), False)
    knobs = conv_lanes.default_knobs(_geometry(c, o, hw, s))
    assert knobs["lanes_width"] == width
    assert (knobs["lanes_cblock"] == 0) == (width == 64)


def test_wide_strided_conv_matches_numpy(restore_threads):
    lib, inputs, want = build_conv((1, 48, 7, 7), 64, 3, (2, 2), (1, 1, 1, 1), (1, 1),
                                   "residual_relu", np.random.default_rng(7))
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
