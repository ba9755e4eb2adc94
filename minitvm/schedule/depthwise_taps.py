"""The filter taps' multiply-adds of the depthwise schedule, a block of output rows at a time.

``_row_blocks`` walks a channel's output rows in blocks (``ROW_BLOCK``); a block is
``_block`` (each input vector its taps read loaded once, shared by the rows reading it),
``_block_accumulate`` (large filters: the multiply-adds in input-row order, few values live)
or, for rows of at least a vector, ``_tile_rows`` / ``_tile_accumulate`` (a tile of rows by
all of a row's vectors, each broadcast tap serving every vector; a row of several tiles of one
shape loops over them, ``ROLL_TILES``). ``_taps_sum`` is the grid
mode's sum at one position. The switches stay in ``depthwise``, read from it at call time.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from .common import imm as _i
from .depthwise_loops import _segments, _seq


def _read_row(g, oy):
    """The row of the taps' plane holding phase row ``oy``: 0 in a window (``_window_task``)."""
    return _i(0) if g.get("window") else oy


def _tree(sums):
    """A balanced sum of ``sums``: short dependency chains."""
    while len(sums) > 1:
        sums = [sums[k] + sums[k + 1] if k + 1 < len(sums) else sums[k]
                for k in range(0, len(sums), 2)]
    return sums[0]


def _taps_sum(g, planes, taps, pos):
    """The conv's value at grid position ``pos`` (a vector lane expression) from the filter
    ``taps`` (one scalar per input channel of the group and ``g["taps"]`` entry, channel
    major) over the group's phased ``planes``.

    One multiply-add chain per filter row of each plane, the rows then summed pairwise: a single
    chain of ``kh * kw`` dependent FMAs per vector fills the FP scheduler and runs 2-3x slower."""
    rows: dict[tuple, object] = {}
    per = len(g["taps"])
    for k, tap in enumerate(taps):
        ci, (ky, _, off, _) = divmod(k, per)[0], g["taps"][k % per]
        term = tap * planes[ci][pos + off]
        key = (ci, ky)
        rows[key] = term if key not in rows else rows[key] + term
    return _tree(list(rows.values()))


def _block(ctx, g, planes, taps, oy, nrows: int, j, store_fn) -> S.Stmt:
    """Output rows ``oy .. oy + nrows - 1`` at vector position ``j`` of their rows: every
    input vector the rows' taps read is loaded once into a let-bound variable the rows share;
    ``store_fn(i, value)`` stores row ``oy + i``'s conv value."""
    from . import depthwise

    per, wq = len(g["taps"]), g["wq"]
    if depthwise._accumulates(g) and nrows >= depthwise.ACCUMULATE_MIN_ROWS:
        return _block_accumulate(ctx, g, planes[0], taps, oy, nrows, j, store_fn)
    loads: dict = {}
    lets = []
    values = []
    for i in range(nrows):
        rows: dict = {}
        for k, tap in enumerate(taps):
            ci, (ky, _, off, dy) = k // per, g["taps"][k % per]
            # (a tap at row offset dy of its phase plane reads the input row oy + i + dy)
            key = (ci, off - dy * wq, i + dy)
            v = loads.get(key)
            if v is None:
                v = loads[key] = ctx.fresh("dw_in", "float32")
                lets.append((v, planes[ci][(_read_row(g, oy) + (i + dy)) * wq + j + (off - dy * wq)]))
            rk = (ci, ky)
            rows[rk] = tap * v if rk not in rows else rows[rk] + tap * v
        values.append(_tree(list(rows.values())))
    body = S.SeqStmt([store_fn(i, values[i]) for i in range(nrows)])
    for v, val in reversed(lets):
        body = S.LetStmt(v, val, body)
    return body


def _block_accumulate(ctx, g, plane, taps, oy, nrows: int, j, store_fn) -> S.Stmt:
    """``_block`` for one input channel a group, its multiply-adds in input-row order: a chain
    of let-bound partial sums per output row (the rows' chains interleaved, so independent
    multiply-adds follow each other), each input vector let-bound just before its uses."""
    wq = g["wq"]
    # at stride 1, a block at a known row skips the taps reading padding rows (its first and last)
    first = oy.value if isinstance(oy, E.IntImm) and g["sh"] == 1 and g["dh"] == 1 else None
    uses: dict = {}  # (input row, column offset) -> [(output row, tap)]
    for k, (_, _, off, dy) in enumerate(g["taps"]):
        for i in range(nrows):
            if first is None or g["pt"] <= first + i + dy < g["pt"] + g["h"]:
                uses.setdefault((i + dy, off - dy * wq), []).append((i, taps[k]))
    lets = []
    acc: list = [None] * nrows
    for (r, col), reads in sorted(uses.items(), key=lambda kv: kv[0]):
        v = ctx.fresh("dw_in", "float32")
        lets.append((v, plane[(_read_row(g, oy) + r) * wq + j + col]))
        for i, tap in reads:
            s = ctx.fresh("dw_acc", "float32")
            lets.append((s, tap * v if acc[i] is None else acc[i] + tap * v))
            acc[i] = s
    body = S.SeqStmt([store_fn(i, acc[i]) for i in range(nrows)])
    for v, val in reversed(lets):
        body = S.LetStmt(v, val, body)
    return body


