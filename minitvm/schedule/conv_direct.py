"""conv2d (NCHW, groups 1) as generated code: an implicit GEMM with no im2col buffer.

The input is copied once per call into a zero-padded, stride-phased workspace
``xph[c, py, px, i, j] = x_padded[c, i*sh + py, j*sw + px]``. On that layout every filter tap
``(c, ky, kx)`` reads, for the output grid flattened as ``oy * Wq + ox``, one contiguous window
shifted by a constant offset, so the convolution is ``C[o, j] = sum_k W[o, k] * xph[off(k) + j]``:
a GEMM whose B rows are views of the input. A micro-kernel keeps an ``mr x nr`` tile (output
channels x flattened pixels) in vector registers; the parallel loop runs over (batch, pixel
panel). The grid has ``Wq >= OW`` columns per row; the extra columns are computed and ignored:
the result lands in a ``[N, O, OH, Wq]`` buffer that the fused epilogue (or a crop) reads.

When ``OW`` is a whole number of vectors the pixels are taken row by row instead ("row mode"):
each vector of a panel is one contiguous piece of an output row, so no padding column is
computed (``Wq - OW`` of every ``Wq``: 12% of a 16-wide 3x3 conv) and the kernel writes the
``[N, O, OH, OW]`` output layout itself.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.utils import static_shape as _shape
from .common import const_int as _const_int
from .common import dims_of as _dims
from .common import imm as _i
from .common import lanes as _lanes
from .common import vector_inner as _vector_inner
from .knobs import select as _knobs

MR, NR = 8, 32  # register tile: output channels x pixels (nr a multiple of the vector width)
ROW_LANES = 16  # float32 lanes of one vector: row mode needs OW a multiple of it
# a convolution of fewer multiply-adds per image than this runs on the calling thread: waking
# the pool costs more than it saves (0.3 ms per parallel loop measured on a loaded 2-core
# machine against 20-40 us for a whole 16-32 channel 32x32 conv on one thread)
PARALLEL_MIN_MACS = 1 << 23


def _parallel(g) -> bool:
    return g["o"] * g["grid"] * g["c"] * g["kh"] * g["kw"] >= g["min_macs"]


def geometry(t, knobs: dict | None = None) -> dict:
    """Sizes of the phased input and of the output grid of conv2d stage ``t``, plus the
    schedule's knobs (register tile ``mr x nr``, parallel threshold, unrolling; defaults: the
    constants above, else ``knobs`` from ``knobs.select``).

    The batch ``n`` may be symbolic (a PrimExpr); every other extent is static.
    """
    kn = knobs or {}
    mr, nr = kn.get("mr", MR), kn.get("nr", NR)
    attrs = t.op.attrs
    x = attrs["operands"][0]
    n = _dims(x)[0]
    c, h, w = (int(d) for d in x.shape[1:])
    o, cg, kh, kw = _shape(attrs["operands"][1])
    oh, ow = (int(d) for d in t.shape[2:])
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    pt, pl, _, _ = attrs["padding"]
    hq = oh + ((kh - 1) * dh) // sh
    wq = ow + ((kw - 1) * dw) // sw
    rows_mode = ow % ROW_LANES == 0  # (independent of the knobs: grid_shape relies on it)
    gw = ow if rows_mode else wq  # the width of the grid the kernel writes
    grid = oh * gw
    panels = -(-grid // nr)
    plane = hq * wq
    if rows_mode:  # whole phased planes, plus zeroed rows the last panel's overhang reads
        xph_len = c * sh * sw * plane + (-(-(panels * nr - grid) // ow) + 1) * wq
    else:
        max_off = (c * sh * sw - 1) * plane + (hq - oh) * wq + (wq - ow)
        xph_len = max_off + panels * nr
    return dict(n=n, c=c, h=h, w=w, o=o, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, dh=dh, dw=dw,
                pt=pt, pl=pl, hq=hq, wq=wq, grid=grid, panels=panels, plane=plane,
                xph_len=xph_len, mr=mr, nr=nr, min_macs=kn.get("min_macs", PARALLEL_MIN_MACS),
                unroll_kw=kn.get("unroll_kw", True), rows_mode=rows_mode, gw=gw)


def supported(t) -> bool:
    """Float32, one group, static shapes: the generated implicit GEMM applies."""
    attrs = t.op.attrs
    a, b = attrs["operands"]
    if not (t.dtype == a.dtype == b.dtype == "float32") or attrs["groups"] != 1:
        return False
    if any(_const_int(d) is None for d in (*a.shape[1:], *b.shape, *t.shape[1:])):
        return False
    g = geometry(t)
    return g["xph_len"] < (1 << 31) and g["o"] >= 1


def grid_shape(t) -> tuple[int, ...]:
    """Shape of the buffer the kernel writes: ``[N, O, OH, Wq]`` (``[N, O, OH, OW]`` in row
    mode)."""
    g = geometry(t)
    return (g["n"], g["o"], g["oh"], g["gw"])


def emit(ctx, t, out, x, w) -> S.Stmt:
    """Statements computing conv2d stage ``t`` into ``out`` (``[N,O,OH,Wq]`` or ``[N,O,OH,OW]``)."""
    g = geometry(t, _knobs(ctx.options, t))
    xph = ctx.temp((g["xph_len"],), "float32", "xph")
    direct = _dims(out)[3] == g["gw"]
    dst = out if direct else ctx.temp((g["n"], g["o"], g["oh"], g["gw"]), "float32", "conv_grid")
    stmts = []
    nb = g["n"]
    nv = ctx.fresh("n", "int32" if isinstance(nb, int) else nb.dtype)
    body = [_phase(ctx, g, xph, x, nv), _gemm(ctx, g, xph, w, dst, nv)]
    stmts.append(S.For(nv, 0, nb, S.ForKind.SERIAL, S.SeqStmt(body)) if isinstance(nb, int)
                 else S.For(nv, E.IntImm(nb.dtype, 0), nb, S.ForKind.SERIAL, S.SeqStmt(body)))
    if not direct:
        stmts.append(_crop(ctx, g, dst, out))
    return S.SeqStmt(stmts) if len(stmts) > 1 else stmts[0]


def _phase(ctx, g, xph, x, nv) -> S.Stmt:
    """``xph[((c*sh + py)*sw + px)*plane + i*wq + j] = x_padded[n, c, i*sh+py, j*sw+px]``."""
    sh, sw, hq, wq = g["sh"], g["sw"], g["hq"], g["wq"]
    rows = g["c"] * sh * sw * hq
    r = ctx.fresh("pr")
    i = E.FloorMod(r, hq)
    ph = E.FloorDiv(r, hq)
    px = E.FloorMod(ph, sw) if sw > 1 else _i(0)
    py = E.FloorMod(E.FloorDiv(ph, sw), sh) if sh > 1 else _i(0)
    c = E.FloorDiv(ph, sw * sh) if sw * sh > 1 else ph
    iy = i * sh + py - g["pt"]
    zero = _i(0)

    def at(j):
        ix = j * sw + px - g["pl"]
        ok = E.And(E.And(iy >= 0, iy < g["h"]), E.And(ix >= 0, ix < g["w"]))
        cy = E.Max(E.Min(iy, _i(g["h"] - 1)), zero)
        cx = E.Max(E.Min(ix, _i(g["w"] - 1)), zero)
        val = E.Select(ok, x[nv, c, cy, cx], E.FloatImm("float32", 0.0))
        return S.BufferStore(xph, val, [r * wq + j])

    kind = S.ForKind.PARALLEL if _parallel(g) and rows * wq >= (1 << 15) else S.ForKind.SERIAL
    fill = S.For(r, 0, rows, kind, _vector_inner(ctx, wq, _lanes("float32"), at))
    tail_start = rows * wq
    tail = g["xph_len"] - tail_start
    z = ctx.fresh("z")
    zero_tail = S.For(z, 0, tail, S.ForKind.SERIAL,
                      S.BufferStore(xph, E.FloatImm("float32", 0.0), [tail_start + z]))
    return S.SeqStmt([fill, zero_tail])


def _gemm(ctx, g, xph, w, dst, nv) -> S.Stmt:
    """Parallel over pixel panels; ``mr``-channel tiles inside, all taps accumulated in registers."""
    o, mr = g["o"], g["mr"]
    q = ctx.fresh("panel")
    full_tiles, rest = o // mr, o % mr
    parts = []
    if full_tiles:
        tv = ctx.fresh("tile")
        parts.append(S.For(tv, 0, full_tiles, S.ForKind.SERIAL,
                           _micro(ctx, g, xph, w, dst, nv, tv * mr, q, mr)))
    if rest:
        parts.append(_micro(ctx, g, xph, w, dst, nv, _i(full_tiles * mr), q, rest))
    body = S.SeqStmt(parts) if len(parts) > 1 else parts[0]
    kind = S.ForKind.PARALLEL if g["panels"] > 1 and _parallel(g) else S.ForKind.SERIAL
    return S.For(q, 0, g["panels"], kind, body)


def _micro(ctx, g, xph, w, dst, nv, row0, q, rows: int) -> S.Stmt:
    flat = _flat(ctx, dst, g["n"] * g["o"] * g["grid"], dst.name + "_flat")
    sh, sw, dh, dw, wq, plane = g["sh"], g["sw"], g["dh"], g["dw"], g["wq"], g["plane"]
    nr = g["nr"]
    acc = decl_buffer((rows, nr), "float32", "acc", scope="local")
    zero = E.FloatImm("float32", 0.0)
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody):
        v = ctx.fresh(name)
        return S.For(v, 0, extent, kind, fbody(v))

    init = loop("ii", rows, unroll, lambda ii: loop(
        "jj", nr, vec, lambda jj: S.BufferStore(acc, zero, [ii, jj])))
    base = q * nr

    def tap(c, ky, kx):
        ry, rx = ky * dh, kx * dw
        py, px = (E.FloorMod(ry, sh), E.FloorMod(rx, sw)) if sh * sw > 1 else (_i(0), _i(0))
        oy, ox = (E.FloorDiv(ry, sh), E.FloorDiv(rx, sw)) if sh * sw > 1 else (ry, rx)
        chan = ((c * sh + py) * sw + px) * plane + oy * wq + ox
        if g["rows_mode"] and nr % ROW_LANES == 0:
            # each vector: one contiguous piece of output row (base + jr*lanes) // OW
            def piece(ii, jr):
                p0 = base + jr * ROW_LANES
                roff = chan + E.FloorDiv(p0, g["ow"]) * wq + E.FloorMod(p0, g["ow"])
                return loop("jl", ROW_LANES, vec, lambda jl: S.BufferStore(
                    acc, acc[ii, jr * ROW_LANES + jl] + w[row0 + ii, c, ky, kx] *
                    xph[roff + jl], [ii, jr * ROW_LANES + jl]))

            return loop("ii", rows, unroll, lambda ii: loop(
                "jr", nr // ROW_LANES, unroll, lambda jr: piece(ii, jr)))
        if g["rows_mode"]:  # a tile width the row pieces do not divide: per-pixel addresses
            return loop("ii", rows, unroll, lambda ii: loop("jj", nr, vec, lambda jj: S.BufferStore(
                acc, acc[ii, jj] + w[row0 + ii, c, ky, kx] * xph[
                    chan + E.FloorDiv(base + jj, g["ow"]) * wq + E.FloorMod(base + jj, g["ow"])],
                [ii, jj])))
        off = chan + base
        return loop("ii", rows, unroll, lambda ii: loop("jj", nr, vec, lambda jj: S.BufferStore(
            acc, acc[ii, jj] + w[row0 + ii, c, ky, kx] * xph[off + jj], [ii, jj])))

    kw_kind = unroll if g["kw"] <= 7 and g["unroll_kw"] else S.ForKind.SERIAL
    taps = loop("c", g["c"], S.ForKind.SERIAL, lambda c: loop(
        "ky", g["kh"], S.ForKind.SERIAL, lambda ky: loop(
            "kx", g["kw"], kw_kind, lambda kx: tap(c, ky, kx))))
    grid = g["grid"]
    full = grid % nr == 0

    def store(ii, jj):
        col = base + jj
        oy, ox = E.FloorDiv(col, g["gw"]), E.FloorMod(col, g["gw"])
        return S.BufferStore(dst, acc[ii, jj], [nv, row0 + ii, oy, ox])

    if full:
        # the flat index is contiguous: store through the flattened position directly
        out = loop("ii", rows, unroll, lambda ii: loop("jj", nr, vec, lambda jj: S.BufferStore(
            flat, acc[ii, jj], [(nv * g["o"] + row0 + ii) * g["grid"] + base + jj])))
    else:
        last = g["panels"] - 1
        fast = loop("ii", rows, unroll, lambda ii: loop("jj", nr, vec, lambda jj: S.BufferStore(
            flat, acc[ii, jj], [(nv * g["o"] + row0 + ii) * g["grid"] + base + jj])))
        slow = loop("ii", rows, S.ForKind.SERIAL, lambda ii: loop(
            "jj", nr, S.ForKind.SERIAL, lambda jj: S.IfThenElse(
                base + jj < grid, store(ii, jj))))
        out = S.IfThenElse(q < last, fast, slow)
    body = S.DeclBuffer(acc, S.SeqStmt([init, taps, out]))
    return S.Allocate(acc.data, "float32", [rows * nr], True, body)


def _flat(ctx, buf, length: int, name: str):
    """A 1-d view of ``buf`` (declared once per lowering, at the function's top)."""
    view = decl_buffer((length,), "float32", name, data=buf.data, elem_offset=buf.elem_offset)
    ctx.ws_views.append(view)
    return view


def _crop(ctx, g, src, out) -> S.Stmt:
    """``out[n, o, oy, ox] = grid[n, o, oy, ox]`` for ``ox < OW``."""
    rows = g["n"] * g["o"] * g["oh"]
    ow, wq = g["ow"], g["gw"]
    sflat = _flat(ctx, src, rows * wq, "grid_flat")
    oflat = _flat(ctx, out, rows * ow, "out_flat")
    if not isinstance(rows, int):  # symbolic batch: parallel once there are enough rows
        r = ctx.fresh("cr", rows.dtype)
        inner = _vector_inner(ctx, ow, _lanes("float32"),
                              lambda j: S.BufferStore(oflat, sflat[r * wq + j], [r * ow + j]))
        return S.For(r, E.IntImm(rows.dtype, 0), rows, S.ForKind.PARALLEL, inner,
                     annotations={"parallel_min_extent": max(2, -(-(1 << 16) // ow))})
    r = ctx.fresh("cr")

    def at(j):
        return S.BufferStore(oflat, sflat[r * wq + j], [r * ow + j])

    kind = S.ForKind.PARALLEL if rows * ow >= (1 << 16) else S.ForKind.SERIAL
    return S.For(r, 0, rows, kind, _vector_inner(ctx, ow, _lanes("float32"), at))
