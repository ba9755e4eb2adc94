"""A transposing injective stage whose innermost axis is cut into pieces: a transpose and a pad
fused (NHWC -> NCHW with the next conv's border, a sequence transposed and padded for a 1-D
conv), or a transpose joined by a last-axis concatenate.

``lower.transpose_nest`` tiles output axis ``p`` (the one reading its input's unit-stride axis)
and writes the innermost axis in vectors; the pad's bound tests of the innermost index
(``w - 1 >= 0 and w - 1 < 56``) were then evaluated lane by lane in every vector, with a masked
gather under them. ``transpose_pieces`` emits the same tiles once per piece of the innermost
axis (``pieces.cuts``), each piece's body resolved for its range (``pieces.resolve``): the
border pieces store constants and the interior is the plain transposing copy. One thread, Zen 4:
``1x56x56x64`` NHWC -> NCHW padded by one pixel 170 -> ~60 us (the transpose alone: 53 us),
``1x200x128`` -> ``1x128x230`` 14.5 -> ~6 us.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import substitute
from .common import PARALLEL_MIN_WORK, const_int, outer_loops, prod_dims
from .pieces import cuts, resolve


def _bind(axes, idx) -> dict:
    return {a: (i if i.dtype == a.dtype else E.Cast(a.dtype, i)) for a, i in zip(axes, idx)}


def transpose_pieces(ctx, t, buf, body, p: int, tile: int, lanes: int) -> S.Stmt | None:
    """Stage ``t`` (static shape, inlined ``body``) tiled over axis ``p`` by ``tile`` rows, its
    innermost axis written piece by piece between the starts that ``body`` tests it against;
    None when the shape is symbolic or the innermost axis has no such start."""
    shape = [const_int(d) for d in t.shape]
    if None in shape or len(shape) < 2:
        return None
    axes = [iv.var for iv in t.op.axis]
    n, dl = len(shape), shape[-1]
    points = cuts(body, axes[-1], dl)
    if not points:
        return None
    bounds = [0, *points, dl]
    pieces = [(lo, hi, resolve(body, axes[-1], lo, hi, dl))
              for lo, hi in zip(bounds, bounds[1:])]
    others = [k for k in range(n - 1) if k != p]
    dp = shape[p]

    def rows(idx, ext: int) -> S.Stmt:
        """The tile's ``ext`` rows of axis ``p`` from ``tp * tile``, piece by piece."""
        tp = idx[-1]

        def store(piece, pv, j):
            full = [None] * n
            for k, v in zip(others, idx[:-1]):
                full[k] = v
            full[p], full[-1] = tp * tile + pv, j
            return S.BufferStore(buf, substitute(piece, _bind(axes, full)), full)

        def over_rows(fbody):
            pv = ctx.fresh("p")
            return S.For(pv, 0, ext, S.ForKind.SERIAL, fbody(pv))

        parts = []
        for lo, hi, piece in pieces:
            parts += _piece(ctx, lo, hi, lanes, over_rows,
                            lambda pv, j, piece=piece: store(piece, pv, j))
        return S.SeqStmt(parts) if len(parts) > 1 else parts[0]

    whole, rem = divmod(dp, tile)

    def per_tile(idx):
        if not rem:
            return rows(idx, tile)
        if not whole:
            return rows(idx, rem)
        return S.IfThenElse(E.LT(idx[-1], E.IntImm(idx[-1].dtype, whole)), rows(idx, tile),
                            rows(idx, rem))

    dims = [shape[k] for k in others] + [-(-dp // tile)]
    return outer_loops(ctx, dims, prod_dims(shape) >= PARALLEL_MIN_WORK, per_tile)


def _piece(ctx, lo: int, hi: int, lanes: int, over_rows, store) -> list[S.Stmt]:
    """Columns ``[lo, hi)`` of a tile's rows: per vector of columns, ``over_rows`` of
    ``store(row, column)``; the last vector overlapping the one before (a copy or a constant
    stores the same value twice), scalar columns for a piece under 4 wide (a pad's border)."""
    length = hi - lo
    vl = lanes if length >= lanes else (4 if length >= 4 else 0)

    def vec(pv, start):
        vi = ctx.fresh("vi")
        return S.For(vi, 0, vl, S.ForKind.VECTORIZED, store(pv, start + vi))

    if not vl:
        tl = ctx.fresh("t")
        return [S.For(tl, lo, length, S.ForKind.SERIAL, over_rows(lambda pv: store(pv, tl)))]
    out = []
    if length // vl:
        vo = ctx.fresh("vo")
        out.append(S.For(vo, 0, length // vl, S.ForKind.SERIAL,
                         over_rows(lambda pv: vec(pv, vo * vl + lo))))
    if length % vl:
        out.append(over_rows(lambda pv: vec(pv, E.IntImm("int32", hi - vl))))
    return out