def _tile_rows(ctx, g, plane, taps, oy, nrows: int, store_fn) -> S.Stmt:
    """Output rows ``oy .. oy + nrows - 1``, whole, in tiles of at most ``TILE_MAX_ACCS``
    accumulators (a wider row splits into several); ``store_fn(i, j, lanes, value)`` stores row
    ``oy + i``'s vector at ``j ...``."""
    from . import depthwise

    segs = _segments(g["ow"], g["lanes"])
    per = max(1, depthwise.tile_max_accs() // max(nrows, depthwise._tile_height(g)))
    tiles = [segs[k:k + per] for k in range(0, len(segs), per)]
    run = _repeats(tiles) if depthwise.ROLL_TILES else 1
    parts = []
    if run > 1:  # the tiles of one shape, a fixed step apart: one rolled loop
        v, step = ctx.fresh("dg"), tiles[1][0][0] - tiles[0][0][0]
        parts.append(S.For(v, 0, run, S.ForKind.SERIAL, _tile_accumulate(
            ctx, g, plane, taps, oy, nrows, [(v * step + j, n) for j, n in tiles[0]], store_fn)))
        tiles = tiles[run:]
    parts += [_tile_accumulate(ctx, g, plane, taps, oy, nrows, t, store_fn) for t in tiles]
    return _seq(parts)


def _repeats(tiles) -> int:
    """How many of the leading ``tiles`` ((start, lanes) lists) are the first one moved by a
    fixed step each: the tiles one rolled loop can run."""
    if len(tiles) < 2 or len(tiles[1]) != len(tiles[0]):
        return 1
    step = tiles[1][0][0] - tiles[0][0][0]
    first = tiles[0]
    n = 1
    while n < len(tiles) and tiles[n] == [(j + n * step, w) for j, w in first]:
        n += 1
    return n


def _tile_accumulate(ctx, g, plane, taps, oy, nrows: int, segs, store_fn) -> S.Stmt:
    """``_block_accumulate`` over the vectors ``segs`` ((start, lanes) pairs) of the rows at
    once: each (input row, column offset) loads one vector per segment, then multiplies them
    into the accumulators of every output row reading it, one broadcast tap a row."""
    wq = g["wq"]
    first = oy.value if isinstance(oy, E.IntImm) and g["sh"] == 1 and g["dh"] == 1 else None
    uses: dict = {}
    for k, (_, _, off, dy) in enumerate(g["taps"]):
        for i in range(nrows):
            if first is None or g["pt"] <= first + i + dy < g["pt"] + g["h"]:
                uses.setdefault((i + dy, off - dy * wq), []).append((i, taps[k]))
    lets = []
    acc: dict = {}
    for (r, col), reads in sorted(uses.items(), key=lambda kv: kv[0]):
        vs = []
        for j, lanes in segs:
            v = ctx.fresh("dw_in", f"float32x{lanes}")
            lets.append((v, plane[E.Ramp((_read_row(g, oy) + r) * wq + (j + col), 1, lanes)]))
            vs.append(v)
        for i, tap in reads:
            for s, v in enumerate(vs):
                a = ctx.fresh("dw_acc", v.dtype)
                prev = acc.get((i, s))
                lets.append((a, tap * v if prev is None else prev + tap * v))
                acc[i, s] = a
    body = S.SeqStmt([store_fn(i, j, lanes, acc[i, s]) for i in range(nrows)
                      for s, (j, lanes) in enumerate(segs)])
    for v, val in reversed(lets):
        body = S.LetStmt(v, val, body)
    return body


def _row_blocks(ctx, g, body_fn) -> S.Stmt:
    """``body_fn(oy, nrows)`` for the output rows in blocks of ``_row_block(g)``."""
    from . import depthwise

    r, oh = depthwise._row_block(g), g["oh"]
    parts = []
    peel = int(oh // r > 1 and r >= depthwise.ACCUMULATE_MIN_ROWS and g["sh"] == 1 and (
        depthwise._accumulates(g) or depthwise._tiled(g)))
    if peel:  # the first block at a known row: it skips its taps on padding rows
        parts.append(body_fn(_i(0), r))
    if oh // r - peel == 1:  # (one block: at its known row too)
        parts.append(body_fn(_i(peel * r), r))
    elif oh // r - peel:
        v = ctx.fresh("db")
        parts.append(S.For(v, 0, oh // r - peel, S.ForKind.SERIAL,
                           body_fn(v * r + peel * r, r)))
    if oh % r:
        parts.append(body_fn(_i(oh // r * r), oh % r))
    return _seq(parts)

