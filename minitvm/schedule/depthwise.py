"""Depthwise conv2d (NCHW, one input channel per group) as generated code.

Per (image, input channel) task — the tasks split over the thread pool when the work is large —
the channel's plane is copied once into a zero-padded, stride-phased temporary
``xph[py, px, i, j] = x_padded[i*sh + py, j*sw + px]`` (``Hq x Wq`` per phase). On it every
filter tap ``(ky, kx)`` of output pixel ``(oy, ox)`` reads ``xph`` at ``base(tap) + oy*Wq + ox``:
a constant offset from the pixel's position in a ``[OH, Wq]`` grid, whatever the stride. So:

- row mode (``OW`` a whole number of vectors, or any width from 8 when the epilogue reads the
  conv once): per output row, each vector of pixels is the sum of the taps' contiguous vector
  loads times the (broadcast) tap weights, stored straight into the output with the fused
  epilogue applied (bias, clip / ReLU6, ...); a row that is no whole number of vectors ends
  with one overlapping the one before (rows of 14: two 8-lane vectors), which recomputes a few
  pixels but needs no temporary. (Through the grid below, MobileNetV2's 144-channel 56x56 and
  96-channel 112x112 stride-2 layers took 11% and 9% longer on a Zen 4, kernel alone);
  Rows go ``ROW_BLOCK`` at a time: each input row vector the block's taps read is loaded once
  (let-bound) and shared by the rows reading it. Rows of at least one vector go in tiles of
  several rows by all of a row's vectors (``_tile_accumulate``; ``TILED``), each broadcast tap
  then serving every vector of the row, the last vector only as wide as the row's rest (rows
  of 56: 16 + 16 + 16 + 8 lanes);
- narrow rows (a row fits one vector of up to ``NARROW_LANES`` and a phase row is at least that
  wide: 7x7 planes in 8 lanes, 14x14 in 16): each output row is one vector from its row's
  position, stored into the channel's densely packed plane (its last lanes on the next row's
  first pixels, stored before that row's), then the epilogue runs over the plane in whole
  vectors;
- grid mode (the other widths, e.g. 5 with a 3x3 filter): the flattened ``[OH, Wq]`` grid is
  computed in whole vectors (its ``Wq - OW`` extra columns are ignored) into a small
  temporary, then each output row is read from it through the epilogue.

Small planes (``BLOCK_MAX_PLANE``) take ``CHANNEL_BLOCK`` channels a task and write the phased
plane's zero padding once for them. Planes with rows of at least ``STREAM_MIN_WIDTH`` (strided:
``STREAM_STRIDED_MIN_WIDTH``) copy their phase rows block by block, right before the row block
reading them (``STREAM_FILL``; on AVX2 strided ones only); strided ones into a window of the
block's rows only, which stays in L1 (``STREAM_WINDOW``).

Depthwise convs on the smallest planes (``LANES_MAX_PLANE``: 2x2 to 5x5) instead put 16
channels in the vector lanes (``channel_lanes``), each pixel summing only its taps that read
input.

No bounds check is left in the inner loops (the padding is in the copy) and the multiply-adds
read no strided vector (the stride is in the phases). The generic schedule of the same stage,
a small-window reduction with clamped, bounds-checked gathers, is 10-30x slower (MobileNetV2).

The epilogue is fused when the lowering driver names it (``ctx.epilogues[id(stage)]``: the one
elementwise output stage reading this conv, which then shares its output buffer). Should it read
the conv away from its own position, the conv goes to a temporary the epilogue then reads.

This module holds the entry points (``supported``, ``widened_data``, ``geometry``, ``emit``),
every switch and constant (hosts and tests set them here; the parts read them from here at call
time) and the choices made from them (``_streams``, ``_tiled``, ``_row_block``, ...). The code
is in parts: ``depthwise_copy`` (the phased copy, streamed and windowed), ``depthwise_taps``
(row blocks and tiles of multiply-adds), ``depthwise_channel`` (one output channel's modes and
its epilogue stores), ``depthwise_block`` (channel blocks), ``depthwise_lanes`` (channels in
the lanes), ``depthwise_loops`` (vector loops and tails), ``depthwise_flat`` (flat mode) and
``depthwise_grouped`` (grouped convs' channel tiles).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order
from . import depthwise_flat, depthwise_grouped
from .common import const_int as _const_int
from .common import (
    emit_with_epilogue,
    host_switch,
    static_conv2d_nchw_dims,
    static_grouped_conv2d_dims,
    vector_isa,
)
from .common import imm as _i
from .common import outer_loops as _outer_loops
from .depthwise_block import _channel_blocks
from .depthwise_channel import _channel, _flat_store, _store, _with_taps
from .depthwise_copy import _fill, _streamed_fill, _window_task, _xph
from .depthwise_lanes import _channel_lanes
from .depthwise_loops import _segments, _seq, _vec, _zeros
from .depthwise_taps import _tree

# tasks (image x channel planes) go to the thread pool from this many multiply-adds in all
PARALLEL_MIN_MACS = 1 << 19
VECTOR = {"avx512": 16, "avx2": 8}  # float32 lanes of one machine vector
MAX_UNROLL = 16  # vector chunks of a row unrolled (the kernels get no LLVM loop unroller)
# (``_vec``) ... and only while the unrolled loop holds at most this many statements (its body's
# times its vectors): a row block's taps (``_block``: 27 let-bound loads and 4 stores for 4 rows
# of a 3x3 at stride 2) run in a rolled loop over the row's 7 vectors, not 7 copies, which were
# most of their kernel's LLVM IR (MobileNetV2's 96 at 112x112 stride 2: 2,376 -> 1,076 lines,
# LLVM 0.14 -> 0.08 CPU s) and bought no speed: its loop's few instructions hide beside 36 FMAs
# and 27 loads. Rows of 3 vectors stay unrolled (at 64 statements, 144 at 56x56 stride 2 rolled
# ran 4% slower). AVX2 host, one thread, outputs bit for bit, us unrolled -> rolled: 313 -> 308.
UNROLL_MAX_STMTS = 128
# (``_tile_rows``) a row wider than one tile (rows of 112 on AVX2: seven tiles of 4 rows x 2
# vectors) loops over its tiles of the same shape rather than unrolling them: each tile loads
# its own input vectors, so the copies shared nothing. AVX2 host, one thread, + bias + ReLU6,
# us and LLVM IR lines, unrolled -> rolled (bit for bit): 32 at 112x112 3x3 175 -> 161, 4,998
# -> 1,267; 96 at 112x112 645 -> 574; 144 at 56x56 176 -> 170, 2,653 -> 1,552; 64 at 56x56
# 7x7 346 -> 300, 8,803 -> 4,674; 64 at 112x112 7x7 1,638 -> 1,197, 17,014 -> 3,383 (compile
# 1.51 -> 0.27 CPU s). (AVX-512 rows of 112 are tiles of 4 and 3 vectors: nothing repeats.)
ROLL_TILES = True
# (``_vec``) a row's last vector, past its whole ones, has the fewest lanes (a power of two, at
# least 4) holding the rest, not a whole vector over the ones before: rows of 56 are 3.5 zmm,
# not 4. Zen 4, one thread (us): 96 at 112x112 stride 2 3x3 + ReLU6 (rows of 56) 306 -> 263.
NARROW_TAILS = True
# see ``_vec``: bit 1 the phased copy, bit 2 the output rows (any width from 8 computed row by
# row, the last vector overlapping, instead of through the grid and its crop; 7x7 planes keep
# the grid, whose crop then overlaps). Measured on AVX2 first; both ISAs (the Zen 4
# measurement at ``common.vector_isa``)
OVERLAP_TAILS = {"avx512": 3, "avx2": 3}
# A grouped conv with several input channels per group (ResNeXt, RegNet) runs here too when
# each output channel has at most this many taps (input channels of its group x filter taps):
# each is loaded into a scalar once per channel, and the vector of output pixels is their sum
# over the group's phased planes. ResNeXt-50's 32 groups of 4 channels, 3x3, took 4.8 ms
# through the generic schedule at 128 channels, 56x56 (Zen 4, one thread); see
# tests/schedule/test_depthwise_schedule.py for the grouped cases.
MAX_GROUP_TAPS = 160
# Planes of at most BLOCK_MAX_PLANE output pixels run CHANNEL_BLOCK channels a task: the phased
# plane's zero padding is written once per task and each channel copies only its interior (a
# 7x7 plane with a 5x5 filter pads 49 pixels into 121). Zen 4, one thread (us, 1 -> 4 channels
# a task): 1152 at 7x7 5x5 + SiLU 94 -> 85, 672 at 14x14 stride 2 5x5 75 -> 60, 672 at 14x14
# 5x5 146 -> 132, 240 at 28x28 5x5 216 -> 208, 144 at 28x28 stride 2 5x5 185 -> 179.
CHANNEL_BLOCK, BLOCK_MAX_PLANE = 4, 1024
# ... strided convs on AVX2 only up to BLOCK_MAX_STRIDED_PLANE output pixels (14x14): larger
# planes ran faster a channel a task there. Zen 3, one thread, kernel alone + bias + ReLU6,
# float32, A/B in one process, medians of 9-11 interleaved rounds, input rewritten before each
# call (us, blocks of 4 -> one channel): 3x3 / 2, 144 at 56x56 88-90 -> 82-83 (three runs), 64
# at 64x64 55 -> 51, 32 at 56x56 22-23 -> 21; 5x5 / 2 unchanged (144 at 56x56 165 -> 166, 96 at
# 56x56 116 -> 116). Stride-1 28x28 planes keep their blocks (192 3x3 58 -> 60, 240 5x5 165 ->
# 169 unblocked).
BLOCK_MAX_STRIDED_PLANE = {"avx512": None, "avx2": 256}  # (None: BLOCK_MAX_PLANE's)
# On planes of at most DEFER_MAX_PLANE pixels taking the packed plane (narrow rows or the
# transcendental pass), the block's epilogues run after all its convs, each channel's plane of
# its own: read right after the conv stored it, the epilogue's whole vectors span several of the
# conv's narrower stores and wait for them to reach the cache. Zen 4, one thread (us, 4 channels
# a task): 1152 at 7x7 5x5 + SiLU 83 -> 72, 3x3 62 -> 43, 960 at 7x7 3x3 + ReLU6 31 -> 23,
# 672 at 14x14 stride 2 59 -> 56; 672 at 14x14 stride 1 124 -> 128, so 14x14 planes keep it.
DEFER_MAX_PLANE = 64


def supported(t, options=None) -> bool:
    """Is ``t`` a static float32 grouped conv2d with at most ``MAX_GROUP_TAPS`` filter taps per
    output channel (depthwise: one input channel per group; ResNeXt's 4 of a 3x3 are 36), or a
    depthwise one reading 8-bit data (``widened_data``)?"""
    if widened_data(t):
        return True
    dims = static_grouped_conv2d_dims(t)
    if dims is None:
        return False
    groups, _, cg, _, _, _, kh, kw, _, _ = dims
    return groups >= 2 and cg * kh * kw <= MAX_GROUP_TAPS


def widened_data(t) -> bool:
    """Is ``t`` a static depthwise conv2d (one input channel per group, at most
    ``MAX_GROUP_TAPS`` taps) of uint8 or int8 data with a float32 weight and output: a
    quantized model's depthwise conv of its 8-bit activation (zero point 0: the zero padding is
    the zero point), read as it is and widened as the plane is copied (``_fill``), a quarter
    of the float32 input's bytes? Its sums are the float32 conv's of the widened values. (Or of
    int16 data: a 16x8 model's, ``tflite.products16``.)"""
    dims = static_conv2d_nchw_dims(t)
    if dims is None:
        return False
    x, w = t.op.attrs["operands"]
    if x.dtype not in ("uint8", "int8", "int16") or not (w.dtype == t.dtype == "float32"):
        return False
    _, c, _, _, o, cg, kh, kw, _, _, _, _ = dims
    groups = t.op.attrs["groups"]
    return groups >= 2 and c == groups and cg == 1 and o % groups == 0 and \
        kh * kw <= MAX_GROUP_TAPS


def geometry(t) -> dict:
    """Sizes of depthwise stage ``t``: input, output, filter, phases and the temporaries."""
    a = t.op.attrs
    x, w = a["operands"]
    n, c, h, wd = (_const_int(d) for d in x.shape)
    o, cg, kh, kw = (_const_int(d) for d in w.shape)
    oh, ow = _const_int(t.shape[2]), _const_int(t.shape[3])
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl = a["padding"][0], a["padding"][1]
    hq = oh + ((kh - 1) * dh) // sh
    lanes = VECTOR[vector_isa()]
    cols = ow + ((kw - 1) * dw) // sw  # the columns of a phase row the taps read
    aligned = _aligned_rows(lanes, cols, ow, sh, sw, w.shape[1], kh * kw)
    wq = -(-cols // lanes) * lanes if aligned else cols
    plane = hq * wq
    taps = []  # (ky, kx, offset of the tap's window in xph)
    for ky in range(kh):
        for kx in range(kw):
            ry, rx = ky * dh, kx * dw
            phase = (ry % sh) * sw + rx % sw
            taps.append((ky, kx, phase * plane + (ry // sh) * wq + rx // sw, ry // sh))
    rows_mode = ow % lanes == 0
    grid = -(-(oh * wq) // lanes) * lanes  # the grid mode's vectors, rounded up
    reach = max(t[2] for t in taps) + (grid if not rows_mode else (oh - 1) * wq + ow)
    groups = c // cg
    # per group: ``cg`` input channels, ``m`` output channels (depthwise: 1 and the multiplier)
    size = max(sh * sw * plane, reach)
    return dict(n=n, c=c, o=o, groups=groups, cg=cg, m=o // groups, h=h, w=wd, oh=oh, ow=ow,
                kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw,
                pt=pt, pl=pl, hq=hq, wq=wq, cols=cols, plane=plane, lanes=lanes, taps=taps,
                rows_mode=rows_mode, grid=grid,
                xph_len=-(-size // lanes) * lanes if aligned else size,
                lead=(-pl) % lanes if aligned and sh == 1 else 0)


# On AVX-512 the phased plane of a stride-1 depthwise conv with rows of at least a vector has
# its rows a whole number of vectors apart and starts ``lead`` floats into its allocation, so
# that each row's first input pixel (column ``pl``) sits on a 64-byte line: the copy's stores
# and the centre taps' loads are whole lines, not two. Rows of 66 floats (a 64x64 plane with a
# 3x3 filter) put nearly every zmm load of the taps across two lines. Sapphire Rapids, one
# thread, kernel alone, whole copy (us, packed -> aligned rows): 64 at 64x64 58.5 -> 53.2,
# 192 at 28x28 + ReLU6 33.4 -> 31.7 but 30.9 -> 31.7 in another run, 256 at 16x16 (rows of 18
# -> 32) 13.2 -> 14.1, 128 at 32x32 (34 -> 48) 24.2 -> 24.5, 144 at 56x56 + ReLU6 124.9 ->
# 128.4 (noise level), so rows from ALIGN_MIN_WIDTH growing at most ALIGN_MAX_GROWTH.
# AVX2 keeps its packed rows at stride 1 (not measured there).
ALIGN_ROWS = {"avx512": True, "avx2": False}
ALIGN_MAX_GROWTH = 1.25  # the widest aligned row over the row the taps read
# Stride-2 filters of at most ALIGN_STRIDED_MAX_TAPS taps (3x3) with rows of at least a vector
# also get vector-aligned phase rows, from the allocation's start (no ``lead``: the taps read
# their phase rows from column 0 or 1): the copy's stores and two thirds of the taps' loads (the
# first vector of a row) are whole lines. Zen 4, one thread, kernel alone with the uint8
# requantizing epilogue, 8-bit data, interleaved A/B (us, packed -> aligned): 192 at 56x56
# (rows of 29 -> 32) 89.5 -> 81.6, 144 at 56x56 67.6 -> 61.4, 96 at 112x112 (57 -> 64) 163 ->
# 151; float32 data 96 at 112x112 195 -> 188, 192 at 56x56 105 -> 104; 5x5 filters lost (96
# at 56x56 70.5 -> 75.2: their tiles' loads gain nothing). From rows of ALIGN_STRIDED_MIN_WIDTH:
# 14x14 outputs' phase rows of 15 -> 16 then take narrow rows (one 16-lane vector a row, not two
# overlapping 8-lane ones): same machine (us): 288 at 28x28 40.2 -> 35.3, 144 at 28x28 21.0 ->
# 17.7, 576 at 28x28 75.2 -> 72.2; float32 data 288 at 28x28 43.1 -> 35.6.
# Both ISAs (AVX2's rows a whole number of 8-lane vectors: 57 -> 64, 29 -> 32, 15 -> 16). Zen 3,
# one thread, kernel alone + bias + ReLU6, float32, A/B in one process, medians of 7-9
# interleaved rounds (us, packed -> aligned): 192 at 28x28 34 -> 31-32, 384 at 28x28 64 -> 61,
# 96 at 112x112 (with ``STREAM_FILL``, below) 249-283 -> 208-218; 144 at 56x56 85-89 -> 87-89.
ALIGN_STRIDED = True
ALIGN_STRIDED_MAX_TAPS = 9
ALIGN_STRIDED_MIN_WIDTH = 8
ALIGN_MIN_WIDTH = 48  # (rows of 28, 30 -> 32 floats, lost 2-4%: 88 at 28x28 + ReLU 14.4 -> 15.0)


def _aligned_rows(lanes: int, cols: int, ow: int, sh: int, sw: int, cg, taps: int) -> bool:
    """Are the phased plane's rows vector-aligned (``ALIGN_ROWS``)?"""
    wide = -(-cols // lanes) * lanes
    if not (_const_int(cg) == 1 and cols % lanes != 0 and wide <= ALIGN_MAX_GROWTH * cols):
        return False
    if (sh, sw) == (2, 2):
        return ALIGN_STRIDED and ow >= ALIGN_STRIDED_MIN_WIDTH and taps <= ALIGN_STRIDED_MAX_TAPS
    return ALIGN_ROWS[vector_isa()] and sh == 1 and sw == 1 and ow >= max(lanes, ALIGN_MIN_WIDTH)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing depthwise stage ``t`` (and its fused epilogue) into ``out``."""
    return emit_with_epilogue(ctx, t, out, bodies, lambda buf, epi: _emit(ctx, t, buf, epi),
                              tuple(_const_int(d) for d in t.shape))


def _emit(ctx, t, out, epi) -> S.Stmt:
    """The conv (and the epilogue ``epi``: its body and axis vars, or None) into ``out``."""
    x, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    g = geometry(t)
    if channel_lanes(g):
        x = depthwise_flat.float_reads(x)
        return _channel_lanes(ctx, g, x, w, out, epi)
    cg, size = g["cg"], g["xph_len"]
    macs = g["n"] * g["o"] * cg * g["oh"] * g["ow"] * g["kh"] * g["kw"]
    put = _flat_store(ctx, g, out, epi) if flat_mode(g) else None
    if put is not None:
        return depthwise_flat.emit(ctx, g, x, w, put, macs >= PARALLEL_MIN_MACS,
                                   (_vec, _zeros, _with_taps, _tree))
    x = depthwise_flat.float_reads(x)

    cb = _channel_block(g)
    if cb > 1:
        return _channel_blocks(ctx, g, x, w, out, epi, cb, macs >= PARALLEL_MIN_MACS)

    def task(idx):
        b, gi = idx
        xph, wrap = _xph(g, cg * size)
        # the group's phased planes, one view each (one plane: the buffer itself)
        planes = [xph] if cg == 1 else [
            decl_buffer((size,), "float32", f"dw_xph{ci}", data=xph.data, elem_offset=ci * size)
            for ci in range(cg)]
        if _windowed(g, epi):
            return _window_task(ctx, g, x, w, out, b, gi, epi)
        if _streams(g, epi):  # the phase rows copied block by block, just before their use
            parts = [_fill(ctx, g, xph, x, b, gi, rows=(_i(0), _reach_rows(g)))]
            parts.append(_channel(ctx, g, planes, w, out, b, gi, epi, lambda oy, nrows:
                                  _streamed_fill(ctx, g, xph, x, b, gi, oy + _reach_rows(g),
                                                 nrows)))
        elif depthwise_grouped.applies(g):  # (a transcendental epilogue fused too)
            parts = [_fill(ctx, g, plane, x, b, gi * cg + ci) for ci, plane in enumerate(planes)]
            parts.append(depthwise_grouped.emit_group(
                ctx, g, planes, w, gi, _segments(g["ow"], depthwise_grouped.row_lanes(g)),
                lambda oc, oy, j, vl, val: _store(out, val, [b, oc, oy, E.Ramp(j, 1, vl)], epi)))
        else:
            parts = [_fill(ctx, g, plane, x, b, gi * cg + ci) for ci, plane in enumerate(planes)]
            for mi in range(g["m"]):
                oc = gi * g["m"] + mi if g["m"] > 1 else gi
                parts.append(_channel(ctx, g, planes, w, out, b, oc, epi))
        body = _seq(parts)
        for plane in planes[::-1] if cg > 1 else []:
            body = S.DeclBuffer(plane, body)
        return wrap(body)

    return _outer_loops(ctx, [g["n"], g["groups"]], macs >= PARALLEL_MIN_MACS, task)


# Depthwise convs on planes of at most LANES_MAX_PLANE output pixels (and LANES_MAX_INPUT input
# pixels: the late stages of small nets, 3x3 at 2x2-4x4, stride 2 at 4x4-7x7) put 16 (or 8)
# channels in the vector lanes instead (``_channel_lanes``): per block of channels the input and
# the filter taps are transposed once into channel vectors, and each output pixel is the sum of
# only its taps that read input (listed at build time), with no padded copy and no per-channel
# grid whose few pixels fill a fraction of a vector. Sapphire Rapids, one thread, + bias + relu,
# ms, planes -> channel lanes (ONNX Runtime): 960 channels 3x3 at 2x2 0.022 -> 0.005 (0.012),
# at 3x3 0.023 -> 0.009 (0.016), at 4x4 0.024 -> 0.013 (0.017), at 5x5 0.028 -> 0.017 (0.024),
# stride 2 at 4x4 0.027 -> 0.010 (0.015), at 7x7 0.032 -> 0.023 (0.022), 5x5 at 4x4 0.027 ->
# 0.018 (0.022). Larger planes lost: 960 at 7x7 (narrow rows) 0.022 -> 0.032 (0.035), stride 2
# at 10x10 0.034 -> 0.038 (0.032).
LANES_MAX_PLANE = 25
LANES_MAX_INPUT = 81


def channel_lanes(g) -> bool:
    """Does depthwise geometry ``g`` run with its channels in the lanes (``LANES_MAX_PLANE``):
    one input and one output channel a group, channels a multiple of 8, a small plane?"""
    return g["cg"] == 1 and g["m"] == 1 and g["c"] % 8 == 0 and \
        g["oh"] * g["ow"] <= LANES_MAX_PLANE and g["h"] * g["w"] <= LANES_MAX_INPUT


def flat_mode(g) -> bool:
    """Does geometry ``g`` run in flat mode (``depthwise_flat``): a plane that would otherwise
    fall to the grid (neither row mode nor narrow rows), or take narrow rows in blocks
    (``depthwise_flat.over_narrow``)? (Its epilogue must also be one ``_flat_store`` can
    apply.)"""
    return depthwise_flat.applies(g) and not _row_mode(g) and (
        _narrow_lanes(g) is None or depthwise_flat.over_narrow(g, NARROW_BLOCK_MAX))


def _channel_block(g) -> int:
    """Channels per task (``CHANNEL_BLOCK``; 1: one channel, its padding written each time)."""
    most = BLOCK_MAX_STRIDED_PLANE[vector_isa()] if g["sh"] * g["sw"] > 1 else None
    if g["cg"] != 1 or g["oh"] * g["ow"] > (BLOCK_MAX_PLANE if most is None else most):
        return 1
    cb = CHANNEL_BLOCK
    while cb > 1 and g["groups"] % cb:
        cb //= 2
    return cb


def _deferred(g, epi) -> bool:
    """Do a channel block's epilogues run after all its convs (``DEFER_MAX_PLANE``)?"""
    return g["m"] == 1 and g["oh"] * g["ow"] <= DEFER_MAX_PLANE and (
        _narrow_lanes(g) is not None or (_row_mode(g) and _split_epilogue(g, epi)))


def _row_mode(g) -> bool:
    """Are the output rows computed row by row from their own vectors (no grid)?"""
    return g["rows_mode"] or (g["ow"] >= 8 and _overlap(2))


# A deferred block at stride 1 (``_deferred``: 7x7 planes) copies all its channels' planes first,
# each into a plane of its own (all zeroed at once before), then runs their convs: a conv's
# vector loads right after the copy's narrower stores of the same plane wait for them to reach
# the cache (no store forwards to a load spanning several stores). Sapphire Rapids, one thread,
# kernel alone (us, copy then conv per channel -> copies first): 960 at 7x7 3x3 + ReLU6 32.5 ->
# 20.3, 1152 at 7x7 5x5 + SiLU 77 -> 59; at stride 2 a loss (576 at 14x14 3x3 19.9 -> 22.1),
# so it keeps the shared plane. AVX2 as measured there (``FILLS_FIRST``).
FILLS_FIRST = {"avx512": True, "avx2": False}


def _fills_first(g) -> bool:
    """Does a deferred block copy all its channels' planes before their convs?"""
    return FILLS_FIRST[vector_isa()] and g["sh"] == 1 and g["sw"] == 1


def _overlap(bit: int) -> bool:
    """Are the tails of this kind (``OVERLAP_TAILS`` bit) overlapping vectors on this host?"""
    return bool(OVERLAP_TAILS[vector_isa()] & bit)


# Rows of at least STREAM_MIN_WIDTH pixels (112x112 and 56x56 planes) copy their phase rows
# block by block (``_streams``), each output row block's new phase rows right before its taps
# read them, instead of the whole phased plane first: the rows are still in L1 when read (a
# 112x112 plane's phases, 52 KB, are more than L1 holds) and the input's reads from L2/L3
# interleave with the multiply-adds. Sapphire Rapids (AVX-512, two FMA ports), one thread, kernel
# alone with ReLU6 (us, whole copy -> per block): 96 at 112x112 stride 2 300 -> 231, 8 of them
# (in L2) 16.7 -> 14.1; built and run through the graph executor beside the old code: 96 at
# 112x112 s2 290 -> 264, 32 at 112x112 124 -> 116, with SiLU 201 -> 185, 144 at 56x56 127 ->
# 123, 64 at 56x56 5x5 86 -> 80. Not measured on Zen 4 (its L1 holds 32 KB: the same reasoning
# holds); at stride 1 AVX2 keeps the whole copy as measured there (``STREAM_UNIT_STRIDE``).
# Strided convs stream from rows of STREAM_STRIDED_MIN_WIDTH (their input plane is several
# times the output's: the copy is most of the work), also in channel blocks (their padding
# zeroed once before the block): same machine, interleaved A/B, kernel alone (us): 144 at 56x56
# s2 3x3 + ReLU6 74.3 -> 73.9 (min 73.0 -> 69.0), 96 at 56x56 s2 5x5 + ReLU6 61.1 -> 56.2; at
# stride 1 rows of 28 lost (192 at 28x28 3x3 + ReLU6 31 -> 37), and narrow rows gained nothing.
# Strided convs stream on AVX2 too (into the window, ``STREAM_WINDOW``): Zen 3 (32 KB L1, 512 KB
# L2), one thread, kernel alone + bias + ReLU6, float32, A/B in one process, medians of 7-9
# interleaved rounds, the input rewritten before each call as its producer leaves it in a model
# (us, whole copy -> streamed window; both with ``ALIGN_STRIDED`` rows): 96 at 112x112 3x3 / 2
# 246-263 -> 215-218, 32 at 224x224 3x3 / 2 492 -> 433; 64 at 128x128 5x5 / 2 360 -> 374 and
# 367 -> 374 (one run each: within the noise). Alone, without aligned rows: 96 at 112x112 249 ->
# 227-233, 64 at 128x128 3x3 / 2 214 -> 205, 32 at 224x224 370 -> 326. uint8 data with the
# requantizing epilogue, 3x3 / 2, old AVX2 choices -> these three (this, ``ALIGN_STRIDED``,
# ``BLOCK_MAX_STRIDED_PLANE``): 96 at 112x112 264 -> 238, 144 at 56x56 97 -> 94, 192 at 28x28
# 36 -> 36. In MobileNetV2 (bench_layers_ort, graph order, alternating processes, ms) the 96 at
# 112x112 0.28-0.64 -> 0.21-0.25, the 144 at 56x56 0.088-0.101 -> 0.083-0.085; in EfficientNet-B0
# (+ SiLU, two runs each) its 96 at 112x112 3x3 / 2 0.79-0.95 -> 0.60-0.62, 144 at 56x56 5x5 / 2
# 0.30-0.33 -> 0.28-0.29, 240 at 28x28 3x3 / 2 0.086-0.089 -> 0.083-0.093.
# (Measured non-win on the same host: no phased copy at all, each tap reading the input by
# stride-2 vector loads (two loads and a shuffle each; a TVMScript prototype of 4-row blocks,
# borders left out, so 6/7 of the vectors): 96 at 112x112 0.307 ms against this schedule's
# 0.271 ms and 0.270 against 0.279 in another run, interleaved: the shuffles cost more than
# the copy to the window saves.)
STREAM_FILL = {"avx512": True, "avx2": True}
STREAM_UNIT_STRIDE = {"avx512": True, "avx2": False}  # (stride-1 convs stream too)
STREAM_MIN_WIDTH = 32
# Stride-1 filters of fewer than STREAM_FEW_TAPS taps (3x3) stream only from rows of
# STREAM_FEW_TAPS_MIN_WIDTH: their plane fits L1 whole below that, and a row block's few
# multiply-adds then wait on the loads of rows the copy has just stored. Same machine, kernel
# alone, aligned rows (``ALIGN_ROWS``), interleaved (us, streaming -> whole copy): 64 at 64x64
# 66.7 -> 54.9, 32 at 64x64 28.9 -> 22.9, 128 at 32x32 31.2 -> 22.8, 144 at 56x56 + ReLU6
# 125.1 -> 125.6; 32 at 112x112 + ReLU6 113.6 -> 129.8 and 64 at 56x56 5x5 71.9 -> 74.0 keep it.
STREAM_FEW_TAPS, STREAM_FEW_TAPS_MIN_WIDTH = 25, 96
# On Zen 4 the strided convs with rows under 32 (56x56 inputs) lost by streaming, so they copy
# their plane whole: one thread, kernel alone with the uint8 requantizing epilogue, interleaved
# (us, from rows of 16 -> 32): 192 at 56x56 s2 3x3, 8-bit data, 93.4 -> 85.8, 144 at 56x56 70.0
# -> 64.8, 96 at 56x56 s2 5x5 74.4 -> 72.4; float32 data 192 at 56x56 100.7 -> 97.9, 96 at
# 56x56 s2 5x5 79.6 -> 78.4 (96 at 112x112, rows of 56, keep streaming: 159 vs 168 whole).
# Zen 3 (AVX2) as well, one channel a task, aligned rows (us, from 32 -> from 16): 144 at 56x56
# 3x3 / 2 85 -> 92, 32 at 56x56 20 -> 22, 64 at 64x64 52 -> 54.
STREAM_STRIDED_MIN_WIDTH = 32


def _reach_rows(g) -> int:
    """Phase rows past an output row its taps read (a 3x3 filter: 2 at stride 1, 1 at 2)."""
    return max(t[3] for t in g["taps"])


# A streamed copy (``_streams``) also prefetches the input rows the row block
# STREAM_PREFETCH_BLOCKS blocks on will copy, a cache line a prefetch: a plane's rows come from
# L3 (MobileNetV2's 192 at 112x112, 2.4 MB of uint8, passes L2), and a block's few lines in
# flight left the copy waiting on each (uint8 data: 6.7 GB/s). 0: no prefetch.
STREAM_PREFETCH_BLOCKS = 1


# A strided streamed conv (``_streams``) copies each row block's phase rows, with the rows
# its taps reach past the block, into a window of that many rows a phase (``_window_task``),
# not into the whole phased plane: the window stays in L1, where a 112x112 plane's phases (57
# rows of 64 floats, 58 KB) each channel wrote over lines that L1 had evicted to L2: the copy
# was 90% of the kernel. The reach rows are copied twice (a 3x3 filter's: 5 rows a block of 4).
# Xeon (Rocket Lake, AVX-512), one thread, kernel alone with the uint8 requantizing epilogue,
# interleaved (us, whole plane -> window; + ``STREAM_PREFETCH_BLOCKS``): 3x3 stride 2, 192 at
# 112x112 uint8 414 -> 302 (292), 96 at 112x112 uint8 207 -> 146 (142), int8 data 355 -> 345
# (341), float32 data 677 -> 526 (452). (AVX2 as measured at ``STREAM_FILL``.)
STREAM_WINDOW = {"avx512": True, "avx2": True}


def _windowed(g, epi) -> bool:
    """Does a strided streamed conv of geometry ``g`` copy into a window (``STREAM_WINDOW``)?"""
    return (host_switch(STREAM_WINDOW) and g["sh"] != 1 and g["cg"] == 1 and g["m"] == 1
            and _streams(g, epi))


def _stream_min_width(g) -> int:
    """The narrowest rows of geometry ``g`` that stream (``STREAM_*``)."""
    if g["sh"] != 1:
        return STREAM_STRIDED_MIN_WIDTH
    return STREAM_MIN_WIDTH if len(g["taps"]) >= STREAM_FEW_TAPS else STREAM_FEW_TAPS_MIN_WIDTH


def _streams(g, epi) -> bool:
    """Is the phased copy made block by block before the blocks' taps (``STREAM_FILL``)?"""
    return (STREAM_FILL[vector_isa()] and g["cg"] == 1 and g["m"] == 1
            and (g["sh"] != 1 or STREAM_UNIT_STRIDE[vector_isa()])
            and g["ow"] >= _stream_min_width(g)
            and _narrow_lanes(g) is None and _row_mode(g)
            and not _split_epilogue(g, epi))


# A stride-2 copy of uint8 data (``widened_data``) reads its rows as 16-bit pairs of columns
# (``_pairs``): each column phase takes the low or the high byte of consecutive pairs, one
# contiguous load of 32 bytes and a shift for 16 values, where a stride-2 byte load is two
# loads and two shuffles. Zen 4, one thread, kernel alone with the uint8 requantizing epilogue,
# interleaved (us, strided bytes -> pairs): 3x3, 192 at 56x56 78.6 -> 68.9 (82.7 -> 75.9 in
# another run), 144 at 56x56 58.4 -> 55.4, 288 at 28x28 37.1 -> 31.0, 144 at 28x28 17.9 ->
# 14.9, 96 at 112x112 141 -> 131; 5x5 96 at 56x56 72.0 -> 72.3. int8 data gained nothing (192
# at 56x56 83.3 -> 84.3), so it keeps the strided loads.
PAIR_FILL = True


# Output rows computed ROW_BLOCK at a time (``_block``): each input vector the block's taps read
# is loaded once and shared by every row reading it (a 3x3 filter at stride 1, 6 rows: 24 loads
# for 54 multiply-adds, 54 row by row). A zmm load is the limit here, not the FMA: Zen 4, one
# thread, with ReLU6 (us, rows 1 -> 6): 144 at 56x56 3x3 182 -> 118, 32 at 112x112 151 -> 101,
# 240 at 28x28 5x5 176 -> 154, 672 at 14x14 5x5 133 -> 124. At stride 2 the phases share
# fewer loads and the rows' live values spill: 4 rows for a 3x3 (96 at 112x112 252 -> 230), 1
# for larger filters (144 at 56x56 5x5 with 2 rows 187 -> 204). Grouped convs keep 1 row.
# On AVX2 (16 ymm registers) a strided 3x3's 4-row block spills: 2 rows. Zen 3, one thread,
# conv + bias + ReLU alone, interleaved, two runs (us, 4 rows -> 2; ORT's): 96 at 112x112
# 249 -> 230 and 274 -> 265 (445-608), 144 at 56x56 111 -> 109 and 99 -> 95 (194-208), 192 at
# 28x28 35 -> 39 and 35 -> 33 (87-102), 576 at 14x14 32 -> 31 and 32 -> 30 (71-82).
ROW_BLOCK = 6
ROW_BLOCK_STRIDED = {"avx512": 4, "avx2": 2}
# Narrow-row planes of at most NARROW_BLOCK_MAX rows whose filter accumulates (``_accumulates``)
# take one block of all their rows, at row 0, so it skips its taps on padding rows (a 7x7 plane
# with a 7x7 filter: 37 of 49 filter rows). Zen 4, one thread (us, 6 + 1 rows -> 7): 512 at 7x7
# 7x7 44 -> 37. 14x14 planes in two blocks of 7, not 6 + 6 + 2: 256 with a 7x7 56 -> 53, but
# 480 with a 5x5 + SiLU 89 -> 98, so they keep ROW_BLOCK.
NARROW_BLOCK_MAX = 8


def _row_block(g) -> int:
    """Output rows per ``_block`` for geometry ``g``."""
    if g["cg"] > 1:
        return 1
    if _tiled(g):
        return _tile_height(g)
    if g["sh"] == 1:
        if g["oh"] <= NARROW_BLOCK_MAX and _narrow_lanes(g) is not None and _accumulates(g):
            return g["oh"]
        return ROW_BLOCK
    return ROW_BLOCK_STRIDED[vector_isa()] if g["kh"] <= 3 else 1


# Filters of at least ACCUMULATE_MIN_TAPS taps (5x5, 7x7) take ``_block_accumulate``: the block's
# input vectors are loaded input row by input row, each one multiplied into the accumulators of
# every output row it reaches right after its load, so only the rows' accumulators and one input
# vector are live. Loaded all first (``_block``'s lets), a 7x7 block's 84 input vectors and 49
# broadcast taps spill: ConvNeXt's 128-channel 28x28 7x7 read and wrote the stack at about
# every multiply-add.
# (Blocks of fewer than ACCUMULATE_MIN_ROWS rows keep ``_block``: one chain of 25 or 49
# dependent multiply-adds would wait on the FMA's latency.) Rows of at most 8 pixels (7x7 planes,
# 8-lane vectors) take it from ACCUMULATE_MIN_TAPS_8 taps. Zen 4, one thread (us, lets ->
# accumulators): 128 at 28x28 7x7 178 -> 110, + GELU 236 -> 171; 128 at 16x16 7x7 with ConvMixer's
# GELU, batch norm and residual 79 -> 53 (with ``FLAT_OWN_POSITION``); 64 at 56x56 7x7 376 -> 302,
# 512 at 7x7 7x7 53 -> 43; 240 at 28x28 5x5 + ReLU6 149 -> 113, 480 at 14x14 5x5 + SiLU 117 ->
# 86; 7x7 planes with a 5x5 filter lost in blocks of 6 rows and 1 (576 + ReLU6 27.1 -> 29.0),
# and win in one block of all 7 (``NARROW_BLOCK_MAX``): 576 + ReLU6 36.8 -> 27.6, 1152 + SiLU
# 103 -> 78 (3x3 filters: no gain, 960 + ReLU6 27.2 -> 30.2 with 9).
ACCUMULATE_MIN_TAPS = 25
ACCUMULATE_MIN_TAPS_8 = 25
ACCUMULATE_MIN_ROWS = 4


def _accumulates(g) -> bool:
    """Do the row blocks of geometry ``g`` accumulate in input-row order (``ACCUMULATE_*``)?"""
    taps = len(g["taps"])
    return g["cg"] == 1 and taps >= (ACCUMULATE_MIN_TAPS if g["ow"] > 8 else
                                     ACCUMULATE_MIN_TAPS_8)


# Rows of at least one vector (stride 1, or stride 2 with at least TILE_STRIDED_MIN_TAPS taps)
# take ``_tile_accumulate``: a tile of output rows over all of a row's vectors at once, in
# input-row order like ``_block_accumulate``, so each broadcast filter tap (49 of a 7x7: more
# than the registers hold, so reloaded from the stack) serves one multiply-add per vector of
# the row, not one; the row's last vector is ``_tail_lanes`` wide (rows of 56: 16 + 16 + 16 + 8
# lanes, not 4 x 16). Tiles hold at most TILE_MAX_ACCS accumulators: rows of 56 take 4 rows a
# tile, rows of 28 8 (6 and 7 no better), rows of 112 two tiles of 4 rows. Zen 4, one thread
# (us, per-vector row blocks -> tiles): 64 at 56x56 7x7 317 -> 244 (ORT 327), + GELU 478 -> 411,
# 128 at 28x28 7x7 140 -> 122, 64 at 56x56 5x5 + ReLU6 156 -> 124, 32 at 112x112 3x3 + SiLU
# 254 -> 238; at stride 2, 144 at 56x56 5x5 + SiLU 197 -> 178, 96 at 56x56 5x5 + ReLU6 112 ->
# 98, but 3x3 filters gained nothing there (144 at 56x56 + ReLU6 88 -> 94).
TILED = True
TILE_MIN_TAPS = 9
TILE_STRIDED_MIN_TAPS = 25
# accumulators of one tile (rows x vectors; wider rows split into tiles), per vector ISA: AVX2
# has 16 registers, and a tile of 16 left none for the tile's row of input vectors and the
# broadcast tap (4 rows x 4 vectors + 4 + 1: stack spills and reloads in every tap). Measured
# on AVX2 code (-mcpu=haswell on the Rocket Lake Xeon, one thread, conv + bias + ReLU6, A/B in
# one process, 9 interleaved rounds, thread CPU ms, 16 -> 12 -> 8): 32 at 112x112 3x3 0.196
# -> 0.198 -> 0.188, 144 at 56x56 3x3 0.207 -> 0.197 -> 0.185, 192 at 28x28 3x3 0.058 ->
# 0.054 -> 0.052, 576 at 14x14 3x3 0.046 -> 0.038 -> 0.038, 64 at 56x56 7x7 0.308 -> 0.265
# -> 0.265, 128 at 28x28 7x7 0.157 -> 0.141 -> 0.131, 240 at 28x28 5x5 0.156 -> 0.142 ->
# 0.129, 96 at 112x112 3x3 0.677 -> 0.673 -> 0.646, 144 at 56x56 5x5/2 0.161 -> 0.156 ->
# 0.159
TILE_MAX_ACCS = {"avx512": 16, "avx2": 8}
TILE_ROWS = (4, 8)  # the fewest and most rows of a tile


def _tiled(g) -> bool:
    """Do the row blocks of geometry ``g`` take ``_tile_accumulate`` (``TILED``)?"""
    taps = len(g["taps"])
    return (TILED and g["cg"] == 1 and g["ow"] >= g["lanes"] and taps >= TILE_MIN_TAPS
            and (g["sh"] == 1 or taps >= TILE_STRIDED_MIN_TAPS))


def _tile_height(g) -> int:
    """Output rows of a tile: as many as ``TILE_MAX_ACCS`` accumulators hold over a whole row's
    vectors, within ``TILE_ROWS`` (AVX-512: rows of 56 4, rows of 28 8)."""
    lo, hi = TILE_ROWS
    return min(hi, max(lo, tile_max_accs() // len(_segments(g["ow"], g["lanes"]))))


def tile_max_accs() -> int:
    """``TILE_MAX_ACCS`` of the vector ISA the code is made for."""
    return TILE_MAX_ACCS[vector_isa()]


# A transcendental epilogue (SiLU's sigmoid, GELU's erf) on rows of at most SPLIT_MAX_WIDTH
# pixels runs in a pass of its own over the channel's conv values (``dw_conv``, packed densely
# in L1), after the taps' pass, in whole vectors over the plane when it reads nothing per pixel
# but the conv (``_flat_epilogue``). Fused into one row's iteration, the taps and the function's
# polynomial share the vector registers, rows of 14 take two 8-lane vectors, and a row of one or
# two vectors is a single dependency chain about 150 instructions long. Zen 4, one thread, with
# SiLU and ``ROW_BLOCK`` rows (us, fused -> pass over the plane): 480 at 14x14 3x3 81 -> 57,
# 240 at 14x14 stride 2 55 -> 43, 672 at 14x14 5x5 185 -> 148, 240 at 28x28 5x5 221 -> 205;
# rows of 56 and 112 gain nothing (the epilogue's vectors are whole there already).
SPLIT_MAX_WIDTH = 32
_TRANSCENDENTAL = ("exp", "sigmoid", "tanh", "erf", "log")


def _transcendental(epi) -> bool:
    return epi is not None and any(
        isinstance(n, E.Call) and n.op_name.split(".")[-1] in _TRANSCENDENTAL
        for n in post_order(epi[0]))


def _split_epilogue(g, epi) -> bool:
    """Does epilogue ``epi`` run in a pass of its own (``SPLIT_MAX_WIDTH``)?"""
    return g["ow"] <= SPLIT_MAX_WIDTH and _transcendental(epi)


# Grid mode (rows under 8 pixels with fewer than 8 columns in a phase's row) with a
# transcendental epilogue packs the grid's rows densely and runs the epilogue over the plane in
# whole vectors (``_flat_epilogue``): a 7x7 plane is 4 16-lane vectors, where row by row it is
# 14 4-lane ones. (Zen 4, one thread, with SiLU, us, rows -> plane: 1152 at 7x7 5x5 206 -> 156,
# before narrow rows took such planes; with ReLU6 the extra pass cost more than it saved.)
FLAT_GRID_EPILOGUE = True
# Narrow rows: a plane whose rows fit one vector of NARROW_LANES or fewer (7x7: 8 lanes, 14x14:
# 16), and whose phase rows are at least that wide, computes each output row as one vector from
# the row's position in the phased plane (its last lanes land on the next row's first pixels in
# ``dw_conv``, stored before that row's), in ``ROW_BLOCK`` blocks; then one pass over the packed
# plane applies the epilogue in whole vectors. The grid instead computes ``OH * Wq`` positions
# (7x7 5x5: 80 for 49 pixels), each tap a zmm load of its own. Zen 4, one thread (us, grid ->
# narrow rows): 1152 at 7x7 5x5 + SiLU 142 -> 92, 3x3 83 -> 62, 672 at 14x14 stride 2 5x5 95
# -> 73, 1152 at 7x7 5x5 + ReLU6 98 -> 68; rows of 14 in 16 lanes instead of two overlapping 8
# 3-5% faster (672 at 14x14 5x5 + SiLU 149 -> 141).
NARROW_LANES = 16


def _narrow_lanes(g) -> int | None:
    """The vector width of a narrow row for geometry ``g`` (None: not a narrow-rows plane)."""
    ow = g["ow"]
    nw = max(8, 1 << (ow - 1).bit_length())
    if g["rows_mode"] or nw > min(NARROW_LANES, g["lanes"], g["wq"]):
        return None
    return nw


# An epilogue reading operands of the output's shape at the pixel's own position (ConvMixer's
# residual add after GELU and batch norm) also runs over the plane in whole vectors, those
# operands read through flat views: rows of 28 are 2 vectors (the second overlapping) of GELU
# each, a 28x28 plane 49.
FLAT_OWN_POSITION = True


