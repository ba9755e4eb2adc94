"""The loop shapes of the depthwise schedule: vectors along a row and their tails.

``_vec`` loops an extent in vectors with a half-vector and scalar tail, or (``overlap``) one
last vector over the positions before it; ``_segments`` lists the vectors covering a row
(whole ones, then a ``_tail_lanes``-wide one ending at the row's end). The switches these read
(``MAX_UNROLL``, ``UNROLL_MAX_STMTS``, ``NARROW_TAILS``, ``OVERLAP_TAILS``) stay in ``depthwise``, where hosts and
tests set them; it imports this module, so they are read from it at call time.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import substitute, walk_stmts
from .common import imm as _i


def _zeros(ctx, buf, start, count: int, lanes: int) -> S.Stmt | None:
    """``buf[start : start + count] = 0`` in vectors plus a scalar tail (None when empty)."""
    from . import depthwise

    if count <= 0:
        return None
    return _vec(ctx, count, lanes, lambda j: S.BufferStore(
        buf, E.FloatImm("float32", 0.0), [start + j]), depthwise._overlap(1))


def _vec(ctx, extent: int, lanes: int, body_fn, overlap: bool = False) -> S.Stmt:
    """``for j in [0, extent)``: vectors of ``lanes`` then a scalar tail. With ``overlap``
    (a body that may run twice at a position: it reads nothing it writes) the tail is instead
    one more vector ending at ``extent``, over the last positions of the vectors before it, of
    ``_tail_lanes`` (rows of 56 end in 8 lanes, of 28 in 16); an extent under ``lanes`` takes
    the widest power-of-two vector it holds: rows of 14 become two overlapping 8-lane vectors,
    rows of 5-7 (7x7 planes and their phases) two 4-lane ones."""
    from . import depthwise

    if overlap and extent % lanes and extent > 4 and lanes > 4:
        vl = min(lanes, 1 << (extent.bit_length() - 1))  # 14 -> 8, 7 -> 4, 56 -> 16
        tl = _tail_lanes(extent % vl, vl) if extent > lanes else vl
        vi = ctx.fresh("dl")
        tail = S.For(vi, 0, tl, S.ForKind.VECTORIZED, body_fn(vi + (extent - tl)))
        return S.SeqStmt([_vec(ctx, extent // vl * vl, vl, body_fn), tail])
    parts = []
    nvec = extent // lanes
    if nvec:
        vo, vi = ctx.fresh("dv"), ctx.fresh("dl")
        inner = S.For(vi, 0, lanes, S.ForKind.VECTORIZED, body_fn(vo * lanes + vi))
        unroll = nvec <= depthwise.MAX_UNROLL and \
            nvec * _statements(inner.body) <= depthwise.UNROLL_MAX_STMTS
        kind = S.ForKind.UNROLLED if unroll else S.ForKind.SERIAL
        parts.append(S.For(vo, 0, nvec, kind, inner) if nvec > 1 else
                     substitute(inner, {vo: _i(0)}))
    done = nvec * lanes
    if extent - done >= 4 and lanes > 4:  # a half (or quarter) vector before the scalar tail
        vi = ctx.fresh("dl")
        parts.append(S.For(vi, 0, 4, S.ForKind.VECTORIZED, body_fn(vi + done)))
        done += 4
    if extent - done:
        tv = ctx.fresh("dt")
        parts.append(S.For(tv, done, extent - done, S.ForKind.SERIAL, body_fn(tv)))
    return S.SeqStmt(parts) if len(parts) != 1 else parts[0]


def _statements(body: S.Stmt) -> int:
    """How many statements ``body`` holds (each counted once, loops not multiplied out)."""
    return sum(1 for _ in walk_stmts(body))


def _rows(ctx, lo: int, hi: int, body_fn) -> S.Stmt | None:
    """``for i in [lo, hi): body_fn(i)`` (None when empty)."""
    if hi <= lo:
        return None
    i = ctx.fresh("dr")
    return S.For(i, lo, hi - lo, S.ForKind.SERIAL, body_fn(i))


def _seq(parts) -> S.Stmt | None:
    parts = [p for p in parts if p is not None]
    return None if not parts else parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _tail_lanes(rest: int, lanes: int) -> int:
    """Lanes of the vector ending a row after its whole vectors: the fewest, a power of two of
    at least 4, holding the ``rest`` pixels (``NARROW_TAILS``; else a whole vector)."""
    from . import depthwise

    return min(lanes, max(4, 1 << (rest - 1).bit_length())) if depthwise.NARROW_TAILS else lanes


def _segments(ow: int, lanes: int) -> list:
    """(start, lanes) of the vectors covering a row of ``ow >= lanes`` pixels: whole vectors,
    then one of ``_tail_lanes`` ending at the row's end (over the last pixels before it)."""
    segs = [(k * lanes, lanes) for k in range(ow // lanes)]
    if ow % lanes:
        tl = _tail_lanes(ow % lanes, lanes)
        segs.append((ow - tl, tl))
    return segs

