"""Grouped convs of a few input channels a group (ResNeXt's 4 or 8) on the depthwise schedule's
phased planes, several output channels of a group at once.

The depthwise schedule copies a group's ``cg`` input planes into zero-padded, stride-phased
planes (``depthwise._fill``); each output channel of the group is then the sum over those planes
of ``cg x taps`` broadcast weights times contiguous vector loads. Computed one output channel
after another (``depthwise._channel``), every load serves a single multiply-add, and the loads
(most of them across two cache lines: the taps' offsets are not vector-aligned) are the limit.
Here an output row is a tile of ``channels x row vectors`` accumulators instead
(``tile_shape``): each input vector is loaded once and multiplied into every output channel of
the tile, one broadcast weight per channel, so a load serves ``channels`` multiply-adds. The
group's output channels run in blocks of the tile's channels over the same phased planes, row
by row (the rows of the planes a row reads stay in L1 across the blocks).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S

# Grouped convs (several input and output channels a group, rows of at least one vector) take
# output-channel tiles (``emit_group``). Zen 4, one thread, conv + bias + relu, ms (one output
# channel at a time -> tiles): see the measurements at ``TILE_MAX_ACCS``.
CHANNEL_TILES = True
# accumulators of one tile (output channels x row vectors), and the most channels in a tile
TILE_MAX_ACCS = 24
TILE_MAX_CHANNELS = 4
TILE_MAX_ROWS = 3  # output rows of a tile


def applies(g) -> bool:
    """Does depthwise geometry ``g`` take output-channel tiles: a grouped conv of several input
    and output channels a group whose rows are at least one vector wide?"""
    return CHANNEL_TILES and g["cg"] > 1 and g["m"] > 1 and g["ow"] >= g["lanes"]


def tile_shape(g, nsegs: int) -> tuple[int, int, int]:
    """(output channels, output rows, row vectors) of a tile for rows of ``nsegs`` vectors: the
    most channels dividing the group's ``m`` within ``TILE_MAX_CHANNELS`` and
    ``TILE_MAX_ACCS``, then as many of the row's vectors as the accumulators hold (at least
    one), then as many rows (at most ``TILE_MAX_ROWS``) as hold the rest."""
    mb = max(1, min(g["m"], TILE_MAX_CHANNELS, TILE_MAX_ACCS))
    while g["m"] % mb:
        mb -= 1
    per = max(1, min(nsegs, TILE_MAX_ACCS // mb))
    rows = max(1, min(TILE_MAX_ROWS, g["oh"], TILE_MAX_ACCS // (mb * per)))
    return mb, rows, per


def emit_group(ctx, g, planes, w, gi, segs, store) -> S.Stmt:
    """The output channels of group ``gi`` from its phased ``planes`` (one buffer view per
    input channel), in tiles of ``tile_shape`` over the output rows and the row's vectors
    ``segs`` ((start, lanes) pairs); ``store(oc, oy, j, lanes, value)`` stores a tile's vector
    (through the fused epilogue)."""
    mb, rows, per = tile_shape(g, len(segs))
    nblk = g["m"] // mb

    def row_block(oy, nrows):
        blk = ctx.fresh("dgc")
        oc0 = gi * g["m"] + (blk * mb if nblk > 1 else 0)
        tiles = [_tile(ctx, g, planes, w, oy, nrows, oc0, mb, segs[k:k + per], store)
                 for k in range(0, len(segs), per)]
        body = tiles[0] if len(tiles) == 1 else S.SeqStmt(tiles)
        return S.For(blk, 0, nblk, S.ForKind.SERIAL, body) if nblk > 1 else body

    oy = ctx.fresh("dgr")
    parts = [S.For(oy, 0, g["oh"] // rows, S.ForKind.SERIAL, row_block(oy * rows, rows))]
    if g["oh"] % rows:
        parts.append(row_block(E.IntImm("int32", g["oh"] // rows * rows), g["oh"] % rows))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _tile(ctx, g, planes, w, oy, nrows: int, oc0, mb: int, segs, store) -> S.Stmt:
    """Output channels ``oc0 .. oc0 + mb - 1`` of rows ``oy .. oy + nrows - 1`` at the vectors
    ``segs``: per input channel and filter tap, one load per row and vector, multiplied into
    every channel's accumulator (a let chain per accumulator, the chains interleaved)."""
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
                t = ctx.fresh("dg_w", w.dtype)
                lets.append((t, w[oc0 + mo, ci, ky, kx]))
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
