"""conv2d (NCHW, groups 1, a filter wider than 1x1) with the output channels in the vector
lanes, for constant (prepacked) weights (written for AVX2; AVX-512 runs it too).

``conv_direct`` puts 16 flattened output pixels in the lanes of each accumulator and pays for
it at the edges: the pixels of a ``Wq``-wide grid include ``Wq - OW`` padding columns (2 of 16
at 14x14, 2 of 9 at 7x7), stride 2 needs a phased copy of the input, and every input vector
load is unaligned. Here a tile is 16 output channels x 6 (or 5) output pixels, held in 12 (or
10) accumulators: per filter tap, two aligned vector loads of the weights, prepacked at build
time as ``[O/16][C][KH][KW][16]``, and one broadcast input value per pixel. A pixel is read
through its own offset into a zero-padded copy of the input (from a table of offsets filled
once per call), so the tiles cover the output plane exactly (any size, any stride or
dilation, rows crossed freely) and nothing is computed twice. The fused elementwise epilogue
(bias, residual add, relu) is applied to the tile and stored one output channel per lane.

The code is kept small for LLVM, whose optimizer is most of a cold build: the filter rows are
a loop and a tile is stored one pixel an iteration (both were unrolled, with the columns: 4,800
LLVM instructions for a 3x3 conv, about 1,000 with all taps as loops; LLVM's time 2x less, the
run time the same on a Zen 2, but 5-25% slower on a Zen 3 until the columns were unrolled
again: ``UNROLL_TAPS``). (One tile size with the last tile moved back over the one before,
instead of 6s and 5s, saves a third of the rest but ran 3-5% slower at 7x7 and 14x14: 10
tiles of 5 for 49 pixels, or 9 of 6 computing 54.)

The tiles of 16 output channels are the outer (parallel) loop. Inside one, the input channels
run in blocks whose weights (16 KB) stay in L1 while a band of pixel tiles reads them, the
band's partial sums kept in a scratch between blocks (measured on a loaded Zen 2, one thread:
64 -> 64 at 56x56 16% faster than one pass over all channels, 512 -> 512 at 7x7 7%).

Measured on a Zen 2 (one thread, thread CPU time, conv + bias + relu, ms, against
``conv_direct``): 64 -> 64 3x3 at 56x56 2.37 vs 2.55, 128 -> 128 at 28x28 2.46 vs 2.64,
256 -> 256 at 14x14 2.53 vs 2.75, 512 -> 512 at 7x7 2.97 vs 3.19, the stride-2 3x3 convs of
ResNet-18 1.29 / 1.19 / 1.28 vs 1.65 / 1.62 / 1.63. A 7x7 stride-2 stem of 3 channels (whose
output rows are whole vectors, ``conv_direct``'s row mode) stays on ``conv_direct``: 2.79 here
vs 2.47 there.

On both ISAs (``ENABLED``: the Zen 4 measurement at ``common.vector_isa``), for prepacked
weights; anything else keeps ``conv_direct``.
"""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import allocated as _allocated
from .common import divisor_near, static_grouped_conv2d_dims, vector_isa
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner
from .knobs import select as _knobs

