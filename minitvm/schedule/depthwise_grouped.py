"""Grouped convs of a few input channels a group (ResNeXt's 4 or 8) on the depthwise schedule's
phased planes, several output channels of a group at once.

The depthwise schedule copies a group's ``cg`` input planes into zero-padded, stride-phased
planes (``depthwise_copy._fill``); each output channel of the group is then the sum over those
planes of ``cg x taps`` broadcast weights times contiguous vector loads. Computed one output
channel after another (``depthwise_channel._channel``), every load serves a single
multiply-add, and the loads (most of them across two cache lines: the taps' offsets are not
vector-aligned) are the limit.
Here an output row is a tile of ``channels x row vectors`` accumulators instead
(``tile_shape``): each input vector is loaded once and multiplied into every output channel of
the tile, one broadcast weight per channel, so a load serves ``channels`` multiply-adds. The
group's output channels run in blocks of the tile's channels over the same phased planes, row
by row (the rows of the planes a row reads stay in L1 across the blocks).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from .common import imm, vector_isa

# Grouped convs (several input and output channels a group) whose rows are at least
# NARROW_MIN_WIDTH pixels take output-channel tiles (``emit_group``). Tiles of TILE_MAX_CHANNELS
# channels x up to TILE_MAX_ROWS rows x the row's vectors, at most TILE_MAX_ACCS accumulators.
# Zen 4, one thread, conv + bias + ReLU built in a graph, ms (one channel at a time -> tiles;
# ONNX Runtime): ResNeXt-50's 128 g32 at 56x56 0.628 -> 0.292 (1.243), 256 g32 stride 2 at
# 56x56 0.968 -> 0.469 (1.686), 256 g32 at 28x28 0.882 -> 0.372 (0.935); RegNet-X-200MF-like
# 8 a group: 24 g3 at 56x56 0.247 -> 0.128 (0.272), 56 g7 stride 2 at 56x56 0.193 -> 0.103
# (0.294), 56 g7 at 28x28 0.168 -> 0.080 (0.183). Tile shapes, kernel alone (us): 8 channels
# x 1 row -> 4 x 3 rows, 256 g32 at 28x28 562 -> 367, stride 2 at 56x56 690 -> 448, 64 g8 at
# 28x28 136 -> 92 (2 channels x 4-6 rows and 28 accumulators lost: 415-468 at 28x28). The
# weights then became scalars loaded before the row loop (``emit_group``), in a graph, ms:
# 256 g32 at 28x28 0.435 -> 0.323, stride 2 at 56x56 0.441 -> 0.394, at 14x14 0.119 -> 0.092.
CHANNEL_TILES = True
# (AVX2's 16 registers hold half the accumulators; not measured there)
TILE_MAX_ACCS = {"avx512": 24, "avx2": 12}
TILE_MAX_CHANNELS = 4
TILE_MAX_ROWS = 3
# Rows under a machine vector from NARROW_MIN_WIDTH pixels take narrower vectors (``row_lanes``:
# rows of 14 two overlapping 8-lane ones). Kernel alone (us, one channel at a time -> tiles):
# 152 g19 at 14x14 113 -> 63, 256 g32 at 14x14 187 -> 161, 64 g16 at 14x14 22 -> 17, 128 g32
# stride 2 at 28x28 53 -> 43, 96 g24 at 12x12 31 -> 17, 64 g8 at 10x10 36 -> 23; rows of 7
# (4-lane vectors) lost: 368 g46 at 7x7 75 -> 93, 256 g32 at 7x7 53 -> 66, stride 2 at 14x14
# 77 -> 99.
NARROW_MIN_WIDTH = 8
# The tiles store through the fused epilogue whatever it is: a transcendental one (SiLU), which
# the depthwise schedule runs in a pass of its own on rows of up to 32 (``SPLIT_MAX_WIDTH``),
# too. Kernel alone with SiLU (us, that pass -> fused into the tiles): 256 g32 at 28x28 864 ->
# 425, 64 g8 at 14x14 51 -> 33.


def applies(g) -> bool:
    """Does depthwise geometry ``g`` take output-channel tiles: a grouped conv of several input
    and output channels a group whose rows are at least ``NARROW_MIN_WIDTH`` pixels?"""
    return CHANNEL_TILES and g["cg"] > 1 and g["m"] > 1 and g["ow"] >= NARROW_MIN_WIDTH


def row_lanes(g) -> int:
    """Lanes of a row's vectors: the machine's, or for narrower rows the widest power of two
    they hold (rows of 14: 8, of 7: 4)."""
    return min(g["lanes"], 1 << (g["ow"].bit_length() - 1))


def tile_shape(g, nsegs: int) -> tuple[int, int, int]:
    """(output channels, output rows, row vectors) of a tile for rows of ``nsegs`` vectors: the
    most channels dividing the group's ``m`` within ``TILE_MAX_CHANNELS`` and
    ``TILE_MAX_ACCS``, then as many of the row's vectors as the accumulators hold (at least
    one), then as many rows (at most ``TILE_MAX_ROWS``) as hold the rest."""
    accs = TILE_MAX_ACCS[vector_isa()]
    mb = max(1, min(g["m"], TILE_MAX_CHANNELS, accs))
    while g["m"] % mb:
        mb -= 1
    per = max(1, min(nsegs, accs // mb))
    rows = max(1, min(TILE_MAX_ROWS, g["oh"], accs // (mb * per)))
    return mb, rows, per


def emit_group(ctx, g, planes, w, gi, segs, store) -> S.Stmt:
    """The output channels of group ``gi`` from its phased ``planes`` (one buffer view per
    input channel), in tiles of ``tile_shape`` over the output rows and the row's vectors
    ``segs`` ((start, lanes) pairs); ``store(oc, oy, j, lanes, value)`` stores a tile's vector
    (through the fused epilogue). Per block of the tile's output channels their weights are
    loaded into scalars once, before the row loop: no access stays put in a loop, so the kernel
    needs no loop-invariant code motion from LLVM (``jit.MINIMAL_PIPELINE``; loaded in the
    tiles, the light pipeline took 3-4 s for one 8-channels-a-group kernel, 0.8 s before)."""
    mb, rows, per = tile_shape(g, len(segs))
    nblk = g["m"] // mb
    blk = ctx.fresh("dgc")
    oc0 = gi * g["m"] + (blk * mb if nblk > 1 else 0)
    taps = {(mo, ci, ky, kx): ctx.fresh("dg_w", w.dtype) for mo in range(mb)
            for ci in range(len(planes)) for ky, kx, _, _ in g["taps"]}

    def row_block(oy, nrows):
        tiles = [_tile(ctx, g, planes, taps, oy, nrows, oc0, mb, segs[k:k + per], store)
                 for k in range(0, len(segs), per)]
        return tiles[0] if len(tiles) == 1 else S.SeqStmt(tiles)

    oy = ctx.fresh("dgr")
    parts = [S.For(oy, 0, g["oh"] // rows, S.ForKind.SERIAL, row_block(oy * rows, rows))]
    if g["oh"] % rows:
        parts.append(row_block(imm(g["oh"] // rows * rows), g["oh"] % rows))
    body = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
    for (mo, ci, ky, kx), t in reversed(taps.items()):
        body = S.LetStmt(t, w[oc0 + mo, ci, ky, kx], body)
    return S.For(blk, 0, nblk, S.ForKind.SERIAL, body) if nblk > 1 else body


def _tile(ctx, g, planes, taps, oy, nrows: int, oc0, mb: int, segs, store) -> S.Stmt:
    """Output channels ``oc0 .. oc0 + mb - 1`` of rows ``oy .. oy + nrows - 1`` at the vectors
    ``segs``: per input channel and filter tap, one load per row and vector, multiplied into
    every channel's accumulator by its weight (``taps[channel, input channel, ky, kx]``, a
    scalar), a let chain per accumulator, the chains interleaved."""
    wq = g["wq"]
    lets = []
    acc: dict = {}
    for ci, plane in enumerate(planes):
        for ky, kx, off, _ in g["taps"]:
            vs = []
            for i in range(nrows):
                for j, lanes in segs:
                    v = ctx.fresh("dg_in", f"float32x{lanes}")
                    lets.append((v, plane[E.Ramp((oy + i) * wq + (j + off), 1, lanes)]))
                    vs.append(v)
            for mo in range(mb):
                t = taps[mo, ci, ky, kx]
                for s, v in enumerate(vs):
                    a = ctx.fresh("dg_acc", v.dtype)
                    prev = acc.get((mo, s))
                    lets.append((a, t * v if prev is None else prev + t * v))
                    acc[mo, s] = a
    body = S.SeqStmt([store(oc0 + mo, oy + i, j, lanes, acc[mo, i * len(segs) + s])
                      for mo in range(mb) for i in range(nrows)
                      for s, (j, lanes) in enumerate(segs)])
    for v, val in reversed(lets):
        body = S.LetStmt(v, val, body)
    return body
