"""Compact conv kernels (code that LLVM compiles quickly; on AVX2 and AVX-512 alike):
``conv_lanes`` with its filter taps as loops, pixel offsets from a table and each tile stored
pixel by pixel; ``conv_direct`` (``COMPACT``) with a tap's pixels loaded once for all rows, equal
short channel tiles as one kernel and ragged panels stored in a loop. Odd shapes (planes of every
remainder of 6 and 5, channel blocks, parts, batches, residuals) match numpy at one and two
threads; with conv_direct's switches off (the schedule AVX-512 had before) the implicit GEMM
keeps its unrolled taps and per-vector stores."""

import numpy as np
import pytest
from conv_reference import build_conv
from conv_reference import conv_kernel as _conv_kernel

import minitvm as tvm
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_direct, conv_lanes, conv_pointwise, conv_winograd
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

LANES_ON = conv_lanes.ENABLED[vector_isa()]  # conv_lanes on the host's ISA (both ISAs)
COMPACT_ON = conv_direct.COMPACT[vector_isa()]  # (both ISAs)
DIRECT_SWITCHES = ("UNROLL_STRIDED_ROWS", "SPLIT_SHORT_TILE", "FUSED_EPILOGUE", "CHANNEL_BLOCK",
                   "COMPACT")


def _build(shape, o, k, strides=(1, 1), pads=(1, 1, 1, 1), dil=(1, 1), epi="bias_relu",
           seed=0):
    return build_conv(shape, o, k, strides, pads, dil, epi, np.random.default_rng(seed))


def _decls(kernel, name):
    return [s.buffer for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == name]


@pytest.fixture
def implicit_gemm_only(monkeypatch, direct_conv_only):
    """Every conv on ``conv_direct``: neither conv_lanes nor conv_pointwise (which would take
    the 1x1 convs) is used."""
    monkeypatch.setattr(conv_pointwise, "ENABLED", {"avx512": False, "avx2": False})
    kernel_cache.clear_cache()


def _check(lib, inputs, want):
    before = threadpool.get_num_threads()
    try:
        for threads in (1, 2):
            threadpool.set_num_threads(threads)
            m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
            m.run(**inputs)
            np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    finally:
        threadpool.set_num_threads(before)