ENABLED = {"avx512": True, "avx2": True}
LANES = 16  # output channels of a tile: two AVX2 vectors
# pixels of a tile: 6 or 5 (12 or 10 accumulators, enough FMA chains for the FMA latency);
# planes with fewer output pixels than this keep conv_direct (6s and 5s must cover them)
MIN_PIXELS = 20
# grouped convs with at least this many taps per output channel (a group's input channels x
# filter taps) run here (``grouped_supported``), fewer on ``depthwise``'s schedule. Zen 4, one
# thread, conv + bias + relu against ONNX Runtime: 16 channels a group (144 taps) 512@28 g32
# depthwise 4.16 ms, im2col GEMM 7.62, ORT 1.42; 4 or 8 channels (36, 72 taps) depthwise 0.74
# and 1.00 ms against ORT's 1.57 and 1.54.
GROUPED_MIN_TAPS = 100
# filter taps unrolled in the reduction: the rows and columns of a filter of at most this many
# taps, the columns of one at most this wide (``lanes_unroll_kx``, a knob); the rest are loops.
# On a Zen 2 ResNet-50's 3x3 convs ran within 1% of fully unrolled taps with the taps as loops.
# On a Zen 3 the 3-iteration column loop cost 5-25%: with the columns unrolled (one thread, ms,
# against ONNX Runtime side by side) 64->64 at 56x56 3.03 -> 2.87 (ORT 2.95), 128->128 at 28x28
# 3.48 -> 2.92 (2.93), 256->256 at 14x14 3.46 -> 3.05 (3.08), 512->512 at 7x7 5.64 -> 4.36
# (4.47); at two threads 2.21 -> 1.72 ms at 14x14, 3.06 -> 2.28 at 7x7.
UNROLL_TAPS = 3
# a convolution of at least this many multiply-adds per image splits over the thread pool
PARALLEL_MIN_MACS = 1 << 21
# the weights of a block of input channels (``channel_block``; 0: one pass over them all)
CHANNEL_BLOCK_BYTES = 16 * 1024
BLOCK_SUMS = 4096  # floats of partial sums per channel tile (a band of pixel tiles)
PARALLEL_PARTS = 4  # parallel iterations at least (channel tiles x parts of the pixel tiles)
# the outer loop: "channels" (channel tiles, each over every pixel) or "bands" (bands of pixel
# tiles, each running every channel tile while its input rows stay in L2); "bands" by default
# when the weights are at most BANDS_MAX_WEIGHT_BYTES (re-read from L2 by every band) and the
# plane gives at least BANDS_MIN bands
BANDS_MAX_WEIGHT_BYTES = 1024 * 1024
BANDS_MIN = 4
ORDERS = ("channels", "bands")
# a batch of images is split over the pool image by image as in conv_direct
BATCH_PARALLEL_MIN_MACS = 1 << 21
BATCH_PARALLEL_MIN_IMAGES = 4


def geometry(t) -> dict | None:
    """Sizes of conv2d stage ``t`` for this schedule, or None when it does not apply: not a
    static float32 NCHW conv, a filter of two or more taps, a multiple of 16 output channels
    (per group, for a grouped conv) and at least ``MIN_PIXELS`` output pixels.

    A grouped conv (ResNeXt's later stages, RegNet) runs as its groups' convs side by side: a
    tile's 16 output channels belong to one group, and its reduction runs over that group's
    ``c`` input channels (``groups``, ``og`` output channels a group; the weight is already
    ``[O, c, KH, KW]``)."""
    dims = static_grouped_conv2d_dims(t)
    if dims is None:
        return None
    groups, n, c, h, wd, o, kh, kw, oh, ow = dims
    a = t.op.attrs
    og = o // groups
    if kh * kw < 2 or og % LANES or oh * ow < MIN_PIXELS:
        return None
    sh, sw = (int(s) for s in a["strides"])
    dh, dw = (int(d) for d in a["dilation"])
    pt, pl = (int(p) for p in a["padding"][:2])
    hp = (oh - 1) * sh + (kh - 1) * dh + 1  # padded rows and columns the taps read
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    return dict(n=n, c=c, h=h, w=wd, o=o, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, dh=dh,
                dw=dw, pt=pt, pl=pl, hp=hp, wp=wp, grid=oh * ow, groups=groups, og=og,
                cin=c * groups, parallel=o * c * kh * kw * oh * ow >= PARALLEL_MIN_MACS)


def default_knobs(g) -> dict:
    """The knob values of geometry ``g`` untuned (``tunable.conv2d_space`` declares the rest)."""
    weights = g["o"] * g["c"] * g["kh"] * g["kw"] * 4
    knobs = dict(lanes_order="channels", lanes_cblock=CHANNEL_BLOCK_BYTES,
                 lanes_sums=BLOCK_SUMS, lanes_parts=PARALLEL_PARTS,
                 lanes_unroll_kx=g["kw"] <= UNROLL_TAPS)
    if weights <= BANDS_MAX_WEIGHT_BYTES and \
            _band_split(dict(g, **knobs), pixel_tiles(g["grid"])[0][2])[0] >= BANDS_MIN:
        knobs["lanes_order"] = "bands"
    return knobs


