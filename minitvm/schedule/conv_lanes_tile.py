"""One tile of ``conv_lanes``: a block of output channels (``lanes_width``) x a few output pixels,
held in accumulators over the filter taps and the input channels, then stored through the fused
epilogue (``emit_tile``).

The code is kept small for LLVM, whose optimizer is most of a cold build: the filter rows are
a loop and a tile is stored one pixel an iteration (both were unrolled, with the columns: 4,800
LLVM instructions for a 3x3 conv, about 1,000 with all taps as loops; LLVM's time 2x less, the
run time the same on a Zen 2, but 5-25% slower on a Zen 3 until the columns were unrolled
again: ``UNROLL_TAPS``). (One tile size with the last tile moved back over the one before,
instead of 6s and 5s, saves a third of the rest but ran 3-5% slower at 7x7 and 14x14: 10
tiles of 5 for 49 pixels, or 9 of 6 computing 54.)

Read directly, 16-lane tiles (RegNet's groups of 16 channels; by default also strided convs of
3x3 filters) follow the output rows of the wider classes (``ROW_STORE``): a tile's pixels are
then consecutive in one row, so the tile is transposed in registers and each output channel
stored as a vector of pixels, where a tile across rows stores each pixel's channels one lane at
a time.

A conv pooling in its tiles (``conv_pool``) holds whole pooling windows a tile and stores one
value a window (``_pool_put``).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from . import conv_lanes as lanes
from .common import prefetch
from .lane_transpose import reads_plane, transpose16


def row_store(ctx, g, out, nv, ob, first, pixels: int, res, epilogue) -> S.Stmt:
    """Store a 16-channel tile whose ``pixels`` are consecutive in one output row from output
    pixel ``first`` (``oy * ow + ox``) on: the tile ``res`` ``[pixels, 16]`` transposed in
    registers (``transpose16``), then each output channel as vectors of its pixels (powers of
    two, ``pieces``); a last tile's channels past the conv's real ones are not stored.

    An epilogue that reads an operand at the pixel (a residual) runs on the stored vectors of
    pixels (contiguous loads); one that reads none runs before the transpose on whole vectors
    of 16 channels, as the tiles across rows apply it (a SiLU's exp on pieces of 8, 4 and 1
    pixels cost YOLOv5's 16 -> 32 stride-2 conv at 80x80 6%)."""
    cw = lanes.width(g)
    oy, ox = E.FloorDiv(first, g["ow"]), E.FloorMod(first, g["ow"])
    after = epilogue is not None and reads_plane(epilogue, nv, lanes.out_channel(g, ob, 0))

    def piece(tr, ll, lo, n):
        j = ctx.fresh("jr")
        idx = [nv, lanes.out_channel(g, ob, ll), oy, ox + (lo + j)]
        val = tr[ll, lo + j]
        val = epilogue(idx, val) if after else val
        return S.For(j, 0, n, S.ForKind.VECTORIZED, S.BufferStore(out, val, idx))

    def stores(tr):
        out_ = []
        for ll in range(cw):
            body = S.SeqStmt([piece(tr, ll, lo, n) for lo, n in pieces(pixels)])
            if lanes.tile_tail(g, ob) is not None:  # (a last tile's zero channels)
                body = S.IfThenElse(lanes.lane_is_real(g, ob, ll), body)
            out_.append(body)
        return S.SeqStmt(out_)

    if epilogue is None or after:
        return transpose16(res, pixels, stores)
    dtype = out.dtype  # (the epilogue's values: a requantization stores uint8)
    pre = decl_buffer((pixels, lanes.LANES), dtype, "cl_epi", scope="local")
    fills = []
    for jj in range(pixels):  # (the epilogue on each pixel's 16 channels)
        ll = ctx.fresh("ll")
        idx = [nv, real_channel(g, ob, ll), oy, ox + jj]
        fills.append(S.For(ll, 0, lanes.LANES, S.ForKind.VECTORIZED, S.BufferStore(
            pre, epilogue(idx, res[jj, ll]), [jj, ll])))
    body = S.SeqStmt([*fills, transpose16(pre, pixels, stores)])
    return S.Allocate(pre.data, dtype, [pixels * lanes.LANES], True, S.DeclBuffer(pre, body))


def real_channel(g, ob, ll):
    """``lanes.out_channel``, but a padding lane of a last tile reads the tile's last real
    channel: an epilogue run on all 16 lanes before the transpose reads its per-channel
    operands (a bias) there, and past the conv's channels they lie outside the operand (a
    7-channel conv read 9 floats past its bias: garbage, denormal there, made a fused tanh /
    exp 20x slower; the padding lanes are never stored)."""
    if lanes.tile_tail(g, ob) is None:
        return lanes.out_channel(g, ob, ll)
    cw = lanes.width(g)
    if g["groups"] == 1:
        return E.Min(ob * cw + ll, E.IntImm("int32", g["real_o"] - 1))
    gi = E.FloorDiv(ob * cw, g["og"])
    return gi * g["real_og"] + E.Min(E.FloorMod(ob * cw, g["og"]) + ll,
                                     E.IntImm("int32", g["real_og"] - 1))


def pieces(count: int) -> list[tuple[int, int]]:
    """(start, length) of ``count`` lanes cut in vectors of 16 lanes, then powers of two."""
    out, lo = [], 0
    for n in (lanes.LANES, 8, 4, 2, 1):
        while count - lo >= n:
            out.append((lo, n))
            lo += n
    return out


def emit_tile(ctx, g, xp, wp, out, nv, pix, ob, p0, pixels: int, epilogue, kb=None,
          kx_range=None, ky_range=None, row: bool = False) -> S.Stmt:
    """Output channels ``ob*width ..`` (``lanes_width``) x output pixels ``p0 .. p0+pixels``
    (flattened).

    The tile's pixel offsets into the padded input are read from the table ``pix`` once; the
    filter taps run as loops (only the tile's pixels are unrolled: ``UNROLL_TAPS``), which
    keeps the code LLVM optimizes small at no cost in speed.

    ``kb = (block var, channels per block, blocks, scratch, slot)``: the tile sums one block
    of input channels, starting from (and, but for the last block, ending in) its partial sums
    from pixel ``slot`` of the scratch on. ``kx_range``, when given, is the static range of
    filter columns the tile's pixels read input through (``col_segments``); the rest read
    padding; ``ky_range`` likewise the filter rows. Where the geometry has ``out_pix``
    (``lanes_direct``), ``xp`` is the input itself (flat), ``p0`` a slot of the tables and the
    tile's pixels are stored at ``out_pix``; ``row``: they are consecutive in one output row,
    each output channel stored as a vector of them (``lanes_rowstore``)."""
    c, ow, hp, wpd = g["c"], g["ow"], g["hp"], g["wp"]
    cw = lanes.width(g)
    acc = decl_buffer((pixels, cw), "float32", "cl_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody, dtype="int32"):
        v = ctx.fresh(name, dtype)
        lo = E.IntImm(dtype, 0)
        return S.For(v, lo, E.IntImm(dtype, extent), kind, fbody(v))

    def lanes_loop(fbody):  # a tile's lanes: vectors of 16 when they are 48
        if cw & (cw - 1) == 0:
            return loop("ll", cw, vec, fbody)
        return loop("lo", cw // lanes.LANES, unroll, lambda lo: loop(
            "ll", lanes.LANES, vec, lambda ll: fbody(lo * lanes.LANES + ll)))

    def ky_loop(fbody):  # the filter rows: those the tile's output rows need (trims_rows)
        if ky_range is not None:
            v, (first, end) = ctx.fresh("ky"), ky_range
            return S.For(v, E.IntImm("int32", first), E.IntImm("int32", end - first), ky_kind,
                         fbody(v))
        if ky_kind == unroll or not lanes.trims_rows(g) or g.get("pool"):
            return loop("ky", g["kh"], ky_kind, fbody)
        v = ctx.fresh("ky")
        first, count = lanes.tap_rows(g, E.FloorDiv(p0, ow), E.FloorDiv(p0 + (pixels - 1), ow))
        return S.For(v, first, count, ky_kind, fbody(v))

    q = [ctx.fresh("q") for _ in range(pixels)]  # padded-input offsets of its pixels
    init = loop("jj", pixels, unroll, lambda jj: lanes_loop(lambda ll:
                S.BufferStore(acc, E.FloatImm("float32", 0.0), [jj, ll])))
    if kb is not None:
        kv, kc, nkb, sums, slot = kb

        def at_sums(jj, ll):
            return (slot + jj) * cw + ll

        init = S.IfThenElse(E.EQ(kv, 0), init, loop("jj", pixels, unroll, lambda jj: lanes_loop(
            lambda ll: S.BufferStore(acc, sums[at_sums(jj, ll)], [jj, ll]))))

    wv = decl_buffer((cw,), "float32", "cl_w", scope="local")  # the tap's weights

    def widen(w):  # (an int8 weight: sign-extended and converted as it is loaded)
        return w if w.dtype == "float32" else E.Cast("float32", w)

    def tap(ci, ky, kx):  # (the pixels written out: each reads its own offset variable)
        xo = ctx.fresh("xo", "int64")
        macs = [lanes_loop(lambda ll, jj=jj: S.BufferStore(
            acc, acc[jj, ll] + wv[ll] * xp[xo + q[jj]], [jj, ll])) for jj in range(pixels)]
        # (a wider tile reads its 16s of output channels from consecutive weight blocks)
        loads = [loop("ll", lanes.LANES, vec, lambda ll, v=v: S.BufferStore(
            wv, widen(wp[ob * (cw // lanes.LANES) + v, ci, ky, kx, ll]), [v * lanes.LANES + ll]))
            for v in range(cw // lanes.LANES)]
        if ahead:  # (the last channels' prefetches may run past the weights)
            loads += [prefetch(wp[ob * (cw // lanes.LANES) + v, ci + ahead, ky, kx, 0])
                      for v in range(cw // lanes.LANES)]
        if g["groups"] > 1:  # the input channels of the tile's group
            ci = E.Cast("int64", E.FloorDiv(ob * cw, g["og"]) * c) + ci
        cb = g.get("cb")
        if "out_pix" in g:  # the input itself, this image's planes
            off = (E.Cast("int64", nv) * g["cin"] + ci) * (g["h"] * g["w"]) + \
                (ky * g["dh"]) * g["w"] + kx * g["dw"]
        elif cb:  # the channel-blocked copy (``_pack``)
            off = E.FloorDiv(ci, cb) * (hp * wpd * cb) + E.FloorMod(ci, cb) + \
                ((ky * g["dh"]) * wpd + kx * g["dw"]) * cb
        else:
            off = ci * (hp * wpd) + (ky * g["dh"]) * wpd + kx * g["dw"]
        return S.LetStmt(xo, E.Cast("int64", off), S.SeqStmt([*loads, *macs]))

    def kx_loop(fbody):  # the filter columns: those the tile's pixels read input through
        if kx_range is None:
            return loop("kx", g["kw"], kx_kind, fbody)
        v, (first, end) = ctx.fresh("kx"), kx_range
        return S.For(v, E.IntImm("int32", first), E.IntImm("int32", end - first), kx_kind,
                     fbody(v))

    taps = g["kh"] * g["kw"]
    # each tap also prefetches its weights a block of channels on (``PREFETCH_WEIGHTS``)
    ahead = 0
    if lanes.PREFETCH_WEIGHTS[lanes.vector_isa()] and g["lanes_order"] == "channels" and \
            g["o"] * c * taps * 4 >= lanes.PREFETCH_MIN_WEIGHT_BYTES:
        ahead = kb[1] if kb is not None else lanes.PREFETCH_CHANNELS
    ky_kind = unroll if taps <= lanes.UNROLL_TAPS else S.ForKind.SERIAL
    kx_kind = unroll if g["lanes_unroll_kx"] else S.ForKind.SERIAL
    if any(r is not None and r[1] <= r[0] for r in (kx_range, ky_range)):  # all padding
        macs = S.Evaluate(E.IntImm("int32", 0))
    elif kb is None:
        macs = loop("c", c, S.ForKind.SERIAL, lambda ci: ky_loop(lambda ky: kx_loop(
            lambda kx: tap(ci, ky, kx))), dtype="int64")
    else:
        macs = loop("c", kc, S.ForKind.SERIAL, lambda cc: ky_loop(lambda ky: kx_loop(
            lambda kx: tap(E.Cast("int64", kv * kc) + cc, ky, kx))), dtype="int64")

    # the tile is stored through a scratch copy, one pixel an iteration (a pixel's 16 output
    # channels are 16 scalar stores: unrolled over the pixels they were most of the kernel's
    # code)
    res = decl_buffer((pixels, cw), "float32", "cl_res")

    def put(jj, ll):
        p = g["out_pix"][p0 + jj] if "out_pix" in g else p0 + jj
        idx = [nv, lanes.out_channel(g, ob, ll), E.FloorDiv(p, ow), E.FloorMod(p, ow)]
        val = res[jj, ll] if epilogue is None else epilogue(idx, res[jj, ll])
        return S.BufferStore(out, val, idx)

    per = pixels  # values stored: a pixel each, or a pooled window's each
    if g.get("pool"):
        put, per = _pool_put(g, res, out, nv, ob, p0, epilogue), pixels // g["pool"][0] ** 2
    jp = ctx.fresh("jj")
    outs = lanes_loop(lambda ll: put(jp, ll))
    tail = lanes.tile_tail(g, ob)  # real output channels of a last tile
    if tail is not None:  # it stores them in vectors of powers of two (a loop ran 2x slower)
        tail, whole = tail
        outs = S.IfThenElse(whole, outs, S.SeqStmt([
            loop("ll", n, vec, lambda ll, lo=lo: put(jp, lo + ll)) for lo, n in pieces(tail)]))
    if row and "out_pix" in g:  # (transposed in registers, from the accumulators)
        store = row_store(ctx, g, out, nv, ob, g["out_pix"][p0], pixels, acc, epilogue)
    else:
        store = S.SeqStmt([
            loop("jj", pixels, unroll, lambda jj: lanes_loop(lambda ll: S.BufferStore(
                res, acc[jj, ll], [jj, ll]))), S.For(jp, 0, per, S.ForKind.SERIAL, outs)])
        store = S.Allocate(res.data, "float32", [pixels * cw], True, S.DeclBuffer(res, store))
    if kb is not None:
        store = S.IfThenElse(E.EQ(kv, nkb - 1), store, loop(
            "jj", pixels, unroll, lambda jj: lanes_loop(
                lambda ll: S.BufferStore(sums, acc[jj, ll], [at_sums(jj, ll)]))))
    body = S.DeclBuffer(acc, S.DeclBuffer(wv, S.SeqStmt([init, macs, store])))
    body = S.Allocate(wv.data, "float32", [cw], True, body)
    body = S.Allocate(acc.data, "float32", [pixels * cw], True, body)
    for jj in range(pixels - 1, -1, -1):
        body = S.LetStmt(q[jj], pix[p0 + jj], body)
    return body


def _pool_put(g, res, out, nv, ob, p0, epilogue):
    """``put(window, lane)`` of a pooled tile (``g["pool"] = (k, pooled rows, pooled
    columns)``): the epilogue applied to each of the window's ``k*k`` pixels (slots ``window *
    k*k ..`` of the tile's scratch ``res``, at their conv positions, ``lanes.window_pixel``),
    combined
    (``g["pool_combine"]``) and stored at the window's pooled position (the table
    ``g["pool_out"]``)."""
    k, _, pw = g["pool"]
    taps = k * k

    def put(jw, ll):
        win = g["pool_out"][E.FloorDiv(p0, taps) + jw]  # (a tile starts at a whole window)
        py, px = E.FloorDiv(win, pw), E.FloorMod(win, pw)
        o = lanes.out_channel(g, ob, ll)
        value = None
        for r in range(taps):
            v = res[jw * taps + r, ll]
            if epilogue is not None:
                v = epilogue([nv, o, *lanes.window_pixel(g, py, px, r)], v)
            value = v if value is None else g["pool_combine"](value, v)
        return S.BufferStore(out, value, [nv, o, py, px])

    return put