# planes of every remainder of 6 and 5, channel blocks (64 input channels of a 3x3 filter),
# a plane split in parts for the pool (16 output channels, a big plane), residuals, batches
@pytest.mark.parametrize("shape, o, k, strides, pads, dil, epi", [
    ((1, 3, 5, 4), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu"),      # 20: 5s
    ((1, 5, 3, 7), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),  # 21: 6 + 5s
    ((1, 4, 5, 5), 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "none"),           # 25: 5s
    ((1, 64, 7, 7), 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),  # 49, blocks
    ((1, 64, 9, 13), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu"),    # 117, blocks
    ((1, 7, 41, 23), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),  # parts
    ((1, 64, 23, 19), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu"),   # parts, blocks
    ((2, 6, 15, 11), 32, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), "residual_relu"),  # 5x5 taps
    ((1, 5, 17, 15), 16, (3, 5), (1, 1), (2, 2, 2, 2), (2, 1), "bias_relu"),    # dilated
    ((5, 8, 9, 9), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),  # by image
])
def test_lanes_tail_tiles_match_numpy(shape, o, k, strides, pads, dil, epi, monkeypatch):
    # (about conv_lanes: the 3x3 stride-1 convs Winograd would take, 23x19 among them since
    # ragged rows, stay on it)
    monkeypatch.setattr(conv_winograd, "DEFAULT_ON", False)
    kernel_cache.clear_cache()
    lib, inputs, want = _build(shape, o, k, strides, pads, dil, epi)
    kernel = _conv_kernel(lib)
    assert bool(_decls(kernel, "cl_acc")) == conv_lanes.ENABLED[vector_isa()]
    _check(lib, inputs, want)


@pytest.mark.skipif(not LANES_ON, reason="conv_lanes is switched off for this ISA (ENABLED)")
def test_lanes_kernel_has_tap_loops_and_an_offset_table(monkeypatch, request):
    """49 pixels: tiles of 6 and of 5, their filter rows as a loop (the columns of a 3-wide
    filter unrolled: ``conv_lanes.UNROLL_TAPS``), the pixels' input offsets from a table filled
    once, each tile stored in a loop over its pixels (from a copy of the tile). (Over the
    padded copy; reading the input itself, ``lanes_direct``, the tiles follow the pixel
    classes: ``test_conv_lanes_direct``.)"""
    monkeypatch.setattr(conv_lanes, "DIRECT", {"avx512": False, "avx2": False})
    kernel_cache.clear_cache()
    request.addfinalizer(kernel_cache.clear_cache)  # (no other test gets these kernels)
    lib, _, _ = _build((1, 64, 7, 7), 32, (3, 3), epi="residual_relu", seed=1)
    kernel = _conv_kernel(lib)
    tiles = sorted(int(b.shape[0]) for b in _decls(kernel, "cl_acc"))
    assert tiles == [5, 6]
    assert conv_lanes.pixel_tiles(49) == [(0, 6, 4), (24, 5, 5)]
    assert _decls(kernel, "cl_pix") and len(_decls(kernel, "cl_res")) == 2
    loops = [s for s in walk_stmts(kernel.prim_func.body) if isinstance(s, S.For)]
    rows = [f for f in loops if f.loop_var.name.startswith("ky")]
    cols = [f for f in loops if f.loop_var.name.startswith("kx")]
    assert rows and all(f.kind == S.ForKind.SERIAL for f in rows)
    assert cols and all(f.kind == S.ForKind.UNROLLED for f in cols)


@pytest.mark.parametrize("shape, o, k, strides, pads, epi", [
    ((1, 40, 14, 14), 128, (1, 1), (2, 2), (0, 0, 0, 0), "bias_relu"),  # tails 4 + 4, 49 px
    ((1, 24, 28, 28), 127, (1, 1), (2, 2), (0, 0, 0, 0), "bias_relu"),  # tails 4 + 3
    ((1, 300, 10, 10), 128, (1, 1), (2, 2), (0, 0, 0, 0), "none"),      # weights outer, 25 px
    ((1, 300, 10, 10), 62, (1, 1), (2, 2), (0, 0, 0, 0), "bias_relu"),  # weights outer, 4 + 4
    ((2, 130, 12, 12), 50, (1, 1), (2, 2), (0, 0, 0, 0), "none"),       # a batch, 36 px
    ((1, 3, 40, 40), 20, (7, 7), (2, 2), (3, 3, 3, 3), "bias_relu"),    # a stem: row mode
    ((1, 9, 13, 11), 22, (3, 3), (1, 1), (1, 1, 1, 1), "bias_relu"),    # padding columns
])
def test_direct_compact_matches_numpy(shape, o, k, strides, pads, epi, implicit_gemm_only):
    lib, inputs, want = _build(shape, o, k, strides, pads, epi=epi, seed=2)
    kernel = _conv_kernel(lib)
    assert not _decls(kernel, "cl_acc")
    assert bool(_decls(kernel, "xv")) == conv_direct.COMPACT[vector_isa()]
    _check(lib, inputs, want)


@pytest.mark.skipif(not COMPACT_ON, reason="COMPACT is switched off for this ISA")
def test_direct_equal_short_tiles_are_one_kernel(implicit_gemm_only):
    """21 tiles of ``mr`` output channels and 2 more (128 channels in tiles of 6 on AVX2, 170
    in tiles of 8 on AVX-512): 20 full tiles and two of ``mr / 2 + 1`` rows (4 or 5), computed
    by one kernel (two register tiles in all, not three)."""
    mr = conv_direct.default_tile()[0]
    lib, inputs, want = _build((1, 40, 14, 14), 21 * mr + 2, (1, 1), (2, 2), (0, 0, 0, 0),
                               seed=3)
    tiles = sorted(int(b.shape[0]) for b in _decls(_conv_kernel(lib), "acc"))
    assert tiles == [mr // 2 + 1, mr]
    _check(lib, inputs, want)


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_both_isas_take_the_compact_schedule(isa, monkeypatch, implicit_gemm_only):
    """AVX2 and AVX-512 both take conv_direct's compact schedule (every switch on: measured on a
    Zen 4 with AVX-512), a tap vector and equal short tiles as one kernel; with the switches off
    for the ISA (the schedule AVX-512 had before) the implicit GEMM keeps its unrolled taps and
    per-vector stores (no tap vector, no tile copy) and a split of short tiles is not taken. The
    result is the same both ways."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    monkeypatch.setattr(conv_direct, "vector_isa", lambda: isa)
    assert all(getattr(conv_direct, name)[isa] for name in DIRECT_SWITCHES)
    kernel_cache.clear_cache()
    try:
        lib, inputs, want = _build((1, 40, 14, 14), 40, (1, 1), (2, 2), (0, 0, 0, 0), seed=4)
        assert _decls(_conv_kernel(lib), "xv")
        assert conv_direct._equal_tails([(32, 4), (36, 4)])
        _check(lib, inputs, want)
        for name in DIRECT_SWITCHES:
            monkeypatch.setitem(getattr(conv_direct, name), isa, False)
        kernel_cache.clear_cache()
        lib, inputs, want = _build((1, 40, 14, 14), 40, (1, 1), (2, 2), (0, 0, 0, 0), seed=4)
        kernel = _conv_kernel(lib)
        assert not _decls(kernel, "xv") and not _decls(kernel, "tile_res")
        assert not conv_direct._equal_tails([(32, 4), (36, 4)])
        _check(lib, inputs, want)
    finally:
        kernel_cache.clear_cache()
