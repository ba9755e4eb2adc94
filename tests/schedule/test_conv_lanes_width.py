"""``conv_lanes``' tile width (``lanes_width``): on AVX-512 a tile is 32 output channels (two
zmm registers a pixel) by default, 64 as a knob value, 48 where a group's output channels are
a multiple of 48 but not of 32, else 16 (12 pixels a tile); AVX2 keeps 16. Each width matches
numpy on strides, dilation, groups, odd planes, channel blocks, asymmetric filters and the fused
epilogue with a residual, and the inner loop holds its accumulators in registers."""

import re
import sys

import numpy as np
import pytest
from asm_loops import fma_loops
from conv_reference import build_conv, rotated_distinct_widths
from conv_reference import conv_kernel as _conv_kernel

import minitvm as tvm
from minitvm import relay, tune
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.contrib import graph_executor
from minitvm.runtime import jit, threadpool
from minitvm.schedule import conv_lanes
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

AVX512 = vector_isa() == "avx512"
needs_avx512 = pytest.mark.skipif(not AVX512, reason="the wider tiles are AVX-512's")


pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _build(shape, o, k, strides, pads, dil, groups, epi, rng):
    return build_conv(shape, o, k, strides, pads, dil, epi, rng, groups)


def _tile_widths(kernel) -> set[int]:
    """The output channels of the kernel's tiles (its accumulators' second axis)."""
    return {int(s.buffer.shape[1]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


def _tile_pixels(kernel) -> set[int]:
    """The pixels of the kernel's tiles (its accumulators' first axis)."""
    return {int(s.buffer.shape[0]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


@pytest.mark.parametrize("isa, width, most", [
    ("avx512", 16, 12), ("avx512", 32, 6), ("avx512", 64, 6), ("avx2", 16, 6)])
def test_narrow_tiles_hold_more_pixels_on_avx512(isa, width, most, monkeypatch):
    """A 16-lane tile is one zmm a pixel on AVX-512: it holds ``NARROW_PIXELS`` (12) pixels,
    12 accumulators; the wider tiles, and AVX2's 16 lanes (two ymm a pixel), hold 6. A plane
    is cut in the fewest tiles of at most that many pixels, sizes differing by one."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    g = dict(lanes_width=width)
    assert conv_lanes.tile_pixels(g) == most
    for extent in (20, 49, 196, 529):
        groups = conv_lanes.plane_tiles(g, extent)
        sizes = [p for _, p, m in groups for _ in range(m)]
        assert sum(sizes) == extent and max(sizes) <= most and max(sizes) - min(sizes) <= 1
        assert len(sizes) == -(-extent // most)


CASES = [  # shape, output channels, filter, strides, padding, dilation, groups, epilogue
    ((1, 64, 7, 7), 64, 3, (1, 1), (1, 1), (1, 1), 1, "residual_relu"),  # 49 = 6s + 5s
    ((1, 40, 13, 11), 64, 3, (2, 2), (1, 1), (1, 1), 1, "residual_relu"),  # stride 2, odd
    ((2, 24, 9, 10), 96, 3, (1, 1), (2, 2), (2, 2), 1, "bias_relu"),  # dilated, a batch
    ((1, 64, 20, 20), 32, 3, (1, 1), (1, 1), (1, 1), 1, "residual_relu"),  # channel blocks
    ((1, 64, 12, 12), 128, 3, (1, 1), (1, 1), (1, 1), 2, "bias_relu"),  # 64 a group
    ((1, 64, 11, 9), 64, 3, (2, 2), (1, 1), (1, 1), 2, "residual_relu"),  # 32 a group
    ((1, 16, 32, 32), 64, 3, (1, 1), (6, 6), (6, 6), 1, "bias_relu"),  # row tiles
    ((1, 8, 9, 9), 48, 5, (1, 1), (2, 2), (1, 1), 1, "bias_relu"),  # 48: 16s only
    # Inception's asymmetric filters, 48 outputs: 16 lanes (12 pixels a tile on AVX-512)
    ((1, 32, 23, 23), 48, (1, 7), (1, 1), (0, 3), (1, 1), 1, "bias_relu"),
    ((1, 32, 23, 23), 48, (7, 1), (1, 1), (3, 0), (1, 1), 1, "residual_relu"),
    ((1, 48, 14, 14), 48, 3, (2, 2), (1, 1), (1, 1), 3, "residual_relu"),  # RegNet: 16 a group
]


# (each case at every width, two in each order, the orders alternating over the widths and the
# cases: each width x order pair runs on five or six of the geometries above; the full product
# compiled 88 kernels. A width that does not divide a case's outputs a group builds 16 wide:
# where the case already runs 16 in that order the param is dropped as the same kernel -
# 48 on cases 0, 1, 3, 4, 5, 6 and 10 (16 in that order covers it), 64 on cases 7, 8, 9 and
# 10 (the 32 param, 16 wide in that order, covers it); the fallback itself stays checked by
# 64 on cases 2, 3 and 5 and 32 on cases 7 to 10)
@pytest.mark.parametrize("case, width, order", rotated_distinct_widths(
    CASES, [16, 32, 48, 64], conv_lanes.ORDERS, lambda case: case[1] // case[6]))
def test_each_width_matches_numpy(case, width, order, force_knobs, restore_threads):
    """Every width (where the ISA and the output channels allow it; else 16) in both loop
    orders, at one and two threads."""
    shape, o, k, strides, pads, dil, groups, epi = case
    # (tiles across rows, whose sizes these counts check; tiles in rows: test_conv_lanes_row_store)
    force_knobs(lanes_width=width, lanes_order=order, lanes_rowstore=False)
    lib, inputs, want = _build(shape, o, k, strides, pads, dil, groups, epi,
                               np.random.default_rng(width + o))
    og = o // groups
    expect = width if width in conv_lanes.WIDTHS[vector_isa()] and og % width == 0 else 16
    assert _tile_widths(_conv_kernel(lib)) == {expect}
    most = conv_lanes.tile_pixels(dict(lanes_width=expect))  # (small planes: smaller tiles)
    assert max(_tile_pixels(_conv_kernel(lib))) <= most
    if shape[2] * shape[3] >= 400 and dil == (1, 1):  # (23x23 planes: the largest tiles)
        assert most in _tile_pixels(_conv_kernel(lib))
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa, og, want", [
    ("avx512", 64, (16, 64, 32)), ("avx512", 96, (16, 48, 32)), ("avx512", 48, (16, 48)),
    ("avx512", 80, (16,)),
    ("avx2", 64, (16,)), ("avx2", 48, (16,)),
])
def test_widths_by_isa_and_channels(isa, og, want, monkeypatch):
    """The widths a conv may run, its default last: 32 on AVX-512 where a group's output
    channels are a multiple of it, else 48 where they are a multiple of that, else 16; AVX2
    only 16 (its 16 ymm registers). A width the conv cannot take falls back to 16."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    g = dict(o=og * 2, og=og, c=512, kh=3, kw=3, grid=196, parallel=False)
    assert conv_lanes.widths(g) == want
    assert conv_lanes.default_knobs(g)["lanes_width"] == want[-1]
    geo = dict(g, groups=2)
    assert conv_lanes.with_knobs(geo, {"lanes_width": 64})["lanes_width"] == \
        (64 if 64 in want else 16)


@pytest.mark.parametrize("isa, c, og, stride, width, cblock", [
    ("avx512", 64, 64, 1, 64, 0), ("avx512", 256, 256, 1, 64, 0),  # a tile's weights <= 640 KB
    ("avx512", 256, 256, 2, 32, conv_lanes.CHANNEL_BLOCK_BYTES),  # stride 2: 32 wide in blocks
    ("avx512", 512, 512, 1, 32, conv_lanes.CHANNEL_BLOCK_BYTES),  # 1.2 MB: 32 wide in blocks
    ("avx512", 256, 96, 1, 32, conv_lanes.CHANNEL_BLOCK_BYTES),  # 96 outputs: no 64-wide tile
    ("avx2", 64, 64, 1, 16, conv_lanes.CHANNEL_BLOCK_BYTES),
])
def test_wide_tiles_in_one_pass_by_default(isa, c, og, stride, width, cblock, monkeypatch):
    """On AVX-512 a stride-1 conv whose 64-wide tile's weights are at most
    WIDE_MAX_TILE_WEIGHT_BYTES runs 64-wide tiles over all its input channels in one pass;
    else 32 wide in blocks."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    knobs = conv_lanes.default_knobs(dict(o=og, og=og, c=c, kh=3, kw=3, grid=196, sh=stride,
                                          sw=stride, parallel=False))
    assert (knobs["lanes_width"], knobs["lanes_cblock"]) == (width, cblock)


def test_channel_block_follows_the_width():
    """A block keeps a tile's weights near ``lanes_cblock`` bytes: about half the channels at
    32 as at 16 (a divisor of the channel count)."""
    g = dict(c=512, kh=3, kw=3, lanes_cblock=conv_lanes.CHANNEL_BLOCK_BYTES)
    assert conv_lanes.channel_block(dict(g, lanes_width=16)) == 16
    assert conv_lanes.channel_block(dict(g, lanes_width=32)) == 8
    assert conv_lanes.channel_block(dict(g, lanes_width=32, c=96)) == 12


def test_width_is_a_declared_knob():
    """The conv's search space declares ``lanes_width`` with the ISA's widths that divide its
    output channels, its default the ISA's, and a tuned value changes the kernel's tile."""
    x = relay.var("x", shape=(1, 64, 7, 7))
    w = relay.const(np.ones((64, 64, 3, 3), "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(
        x, w, padding=(1, 1), kernel_size=(3, 3), channels=64)))
    (task,) = [t for t in tune.extract_tasks(mod) if t.workload[0] == "conv2d_nchw"]
    values = task.space.values("lanes_width")
    assert set(values) == {w for w in conv_lanes.WIDTHS[vector_isa()] if 64 % w == 0}
    # (64 channels of a 3x3 filter: 64 wide in one pass on AVX-512, WIDE_MAX_TILE_WEIGHT_BYTES)
    assert task.space.default()["lanes_width"] == (64 if AVX512 else 16)


@needs_avx512
@pytest.mark.parametrize("width, o", [(16, 64), (32, 64), (48, 48), (64, 64)])
def test_avx512_inner_loop_keeps_its_accumulators_in_registers(width, o, force_knobs):
    """64 -> 64 (48) at 7x7: the filter-row loop of the largest tile does 3 taps x (width / 16
    weight vectors x its pixels) zmm FMAs, each pixel broadcast once a tap, with no spill: 12
    accumulators at 32 wide (6 pixels), 18 at 48, 24 at 64, 10 at 16 (10 pixels: 49 in 12s
    at most; over the padded copy: read directly, the interior of a 7x7 plane is 5x5,
    ``test_conv_lanes_direct``)."""
    force_knobs(lanes_width=width, lanes_direct=False)
    lib, _, _ = _build((1, 64, 7, 7), o, 3, (1, 1), (1, 1), (1, 1), 1, "bias_relu",
                       np.random.default_rng(0))
    func = _conv_kernel(lib).prim_func
    level = sys.modules["minitvm.codegen.build"].ir_pipeline_level(func, 3)
    asm = jit.assembly(CodeGenLLVM(func, "kern", fast_math=True, gomp=False).generate(), level)
    loops = fma_loops(asm)
    px = conv_lanes.plane_tiles(dict(lanes_width=width), 49)[0][1]
    accs = width // 16 * px
    six = [b for b in loops if len(re.findall(r"vfmadd\d+ps", b)) == 3 * accs]
    assert six, [len(re.findall(r"vfmadd\d+ps", b)) for b in loops]
    for b in six:
        fmas = re.findall(r"vfmadd\d+ps\s+[^\n]*", b)
        assert all(re.search(r"%zmm\d+, %zmm\d+$", f) for f in fmas), fmas
        assert len({re.search(r"(%zmm\d+)$", f).group(1) for f in fmas}) == accs
        # (one weight vector a tap, 16 wide: each broadcast folded into its one FMA)
        assert b.count("vbroadcastss") + b.count("{1to16}") == 3 * px
        assert "rsp" not in b and "rbp" not in b  # no spill / reload


@pytest.mark.parametrize("order", conv_lanes.ORDERS)
def test_weight_prefetch_in_channels_order(order, force_knobs, monkeypatch, restore_threads):
    """In the "channels" order on AVX-512 (``PREFETCH_WEIGHTS``) each tap prefetches its weights
    a block of channels on (here for any weight size), and the last block's prefetches past the
    weights change nothing; the "bands" order and AVX2 prefetch nothing."""
    monkeypatch.setattr(conv_lanes, "PREFETCH_MIN_WEIGHT_BYTES", 0)
    force_knobs(lanes_order=order)
    lib, inputs, want = _build((1, 64, 20, 20), 64, 3, (1, 1), (1, 1), (1, 1), 1,
                               "residual_relu", np.random.default_rng(7))
    ir = CodeGenLLVM(_conv_kernel(lib).prim_func, "kern", fast_math=True, gomp=False).generate()
    assert ("llvm.prefetch" in ir) == (AVX512 and order == "channels")
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def test_prefetch_only_for_weights_past_l2(monkeypatch):
    """By default only weights of at least ``PREFETCH_MIN_WEIGHT_BYTES`` (4 MB: ResNet-50's
    512 -> 512 3x3) are prefetched; smaller ones stay warm in L2 between calls."""
    assert 512 * 512 * 9 * 4 >= conv_lanes.PREFETCH_MIN_WEIGHT_BYTES > 256 * 256 * 9 * 4
