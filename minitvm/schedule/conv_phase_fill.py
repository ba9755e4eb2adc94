"""The phased copy of a conv strided in width (``conv_direct``) in few instructions a row.

``conv_direct`` copies its input into column phases (``xph[c, py, px, i, j] = x_padded[c,
i*sh + py, j*sw + px]``) before its micro-kernel reads them. Each phased row is a strided copy
of one input row between zero padding columns. Here one loop runs over (channel, phased row)
with the row phases unrolled inside, so the loop index is divided once an iteration rather than
once a phased row; each row's vector pieces are unrolled, the last one overlapping the piece
before it instead of a scalar tail loop; and a short zero run (a padding column) is single
stores. The rows are copied in input order, as ``conv_direct.PHASE_ROWS_IN_ORDER`` does.
"""

from __future__ import annotations

from collections.abc import Callable

from ..tir import expr as E
from ..tir import stmt as S
from .common import imm as _i
from .common import lanes as _lanes
from .common import prefetch

# pieces of a run unrolled; a longer run loops over its whole pieces (then the overlapping last)
UNROLL_PIECES = 8


def fill_strided(ctx, g: dict, xph, x, nv, kind: S.ForKind,
                 in_rows: Callable, ahead: int) -> S.Stmt:
    """Statements filling the phased rows ``xph`` of conv geometry ``g`` (``conv_direct.geometry``,
    or a band's) from image ``nv`` of ``x``: for each channel and phased row ``i``, the rows of
    the row phases some filter tap reads, each input row ``in_rows(g, i, py)`` copied to its
    column phases some tap reads, or zeros for a padding row. With ``ahead > 0`` each row first
    prefetches the same input row ``ahead`` channels on, line by line."""
    sh, sw, hq, wq, pl, w = g["sh"], g["sw"], g["hq"], g["wq"], g["pl"], g["w"]
    used_py = sorted({(ky * g["dh"]) % sh for ky in range(g["kh"])})
    used_px = sorted({(kx * g["dw"]) % sw for kx in range(g["kw"])})
    r = ctx.fresh("pr")  # r = c * hq + i
    i, c = E.FloorMod(r, hq), E.FloorDiv(r, hq)
    zero = E.FloatImm("float32", 0.0)
    rows = []
    for py in used_py:
        iy = in_rows(g, i, py)
        inside, pad = [], []
        for px in used_px:
            row = (((c * sh + py) * sw + px) * hq + i) * wq
            j0 = min(wq, max(0, -(-(pl - px) // sw)))  # first column reading x[.., ix >= 0]
            j1 = min(wq, max(j0, (w - 1 - px + pl) // sw + 1))  # one past the last ix < w
            inside += _run(ctx, xph, row, 0, j0, lambda j: zero)
            inside += _run(ctx, xph, row, j0, j1 - j0,
                           lambda j, px=px, iy=iy: x[nv, c, iy, j * sw + px - pl])
            inside += _run(ctx, xph, row, j1, wq - j1, lambda j: zero)
            pad += _run(ctx, xph, row, 0, wq, lambda j: zero)
        body = S.IfThenElse(E.And(iy >= 0, iy < g["h"]), _seq(inside), _seq(pad))
        if ahead > 0 and g["c"] > 1:
            cn = E.Min(c + ahead, _i(g["c"] - 1))
            cy = E.Max(E.Min(iy, _i(g["h"] - 1)), _i(0))
            body = S.SeqStmt([*(prefetch(x[nv, cn, cy, _i(j)]) for j in range(0, w, 16)), body])
        rows.append(body)
    return S.For(r, 0, g["c"] * hq, kind, _seq(rows))


def _seq(stmts: list[S.Stmt]) -> S.Stmt:
    return stmts[0] if len(stmts) == 1 else S.SeqStmt(stmts)


def _run(ctx, buf, row, j0: int, n: int, value: Callable) -> list[S.Stmt]:
    """``buf[row + j] = value(j)`` for ``j`` in ``[j0, j0 + n)``: single stores when shorter
    than a vector, else whole vectors, the last one ending at the run's end (overlapping the
    one before it, which stored the same values there)."""
    lanes = _lanes("float32")
    if n <= 0:
        return []
    if n < lanes:
        return [S.BufferStore(buf, value(_i(j)), [row + j]) for j in range(j0, j0 + n)]

    def piece(start) -> S.Stmt:
        v = ctx.fresh("pv")
        return S.For(v, 0, lanes, S.ForKind.VECTORIZED,
                     S.BufferStore(buf, value(start + v), [row + start + v]))

    whole = n // lanes
    if whole <= UNROLL_PIECES:
        out = [piece(_i(j0 + k * lanes)) for k in range(whole)]
    else:
        k = ctx.fresh("pk")
        out = [S.For(k, 0, whole, S.ForKind.SERIAL, piece(k * lanes + j0))]
    if n % lanes:
        out.append(piece(_i(j0 + n - lanes)))
    return out