def with_knobs(g, knobs: dict | None) -> dict:
    """Geometry ``g`` with its knob values: the defaults, overridden by ``knobs``' lanes_*."""
    out = dict(g, **default_knobs(g))
    out.update({k: v for k, v in (knobs or {}).items() if k.startswith("lanes_")})
    return out


def _enabled(options) -> bool:
    return ENABLED[vector_isa()] and (options is None or options.generated_conv)


def supported(t, options=None) -> bool:
    """Would this schedule take stage ``t`` once its weight is prepacked (``ENABLED`` for the
    host's ISA, generated convs allowed)?"""
    return _enabled(options) and geometry(t) is not None


def grouped_supported(t, options=None) -> bool:
    """Does this schedule take grouped conv ``t`` (its rule in ``lower.RULES``): a group of at
    least ``GROUPED_MIN_TAPS`` taps per output channel (fewer: ``depthwise``'s) and 16s of
    output channels a group; the weight must be a constant, prepacked at build time."""
    g = geometry(t) if _enabled(options) else None
    return g is not None and g["groups"] > 1 and g["c"] * g["kh"] * g["kw"] >= GROUPED_MIN_TAPS


class PackWeight:
    """Picklable numpy transform of a ``[O, C, KH, KW]`` weight to ``[O/16, C, KH, KW, 16]``."""

    def __init__(self, o: int, c: int, kh: int, kw: int):
        self.o, self.c, self.kh, self.kw = o, c, kh, kw

    def __call__(self, w):
        w = np.asarray(w, dtype="float32").reshape(self.o // LANES, LANES, self.c, self.kh,
                                                   self.kw)
        return np.ascontiguousarray(w.transpose(0, 2, 3, 4, 1))


def packed_weight(t) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of conv2d ``t``'s constant weight."""
    g = geometry(t)
    if g is None:
        raise ValueError(f"conv_lanes.packed_weight: stage {t.name!r} is not a conv2d this "
                         "schedule takes")
    return (g["o"] // LANES, g["c"], g["kh"], g["kw"], LANES), \
        PackWeight(g["o"], g["c"], g["kh"], g["kw"])


def pixel_tiles(extent: int) -> list[tuple[int, int, int]]:
    """``extent`` pixels as groups ``(first pixel, pixels per tile, tiles)`` of 6- and 5-pixel
    tiles covering them exactly (any extent from 20 up is a sum of 6s and 5s)."""
    five = (-extent) % 6  # 6a + 5b = extent: b = -extent mod 6
    six = (extent - 5 * five) // 6
    if six < 0:
        raise ValueError(f"conv_lanes.pixel_tiles: {extent} pixels is not a sum of 6s and 5s")
    groups = []
    if six:
        groups.append((0, 6, six))
    if five:
        groups.append((6 * six, 5, five))
    return groups


def emit(ctx, t, out, x, wp, epilogue=None) -> S.Stmt:
    """Statements computing conv2d ``t`` into ``out`` (read and written at ``[n, o, oy, ox]``)
    from input ``x`` and the prepacked weight ``wp`` (``packed_weight``); ``epilogue(indices,
    value)``, when given, is the fused elementwise stage applied before the store.

    Images run in turn, each padded once and its tiles split over the thread pool, or, as in
    ``conv_direct``, the images themselves are split over the pool (each padding its own copy)
    when one image is too small to split or there are enough of them to balance."""
    g = geometry(t)
    g = with_knobs(g, _knobs(ctx.options, t) if g["groups"] == 1 else None)
    nv = ctx.fresh("n")
    pix, fill = _pixel_offsets(ctx, g)
    size = g["cin"] * g["hp"] * g["wp"]
    macs = g["o"] * g["c"] * g["kh"] * g["kw"] * g["grid"]
    if g["n"] > 1 and g["n"] * macs >= BATCH_PARALLEL_MIN_MACS and \
            (not g["parallel"] or g["n"] >= BATCH_PARALLEL_MIN_IMAGES):
        one = dict(g, parallel=False)  # the loops inside one image stay on its thread
        xp = decl_buffer((size,), "float32", "xpad")
        body = S.SeqStmt([_pad(ctx, one, xp, x, nv), _tiles(ctx, one, xp, wp, out, nv,
                                                             epilogue, pix)])
        body = S.Allocate(xp.data, "float32", [size], True, S.DeclBuffer(xp, body))
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], S.ForKind.PARALLEL, body)])
    xp = ctx.temp((size,), "float32", "xpad")
    body = S.SeqStmt([_pad(ctx, g, xp, x, nv), _tiles(ctx, g, xp, wp, out, nv, epilogue, pix)])
    return S.SeqStmt([fill, S.For(nv, 0, g["n"], S.ForKind.SERIAL, body)])


