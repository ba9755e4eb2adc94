"""The phased input copy of ``conv_direct``'s implicit GEMM, and its bands.

``_phase`` fills the zero-padded, stride-phased workspace ``xph[c, py, px, i, j] = x_padded[c,
i*sh + py, j*sw + px]`` that every filter tap reads as one contiguous window: row by row with
contiguous vectors (stride 1 in width), through ``conv_phase_fill`` or ``_phase_strided``
(strided), else element by element. ``_bands`` makes a large copy band by band of output rows,
each band's copy on a slice of the kernel's workspace followed by its pixel panels (``_gemm``).
The switches these read (``PHASE_ROW_RUNS``, ``BAND_SLICES``, ...) and the band geometry
(``band_rows``, ``_band``) stay in ``conv_direct``, where hosts and tests set them; it imports
this module, so they are read from it at call time.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from . import conv_phase_fill
from .common import allocated, per_thread_slices, prefetch
from .common import imm as _i
from .common import lanes as _lanes
from .common import vector_inner as _vector_inner
from .conv_direct_micro import _gemm


def _bands(ctx, g, x, w, dst, nv, parallel: bool, xph=None) -> S.Stmt:
    """Image ``nv`` band by band (``band_rows``): each band's phased rows copied into a
    scratch copy, then its panels. The copy is a slice of the kernel's workspace
    (``BAND_SLICES``): bands on the pool take one slice per thread of the call, each thread's
    bands in turn; serial bands share one. ``xph``: the serial bands' copy, given (the image's
    slice when the images run on the pool, ``_by_image``)."""
    from . import conv_direct
    rows = conv_direct.band_rows(g)
    bands = g["oh"] // rows
    b = ctx.fresh("band")
    gb = conv_direct._band(g, rows, b)
    size = gb["xph_len"]

    def body(xph):
        return S.SeqStmt([_phase(ctx, gb, xph, x, nv), _gemm(ctx, gb, xph, w, dst, nv)])

    if xph is not None:
        return S.For(b, 0, bands, S.ForKind.SERIAL, body(xph))
    if parallel and not conv_direct.BAND_SLICES[conv_direct.vector_isa()]:
        xph = decl_buffer((size,), "float32", "xph_band")
        if parallel:
            return S.For(b, 0, bands, S.ForKind.PARALLEL, allocated(xph, body(xph)))
        return allocated(xph, S.For(b, 0, bands, S.ForKind.SERIAL, body(xph)))
    stride = -(-size // 16) * 16  # slices on 64-byte lines
    slots = min(bands, conv_direct.BAND_SLOTS) if parallel else 1
    scratch = ctx.temp((slots * stride,), "float32", "xph_bands")

    def view(slot):
        return decl_buffer((size,), "float32", "xph_band", data=scratch.data,
                           elem_offset=scratch.elem_offset + slot * stride)

    if slots == 1:
        xph = view(_i(0))
        return S.DeclBuffer(xph, S.For(b, 0, bands, S.ForKind.SERIAL, body(xph)))
    # one slice per thread of the call (one thread: one slice, the bands in order)
    def one(task, p):
        xph = view(p)
        return S.LetStmt(b, task, S.DeclBuffer(xph, body(xph)))

    return per_thread_slices(ctx, bands, slots, one, "band")


def _phase(ctx, g, xph, x, nv) -> S.Stmt:
    """``xph[((c*sh + py)*sw + px)*plane + i*wq + j] = x_padded[n, c, i*sh+py, j*sw+px]``."""
    from . import conv_direct
    sh, sw, hq, wq = g["sh"], g["sw"], g["hq"], g["wq"]
    rows = g["c"] * sh * sw * hq
    r = ctx.fresh("pr")
    i = E.FloorMod(r, hq)
    ph = E.FloorDiv(r, hq)
    px = E.FloorMod(ph, sw) if sw > 1 else _i(0)
    py = E.FloorMod(E.FloorDiv(ph, sw), sh) if sh > 1 else _i(0)
    c = E.FloorDiv(ph, sw * sh) if sw * sh > 1 else ph
    iy = conv_direct._in_rows(g, i, py)
    zero = _i(0)

    def at(j):
        ix = j * sw + px - g["pl"]
        ok = E.And(E.And(iy >= 0, iy < g["h"]), E.And(ix >= 0, ix < g["w"]))
        cy = E.Max(E.Min(iy, _i(g["h"] - 1)), zero)
        cx = E.Max(E.Min(ix, _i(g["w"] - 1)), zero)
        val = E.Select(ok, x[nv, c, cy, cx], E.FloatImm("float32", 0.0))
        return S.BufferStore(xph, val, [r * wq + j])

    kind = S.ForKind.PARALLEL if conv_direct._parallel(g) and rows * wq >= (1 << 15) else \
        S.ForKind.SERIAL
    if sw == 1:
        fill = S.For(r, 0, rows, kind, _phase_row(ctx, g, xph, x, nv, r, c, iy))
    elif g["dw"] == 1 and conv_direct.PHASE_ROW_RUNS[conv_direct.vector_isa()] and \
            (conv_direct.PHASE_ROWS_IN_ORDER[conv_direct.vector_isa()] or sh == 1):
        ahead = conv_direct.PREFETCH_AHEAD if \
            conv_direct.PREFETCH_NEXT_CHANNEL[conv_direct.vector_isa()] else 0
        fill = conv_phase_fill.fill_strided(ctx, g, xph, x, nv, kind, conv_direct._in_rows, ahead)
    elif g["dw"] == 1:
        fill = _phase_strided(ctx, g, xph, x, nv, kind)
    else:
        fill = S.For(r, 0, rows, kind, _vector_inner(ctx, wq, _lanes("float32"), at))
    tail_start = rows * wq
    tail = g["xph_len"] - tail_start
    z = ctx.fresh("z")
    zero_tail = S.For(z, 0, tail, S.ForKind.SERIAL,
                      S.BufferStore(xph, E.FloatImm("float32", 0.0), [tail_start + z]))
    return S.SeqStmt([fill, zero_tail])


def _phase_row(ctx, g, xph, x, nv, r, c, iy) -> S.Stmt:
    """One phased row of a stride-1 (in width) conv: the input row copied with contiguous
    vectors between its zero padding columns, or zeros for a padding row (the general fill
    gathers every element through clamped, bounds-checked indices)."""
    wq, pl, lanes = g["wq"], g["pl"], _lanes("float32")
    width = max(0, min(g["w"], wq - pl))  # input columns the row holds
    zero = E.FloatImm("float32", 0.0)

    def put(j0, n, value):
        return _vector_inner(ctx, n, lanes, lambda j: S.BufferStore(
            xph, value(j), [r * wq + j0 + j]))

    parts = [put(0, min(pl, wq), lambda j: zero)] if pl > 0 else []
    if width:
        parts.append(put(pl, width, lambda j: x[nv, c, iy, j]))
    if wq - pl - width > 0:
        parts.append(put(pl + width, wq - pl - width, lambda j: zero))
    row = S.SeqStmt(parts) if len(parts) > 1 else parts[0]
    return S.IfThenElse(E.And(iy >= 0, iy < g["h"]), row, put(0, wq, lambda j: zero))


def _phase_strided(ctx, g, xph, x, nv, kind) -> S.Stmt:
    """The phased rows of a conv strided in width: per input row, its ``sw`` column phases
    (each one's valid columns known at build time), each a strided copy between zero padding
    columns, or zeros for a padding row (instead of the general per-element bounds checks).
    Phases no filter tap reads (three of the four of a 1x1 stride-2 conv) are not filled. The
    rows are taken in input order where ``PHASE_ROWS_IN_ORDER`` (and strided in height), each
    after prefetching its row of a later channel where ``PREFETCH_NEXT_CHANNEL``."""
    from . import conv_direct
    sh, sw, hq, wq, pl, w = g["sh"], g["sw"], g["hq"], g["wq"], g["pl"], g["w"]
    used_py = sorted({(ky * g["dh"]) % sh for ky in range(g["kh"])})
    used_px = sorted({(kx * g["dw"]) % sw for kx in range(g["kw"])})
    r = ctx.fresh("pr")
    # r = (c * hq + i) * sh + py
    if conv_direct.PHASE_ROWS_IN_ORDER[conv_direct.vector_isa()] and sh > 1:
        py = E.FloorMod(r, sh)
        i = E.FloorMod(E.FloorDiv(r, sh), hq)
        c = E.FloorDiv(r, sh * hq)
        ph = c * sh + py
    else:  # r = (c * sh + py) * hq + i
        i = E.FloorMod(r, hq)
        ph = E.FloorDiv(r, hq)  # c * sh + py
        py = E.FloorMod(ph, sh) if sh > 1 else _i(0)
        c = E.FloorDiv(ph, sh) if sh > 1 else ph
    iy = conv_direct._in_rows(g, i, py)
    lanes = _lanes("float32")
    zero = E.FloatImm("float32", 0.0)
    inside, pad = [], []
    for px in used_px:
        row = ((ph * sw + px) * hq + i) * wq

        def put(j0, n, value, row=row):
            return _vector_inner(ctx, n, lanes, lambda j: S.BufferStore(
                xph, value(j0 + j), [row + j0 + j]))

        j0 = min(wq, max(0, -(-(pl - px) // sw)))  # first column reading x[.., ix >= 0]
        j1 = min(wq, max(j0, (w - 1 - px + pl) // sw + 1))  # one past the last ix < w
        parts = [put(0, j0, lambda j: zero)] if j0 else []
        if j1 > j0:
            parts.append(put(j0, j1 - j0, lambda j, px=px: x[nv, c, iy, j * sw + px - pl]))
        if wq > j1:
            parts.append(put(j1, wq - j1, lambda j: zero))
        inside.extend(parts)
        pad.append(put(0, wq, lambda j: zero))
    body = S.IfThenElse(E.And(iy >= 0, iy < g["h"]), S.SeqStmt(inside), S.SeqStmt(pad))
    if conv_direct.PREFETCH_NEXT_CHANNEL[conv_direct.vector_isa()] and g["c"] > 1:
        # the same input row PREFETCH_AHEAD channels on, line by line (clamped to the image)
        cn = E.Min(c + conv_direct.PREFETCH_AHEAD, _i(g["c"] - 1))
        cy = E.Max(E.Min(iy, _i(g["h"] - 1)), _i(0))
        body = S.SeqStmt([*(prefetch(x[nv, cn, cy, _i(j)]) for j in range(0, w, 16)), body])
    if len(used_py) < sh:  # rows of phases no tap reads are skipped
        used = E.EQ(py, _i(used_py[0]))
        for v in used_py[1:]:
            used = E.Or(used, E.EQ(py, _i(v)))
        body = S.IfThenElse(used, body)
    return S.For(r, 0, g["c"] * sh * hq, kind, body)

