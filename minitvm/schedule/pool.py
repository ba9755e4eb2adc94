"""A row-wise schedule for 2-d window pooling (max, and the sum stage of avg) on NCHW.

Per output row (parallel over batch x channel x row), the valid input rows of the window are
combined into a row temporary with unit-stride vector loads (padding columns hold the
reduction's identity), then the window's columns are combined along that row, again with
unit-stride vectors; a strided pooling finally picks every ``stride``-th column. This replaces
the generic small-window reduction, whose strided, bounds-checked gathers cost 4-5x more.
"""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.utils import static_shape as _shape
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner

POOL_TAG = "pool2d_window"
PARALLEL_MIN_WORK = 1 << 16  # window loads before the rows run on the thread pool


def supported(t, options=None) -> bool:
    """Is ``t`` a tagged float pooling window stage this schedule handles?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != POOL_TAG:
        return False
    a = t.op.attrs
    (x,) = a["operands"]
    if not (t.dtype == x.dtype and t.dtype.startswith("float") and len(_shape(x)) == 4):
        return False
    # every window must see at least one input element (else the reference's value differs)
    for o, n, k, s, d, p in zip(_shape(t)[2:], _shape(x)[2:], a["pool_size"], a["strides"],
                                a["dilation"], a["padding"][:2]):
        for i in range(o):
            if not any(0 <= i * s + kk * d - p < n for kk in range(k)):
                return False
    return True


def emit(ctx, t, out, x, ident, combine) -> S.Stmt:
    """Statements computing pooling stage ``t`` (input buffer ``x``) into ``out``."""
    a = t.op.attrs
    nb, ch, h, w = _shape(a["operands"][0])
    _, _, oh, ow = _shape(t)
    kh, kw = a["pool_size"]
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl = a["padding"][0], a["padding"][1]
    dt, lanes = t.dtype, _lanes(t.dtype)
    need = (ow - 1) * sw + (kw - 1) * dw + 1  # padded columns the windows read
    wp = max(need, pl + w)
    hw = (ow - 1) * sw + 1  # columns of the horizontal pass (all start columns)
    wvalid = max(0, min(w, wp - pl))
    parallel = nb * ch * oh * ow * kh * kw >= PARALLEL_MIN_WORK
    # a max pool's padding holds the dtype's lowest finite value (TVM's topi), not the
    # reduction's identity (-inf): a window over padding and -inf inputs gives that value
    padv = tir_op.min_value(dt) if t.op.name == "max_pool2d" else None

    def row(idx):
        b, c, oy = idx
        vrow = decl_buffer((wp,), dt, "pool_vrow")
        parts = [_vector_inner(ctx, wp, lanes, lambda j: S.BufferStore(vrow, ident, [j]))]
        for ky in range(kh):
            iy = oy * sh + (ky * dh - pt)
            upd = _vector_inner(ctx, wvalid, lanes, lambda j, iy=iy: S.BufferStore(
                vrow, combine(E.BufferLoad(vrow, [j + pl]), E.BufferLoad(x, [b, c, iy, j])),
                [j + pl]))
            pad_row = None if padv is None else _vector_inner(
                ctx, wp, lanes, lambda j: S.BufferStore(
                    vrow, combine(E.BufferLoad(vrow, [j]), padv), [j]))
            parts.append(S.IfThenElse(E.And(iy >= 0, iy < h), upd, pad_row))
        if padv is not None:  # the padding columns read only padding
            if pl > 0:
                parts.append(_vector_inner(ctx, pl, lanes,
                                           lambda j: S.BufferStore(vrow, padv, [j])))
            if wp > pl + wvalid:
                parts.append(_vector_inner(ctx, wp - pl - wvalid, lanes, lambda j: S.BufferStore(
                    vrow, padv, [j + pl + wvalid])))

        def window(j):
            v = E.BufferLoad(vrow, [j])
            for kx in range(1, kw):
                v = combine(v, E.BufferLoad(vrow, [j + kx * dw]))
            return v

        if sw == 1:
            parts.append(_vector_inner(ctx, ow, lanes, lambda j: S.BufferStore(
                out, window(j), [b, c, oy, j])))
            body = S.SeqStmt(parts)
        else:
            hrow = decl_buffer((hw,), dt, "pool_hrow")
            parts.append(_vector_inner(ctx, hw, lanes, lambda j: S.BufferStore(
                hrow, window(j), [j])))
            parts.append(_vector_inner(ctx, ow, lanes, lambda j: S.BufferStore(
                out, E.BufferLoad(hrow, [j * sw]), [b, c, oy, j])))
            body = S.Allocate(hrow.data, dt, [hw], True, S.DeclBuffer(hrow, S.SeqStmt(parts)))
        return S.Allocate(vrow.data, dt, [wp], True, S.DeclBuffer(vrow, body))

    return _outer_loops(ctx, [nb, ch, oh], parallel, row)