def _pixel_offsets(ctx, g):
    """(table, fill): ``table[p]``, the padded-input offset of output pixel ``p`` at tap (0, 0)
    of channel 0, filled once per call so that a pixel tile loads its pixels' offsets rather
    than dividing by the row width for each (the tile's setup runs once per channel block)."""
    pix = ctx.temp((g["grid"],), "int32", "cl_pix")
    p = ctx.fresh("pp")
    at = E.FloorDiv(p, g["ow"]) * (g["sh"] * g["wp"]) + E.FloorMod(p, g["ow"]) * g["sw"]
    return pix, S.For(p, 0, g["grid"], S.ForKind.SERIAL, S.BufferStore(pix, at, [p]))


def _pad(ctx, g, xp, x, nv) -> S.Stmt:
    """``xp[c, i, j] = x_padded[n, c, i, j]`` for the ``hp x wp`` padded rows and columns the
    taps read: vector copies between zero columns, or zeros for a padding row."""
    hp, wp, pl, w = g["hp"], g["wp"], g["pl"], g["w"]
    lanes = _lanes("float32")
    r = ctx.fresh("pr")
    c, i = E.FloorDiv(r, hp), E.FloorMod(r, hp)
    iy = i - g["pt"]
    zero = E.FloatImm("float32", 0.0)

    def put(j0, count, value):
        return _vector_inner(ctx, count, lanes, lambda j: S.BufferStore(
            xp, value(j0 + j), [r * wp + j0 + j]))

    j0 = min(wp, pl)
    j1 = min(wp, max(j0, pl + w))  # one past the last column inside the input
    parts = [put(0, j0, lambda j: zero)] if j0 else []
    if j1 > j0:
        parts.append(put(j0, j1 - j0, lambda j: x[nv, c, iy, j - pl]))
    if wp > j1:
        parts.append(put(j1, wp - j1, lambda j: zero))
    row = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
    body = S.IfThenElse(E.And(iy >= 0, iy < g["h"]), row, put(0, wp, lambda j: zero))
    rows = g["cin"] * hp
    kind = S.ForKind.PARALLEL if g["parallel"] and rows * wp >= (1 << 15) else S.ForKind.SERIAL
    return S.For(r, 0, rows, kind, body)


def _tiles(ctx, g, xp, wp, out, nv, epilogue, pix) -> S.Stmt:
    """Channel tiles x pixel tiles, the channel tiles outer; inside one, bands of pixel tiles
    x blocks of input channels (``channel_block``). On the thread pool the pixel tiles are
    also cut in a few parts when there are fewer than ``PARALLEL_PARTS`` channel tiles, so that
    a conv of 16 or 32 output channels still splits. The "bands" order (``lanes_order``) runs
    ``_bands_outer`` instead: on a Zen 2 it measured within the noise of this one at 56x56; on
    a Zen 3 at two threads, with the filter columns as a loop, 17% faster at 56x56 and 10% at
    28x28 (with them unrolled, within 2%)."""
    if g["lanes_order"] == "bands":
        return _bands_outer(ctx, g, xp, wp, out, nv, epilogue, pix)
    obs = g["o"] // LANES
    groups = pixel_tiles(g["grid"])
    parts = 1
    if g["parallel"] and obs < g["lanes_parts"]:
        parts = max(1, min(-(-g["lanes_parts"] // obs), groups[0][2]))

    kc = channel_block(g)
    band = _band_tiles(g)

    def run(ob, first, pixels, lo, count, sums):
        """Tiles ``lo .. lo+count`` of a group, in bands over the channel blocks (or, with
        one block, in turn)."""
        k = ctx.fresh("pt")
        if kc == g["c"]:
            return S.For(k, lo, count, S.ForKind.SERIAL, _tile(
                ctx, g, xp, wp, out, nv, pix, ob, first + k * pixels, pixels, epilogue))
        b, kb, kk = ctx.fresh("band"), ctx.fresh("kb"), ctx.fresh("pk")
        tile = _tile(ctx, g, xp, wp, out, nv, pix, ob, first + (lo + b * band + kk) * pixels,
                     pixels, epilogue, (kb, kc, g["c"] // kc, sums, kk))
        static = isinstance(count, int)
        if not static or count % band:
            tile = S.IfThenElse(b * band + kk < count, tile)
        bands = -(-count // band) if static else E.FloorDiv(count + (band - 1), band)
        return S.For(b, 0, bands, S.ForKind.SERIAL, S.For(
            kb, 0, g["c"] // kc, S.ForKind.SERIAL, S.For(kk, 0, band, S.ForKind.SERIAL, tile)))

    def over_pixels(idx):
        part, ob = idx
        sums = _sums_scratch(band) if kc < g["c"] else None
        out_parts = []
        for gi, (first, pixels, count) in enumerate(groups):
            if gi == 0 and parts > 1:  # this part's share of the first group's tiles
                lo = E.FloorDiv(part * count, parts)
                hi = E.FloorDiv((part + 1) * count, parts)
                loop = run(ob, first, pixels, lo, hi - lo, sums)
            else:
                loop = run(ob, first, pixels, 0, count, sums)
                if parts > 1:  # the other groups go with the last part
                    loop = S.IfThenElse(E.EQ(part, parts - 1), loop)
            out_parts.append(loop)
        body = out_parts[0] if len(out_parts) == 1 else S.SeqStmt(out_parts)
        return body if sums is None else _allocated(sums, body)

    return _outer_loops(ctx, [parts, obs], g["parallel"], over_pixels)


def _band_tiles(g) -> int:
    """Pixel tiles whose partial sums one scratch of ``lanes_sums`` floats holds."""
    return max(1, g["lanes_sums"] // (6 * LANES))


def _sums_scratch(band: int):
    """The partial sums of a band of ``band`` pixel tiles between blocks of input channels."""
    return decl_buffer((band * 6 * LANES,), "float32", "cl_sums")


def _band_split(g, count: int) -> tuple[int, int]:
    """(bands, tiles a band) of ``count`` pixel tiles in the "bands" order: bands of at most
    ``_band_tiles`` tiles, their number a multiple of ``lanes_parts`` on the thread pool so that
    the threads get equal shares."""
    bands = -(-count // _band_tiles(g))
    if g["parallel"]:
        parts = g["lanes_parts"]
        bands = min(count, -(-bands // parts) * parts)
    return bands, -(-count // bands)


def _bands_outer(ctx, g, xp, wp, out, nv, epilogue, pix) -> S.Stmt:
    """The "bands" order: bands of pixel tiles outermost (the parallel loop), each running every
    channel tile (and block of input channels) over its pixels, so that a band's input rows are
    read from memory once and stay in L2 while the weights, re-read by every band, come from L2
    too; the few 5-pixel tiles at the end then run per channel tile."""
    obs = g["o"] // LANES
    (first, pixels, count), *rest = pixel_tiles(g["grid"])
    kc = channel_block(g)
    nbands, band = _band_split(g, count)

    def one_band(idx):
        b, ob, kk = idx[0], ctx.fresh("ob"), ctx.fresh("pk")
        sums = _sums_scratch(band) if kc < g["c"] else None
        kb = None if sums is None else ctx.fresh("kb")
        tile = _tile(ctx, g, xp, wp, out, nv, pix, ob, first + (b * band + kk) * pixels, pixels,
                     epilogue, None if kb is None else (kb, kc, g["c"] // kc, sums, kk))
        if nbands * band != count:
            tile = S.IfThenElse(b * band + kk < count, tile)
        body = S.For(kk, 0, band, S.ForKind.SERIAL, tile)
        if kb is not None:
            body = S.For(kb, 0, g["c"] // kc, S.ForKind.SERIAL, body)
        body = S.For(ob, 0, obs, S.ForKind.SERIAL, body)
        return body if sums is None else _allocated(sums, body)

    parts = [_outer_loops(ctx, [nbands], g["parallel"], one_band)]
    for first2, pixels2, count2 in rest:
        def tail(idx, first2=first2, pixels2=pixels2, count2=count2):
            k = ctx.fresh("pt")
            return S.For(k, 0, count2, S.ForKind.SERIAL, _tile(
                ctx, g, xp, wp, out, nv, pix, idx[0], first2 + k * pixels2, pixels2, epilogue))
        parts.append(_outer_loops(ctx, [obs], g["parallel"], tail))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def trims_rows(g) -> bool:
    """Does some output row of geometry ``g`` have filter rows that read only padding (rows
    ``pt`` above or below the input: a dilated conv, or a small plane)? Then a tile runs only
    the filter rows some of its output rows need (``tap_rows``), as ONNX Runtime skips the
    padding taps: a 3x3 conv of dilation 6 at 32x32 does 12% fewer multiply-adds, one of
    dilation 2 4%, a 3x3 conv at 7x7 10%."""
    return _row_bounds(g, 0)[0] > 0 or _row_bounds(g, g["oh"] - 1)[1] < g["kh"]


def _row_bounds(g, oy):
    """(first, one past the last) filter row reading an input row at output row ``oy`` (an
    int, or a PrimExpr of int32)."""
    dh, top = g["dh"], g["pt"] - oy * g["sh"]
    if isinstance(oy, int):
        return max(0, -(-top // dh)), min(g["kh"], (g["h"] - 1 + top) // dh + 1)
    return (E.Max(E.FloorDiv(top + (dh - 1), dh), E.IntImm("int32", 0)),
            E.Min(E.FloorDiv(top + (g["h"] - 1), dh) + 1, E.IntImm("int32", g["kh"])))


def tap_rows(g, first, last):
    """(first filter row, filter rows) that output rows ``first .. last`` (PrimExprs, int32)
    need: the union of their rows' ranges, as the range is monotone in the output row; the
    other rows read only zero padding for every pixel of those rows."""
    lo, hi = _row_bounds(g, last)[0], _row_bounds(g, first)[1]
    return lo, E.Max(hi - lo, E.IntImm("int32", 0))


def channel_block(g) -> int:
    """Input channels per pass over a band of pixel tiles: their weights (``KH*KW*16`` floats
    a channel) kept to about ``CHANNEL_BLOCK_BYTES`` so that they stay in L1 over the band;
    block sizes divide the channel count, else there is one pass."""
    c = g["c"]
    if not g["lanes_cblock"]:
        return c
    target = max(1, g["lanes_cblock"] // (g["kh"] * g["kw"] * LANES * 4))
    if c < 2 * target:
        return c
    return divisor_near(c, target) or c


def _tile(ctx, g, xp, wp, out, nv, pix, ob, p0, pixels: int, epilogue, kb=None) -> S.Stmt:
    """Output channels ``ob*16 ..`` x output pixels ``p0 .. p0+pixels`` (flattened).

    The tile's pixel offsets into the padded input are read from the table ``pix`` once; the
    filter taps run as loops (only the tile's pixels are unrolled: ``UNROLL_TAPS``), which
    keeps the code LLVM optimizes small at no cost in speed.

    ``kb = (block var, channels per block, blocks, scratch, slot)``: the tile sums one block
    of input channels, starting from (and, but for the last block, ending in) its partial sums
    at ``slot`` of the scratch."""
    c, ow, hp, wpd = g["c"], g["ow"], g["hp"], g["wp"]
    acc = decl_buffer((pixels, LANES), "float32", "cl_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody, dtype="int32"):
        v = ctx.fresh(name, dtype)
        lo = E.IntImm(dtype, 0)
        return S.For(v, lo, E.IntImm(dtype, extent), kind, fbody(v))

    def ky_loop(fbody):  # the filter rows: those the tile's output rows need (trims_rows)
        if ky_kind == unroll or not trims_rows(g):
            return loop("ky", g["kh"], ky_kind, fbody)
        v = ctx.fresh("ky")
        first, count = tap_rows(g, E.FloorDiv(p0, ow), E.FloorDiv(p0 + (pixels - 1), ow))
        return S.For(v, first, count, ky_kind, fbody(v))

    q = [ctx.fresh("q") for _ in range(pixels)]  # padded-input offsets of its pixels
    init = loop("jj", pixels, unroll, lambda jj: loop("ll", LANES, vec, lambda ll:
                S.BufferStore(acc, E.FloatImm("float32", 0.0), [jj, ll])))
    if kb is not None:
        kv, kc, nkb, sums, slot = kb

        def at_sums(jj, ll):
            return (slot * pixels + jj) * LANES + ll

        init = S.IfThenElse(E.EQ(kv, 0), init, loop("jj", pixels, unroll, lambda jj: loop(
            "ll", LANES, vec, lambda ll: S.BufferStore(acc, sums[at_sums(jj, ll)], [jj, ll]))))

    wv = decl_buffer((LANES,), "float32", "cl_w", scope="local")  # the tap's weights

    def tap(ci, ky, kx):  # (the pixels written out: each reads its own offset variable)
        xo = ctx.fresh("xo", "int64")
        macs = [loop("ll", LANES, vec, lambda ll, jj=jj: S.BufferStore(
            acc, acc[jj, ll] + wv[ll] * xp[xo + q[jj]], [jj, ll])) for jj in range(pixels)]
        load = loop("ll", LANES, vec, lambda ll: S.BufferStore(wv, wp[ob, ci, ky, kx, ll], [ll]))
        if g["groups"] > 1:  # the input channels of the tile's group
            ci = E.Cast("int64", E.FloorDiv(ob * LANES, g["og"]) * c) + ci
        off = ci * (hp * wpd) + (ky * g["dh"]) * wpd + kx * g["dw"]
        return S.LetStmt(xo, E.Cast("int64", off), S.SeqStmt([load, *macs]))

    taps = g["kh"] * g["kw"]
    ky_kind = unroll if taps <= UNROLL_TAPS else S.ForKind.SERIAL
    kx_kind = unroll if g["lanes_unroll_kx"] else S.ForKind.SERIAL
    if kb is None:
        macs = loop("c", c, S.ForKind.SERIAL, lambda ci: ky_loop(lambda ky: loop(
            "kx", g["kw"], kx_kind, lambda kx: tap(ci, ky, kx))), dtype="int64")
    else:
        macs = loop("c", kc, S.ForKind.SERIAL, lambda cc: ky_loop(lambda ky: loop(
            "kx", g["kw"], kx_kind, lambda kx: tap(E.Cast("int64", kv * kc) + cc, ky, kx))),
            dtype="int64")

    # the tile is stored through a scratch copy, one pixel an iteration (a pixel's 16 output
    # channels are 16 scalar stores: unrolled over the pixels they were most of the kernel's
    # code)
    res = decl_buffer((pixels, LANES), "float32", "cl_res")

    def put(jj, ll):
        p = p0 + jj
        idx = [nv, ob * LANES + ll, E.FloorDiv(p, ow), E.FloorMod(p, ow)]
        val = res[jj, ll] if epilogue is None else epilogue(idx, res[jj, ll])
        return S.BufferStore(out, val, idx)

    jp = ctx.fresh("jj")
    store = S.SeqStmt([
        loop("jj", pixels, unroll, lambda jj: loop("ll", LANES, vec, lambda ll: S.BufferStore(
            res, acc[jj, ll], [jj, ll]))),
        S.For(jp, 0, pixels, S.ForKind.SERIAL, loop(
            "ll", LANES, vec, lambda ll: put(jp, ll)))])
    store = S.Allocate(res.data, "float32", [pixels * LANES], True, S.DeclBuffer(res, store))
    if kb is not None:
        store = S.IfThenElse(E.EQ(kv, nkb - 1), store, loop("jj", pixels, unroll, lambda jj: loop(
            "ll", LANES, vec, lambda ll: S.BufferStore(sums, acc[jj, ll], [at_sums(jj, ll)]))))
    body = S.DeclBuffer(acc, S.DeclBuffer(wv, S.SeqStmt([init, macs, store])))
    body = S.Allocate(wv.data, "float32", [LANES], True, body)
    body = S.Allocate(acc.data, "float32", [pixels * LANES], True, body)
    for jj in range(pixels - 1, -1, -1):
        body = S.LetStmt(q[jj], pix[p0 + jj], body)
    return body
