"""The register micro-kernel of ``conv_direct``'s implicit GEMM.

``_gemm`` runs the channel tiles x pixel panels of one image (or band), in the loop order and
channel blocks that ``conv_direct`` chooses (``weights_outer``, ``channel_block``), splitting a
short last channel tile; ``_micro`` is one ``rows x nr`` tile of accumulators summing every
filter tap in vector registers, then storing it (``conv_direct_store``). The tile's switches
(``COMPACT``, ``ROW_LANES``, ``UNROLL_STRIDED_ROWS``, ...) stay in ``conv_direct``, where hosts
and tests set them; it imports this module, so they are read from it at call time.
"""

from __future__ import annotations

from ..codegen.build import LOOP_PASSES as _LOOP_PASSES_ANNOTATION
from ..codegen.llvm.stmt import MAX_VECTOR_LANES
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from . import conv_lanes
from .common import dims_of as _dims
from .common import host_switch
from .common import imm as _i
from .conv_direct_store import _flat, _fused_store


def _gemm(ctx, g, xph, w, dst, nv) -> S.Stmt:
    """``mr``-channel tiles x pixel panels, all taps accumulated in registers.

    When the weights are larger than the phased image (deep layers: 512 channels of 7x7 pixels
    carry 9.4 MB of weights for a 0.2 MB image) the channel tiles are the outer, parallel loop:
    each tile's weights are read once and stay in cache over every panel, and each thread reads
    only its own tiles' weights. Otherwise the panels are (the image is read once per tile).
    """
    from . import conv_direct
    o, mr = g["o"], g["mr"]
    q = ctx.fresh("panel")
    full_tiles, rest = o // mr, o % mr
    tails = [(full_tiles * mr, rest)] if rest else []  # (first channel, rows) of short tiles
    if conv_direct.SPLIT_SHORT_TILE[conv_direct.vector_isa()] and 0 < rest <= mr // 3 and \
            full_tiles:
        # a tile of one or two rows waits on its few accumulators' FMA latency: the last full
        # tile and it become two of about equal height (128 channels: ... 6, 4, 4 not 6, 6, 2)
        full_tiles -= 1
        a = (mr + rest + 1) // 2
        tails = [(full_tiles * mr, a), (full_tiles * mr + a, mr + rest - a)]
    par = conv_direct._parallel(g)
    kc = conv_direct.channel_block(g)
    nr = g["nr"]
    if conv_direct.weights_outer(g):
        tv = ctx.fresh("tile")
        size = mr * g["panels"] * nr
        kb = None
        if kc < g["c"] and size <= host_switch(conv_direct.CHANNEL_BLOCK_SUMS_MAX):
            # channel blocks: the tile's partial sums over all panels kept in a scratch
            kb = (ctx.fresh("kb"), kc, g["c"] // kc, decl_buffer((size,), "float32", "tile_sums"),
                  lambda row0, q, ii, jj: (q * mr + ii) * nr + jj)
        tile = _micro(ctx, g, xph, w, dst, nv, tv * mr, q, mr, kb)
        # the two short tiles: one kernel, its first row computed
        if conv_direct._equal_tails(tails):
            first, rows = tails[0]
            tile = S.IfThenElse(tv < full_tiles, tile, _micro(
                ctx, g, xph, w, dst, nv, _i(first) + (tv - full_tiles) * rows, q, rows, kb))
        elif tails:  # tile full_tiles + k is the k-th short one
            shorts = [_micro(ctx, g, xph, w, dst, nv, _i(first), q, rows, kb)
                      for first, rows in tails]
            chain = shorts[-1]
            for k in range(len(shorts) - 2, -1, -1):
                chain = S.IfThenElse(tv < full_tiles + k + 1, shorts[k], chain)
            tile = S.IfThenElse(tv < full_tiles, tile, chain) if full_tiles else chain
        ntiles = full_tiles + len(tails)
        kind = S.ForKind.PARALLEL if par and ntiles > 1 else S.ForKind.SERIAL
        body = S.For(q, 0, g["panels"], S.ForKind.SERIAL, tile)
        if kb is not None:
            body = S.For(kb[0], 0, kb[2], S.ForKind.SERIAL, body)
            body = S.Allocate(kb[3].data, "float32", [size], True, S.DeclBuffer(kb[3], body))
        return S.For(tv, 0, ntiles, kind, body)
    kb = None
    if kc < g["c"] and o * nr <= host_switch(conv_direct.CHANNEL_BLOCK_SUMS_MAX):
        # channel blocks: partial sums of the panel's tiles kept in a scratch
        scratch = decl_buffer((o * nr,), "float32", "panel_sums")
        kb = (ctx.fresh("kb"), kc, g["c"] // kc, scratch,
              lambda row0, q, ii, jj: (row0 + ii) * nr + jj)
    parts = []
    if full_tiles:
        tv = ctx.fresh("tile")
        parts.append(S.For(tv, 0, full_tiles, S.ForKind.SERIAL,
                           _micro(ctx, g, xph, w, dst, nv, tv * mr, q, mr, kb)))
    if conv_direct._equal_tails(tails):
        tv = ctx.fresh("short")
        first, rows = tails[0]
        parts.append(S.For(tv, 0, len(tails), S.ForKind.SERIAL, _micro(
            ctx, g, xph, w, dst, nv, _i(first) + tv * rows, q, rows, kb)))
    else:
        for first, rows in tails:
            parts.append(_micro(ctx, g, xph, w, dst, nv, _i(first), q, rows, kb))
    body = S.SeqStmt(parts) if len(parts) > 1 else parts[0]
    if kb is not None:
        body = S.For(kb[0], 0, kb[2], S.ForKind.SERIAL, body)
        body = S.Allocate(kb[3].data, "float32", [o * g["nr"]], True, S.DeclBuffer(kb[3], body))
    kind = S.ForKind.PARALLEL if g["panels"] > 1 and par else S.ForKind.SERIAL
    return S.For(q, 0, g["panels"], kind, body)


def _micro(ctx, g, xph, w, dst, nv, row0, q, rows: int, kb=None) -> S.Stmt:
    """One ``rows x nr`` register tile: output channels ``row0 ..`` of pixel panel ``q``.

    ``kb = (block var, channels per block, blocks, scratch, index)``: the tile sums one block of
    input channels, starting from (and, but for the last block, ending in) its partial sums in
    the scratch, at ``index(row0, q, ii, jj)``.
    """
    from . import conv_direct
    out_grid = g.get("out_grid", g["grid"])
    flat = _flat(ctx, dst, g["n"] * g["o"] * out_grid, dst.name + "_flat")
    sh, sw, dh, dw, wq, plane = g["sh"], g["sw"], g["dh"], g["dw"], g["wq"], g["plane"]
    nr = g["nr"]
    acc = decl_buffer((rows, nr), "float32", "acc", scope="local")
    zero = E.FloatImm("float32", 0.0)
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody):
        v = ctx.fresh(name)
        return S.For(v, 0, extent, kind, fbody(v))

    def vloop(fbody):
        """A vectorized loop over the tile's ``nr`` pixels; a panel wider than the code
        generator takes as one vector (``few_channels_nr``'s) as unrolled vectors of
        ``ROW_LANES`` (one loop, in codegen's 64-lane pieces, measured no faster)."""
        if nr <= MAX_VECTOR_LANES:
            return loop("jj", nr, vec, fbody)
        lanes = conv_direct.ROW_LANES
        return loop("jv", nr // lanes, unroll, lambda jv: loop(
            "jj", lanes, vec, lambda jl: fbody(jv * lanes + jl)))

    init = loop("ii", rows, unroll, lambda ii: vloop(
        lambda jj: S.BufferStore(acc, zero, [ii, jj])))
    if kb is not None:
        kv, kc, nkb, sums, at = kb
        init = S.IfThenElse(E.EQ(kv, _i(0)), init, loop("ii", rows, unroll, lambda ii: vloop(
            lambda jj: S.BufferStore(acc, sums[at(row0, q, ii, jj)], [ii, jj]))))
    base = q * nr
    wv = _tile_weights(w, row0, rows)

    def wt(ii, c, ky, kx):  # the weight of output channel row0 + ii at tap (c, ky, kx)
        return wv[ii, c, ky, kx]

    def tap(c, ky, kx):
        ry, rx = ky * dh, kx * dw
        py, px = (E.FloorMod(ry, sh), E.FloorMod(rx, sw)) if sh * sw > 1 else (_i(0), _i(0))
        oy, ox = (E.FloorDiv(ry, sh), E.FloorDiv(rx, sw)) if sh * sw > 1 else (ry, rx)
        chan = ((c * sh + py) * sw + px) * plane + oy * wq + ox
        if g["rows_mode"] and nr % conv_direct.ROW_LANES == 0:
            # each vector: one contiguous piece of output row (base + jr*lanes) // OW
            def piece(ii, jr):
                p0 = base + jr * conv_direct.ROW_LANES
                roff = chan + E.FloorDiv(p0, g["ow"]) * wq + E.FloorMod(p0, g["ow"])
                return loop("jl", conv_direct.ROW_LANES, vec, lambda jl: S.BufferStore(
                    acc, acc[ii, jr * conv_direct.ROW_LANES + jl] + wt(ii, c, ky, kx) *
                    xph[roff + jl], [ii, jr * conv_direct.ROW_LANES + jl]))

            return loop("ii", rows, unroll, lambda ii: loop(
                "jr", nr // conv_direct.ROW_LANES, unroll, lambda jr: piece(ii, jr)))
        if g["rows_mode"]:  # a tile width the row pieces do not divide: per-pixel addresses
            return loop("ii", rows, unroll, lambda ii: vloop(lambda jj: S.BufferStore(
                acc, acc[ii, jj] + wt(ii, c, ky, kx) * xph[
                    chan + E.FloorDiv(base + jj, g["ow"]) * wq + E.FloorMod(base + jj, g["ow"])],
                [ii, jj])))
        off = chan + base
        return loop("ii", rows, unroll, lambda ii: vloop(lambda jj: S.BufferStore(
            acc, acc[ii, jj] + wt(ii, c, ky, kx) * xph[off + jj], [ii, jj])))

    compact = conv_direct.COMPACT[conv_direct.vector_isa()]
    xv = decl_buffer((nr,), "float32", "xv", scope="local")  # a tap's pixels (compact)
    pieces = nr // conv_direct.ROW_LANES \
        if g["rows_mode"] and nr % conv_direct.ROW_LANES == 0 else 0
    # (compact, row mode) where each vector piece of the tile starts in the phased plane
    roff = [ctx.fresh("roff") for _ in range(pieces)] if compact else []

    def tap_compact(c, ky, kx):
        """The tap's pixel vectors loaded once (into ``xv``) for all the tile's rows."""
        ry, rx = ky * dh, kx * dw
        py, px = (E.FloorMod(ry, sh), E.FloorMod(rx, sw)) if sh * sw > 1 else (_i(0), _i(0))
        oy, ox = (E.FloorDiv(ry, sh), E.FloorDiv(rx, sw)) if sh * sw > 1 else (ry, rx)
        chan = ctx.fresh("chan")
        if pieces:
            loads = [loop("jl", conv_direct.ROW_LANES, vec, lambda jl, jr=jr: S.BufferStore(
                xv, xph[chan + roff[jr] + jl], [jr * conv_direct.ROW_LANES + jl]))
                for jr in range(pieces)]
        elif g["rows_mode"]:  # a tile width the row pieces do not divide: per-pixel addresses
            loads = [vloop(lambda jj: S.BufferStore(xv, xph[
                chan + E.FloorDiv(base + jj, g["ow"]) * wq + E.FloorMod(base + jj, g["ow"])],
                [jj]))]
        else:
            loads = [vloop(lambda jj: S.BufferStore(xv, xph[chan + base + jj], [jj]))]
        macs = loop("ii", rows, unroll, lambda ii: vloop(lambda jj: S.BufferStore(
            acc, acc[ii, jj] + wt(ii, c, ky, kx) * xv[jj], [ii, jj])))
        return S.LetStmt(chan, ((c * sh + py) * sw + px) * plane + oy * wq + ox,
                         S.SeqStmt([*loads, macs]))

    tap_of = tap_compact if compact else tap
    kw_kind = unroll if g["kw"] <= 7 and g["unroll_kw"] else S.ForKind.SERIAL
    # strided: the filter rows unrolled too, so each tap's phase plane and row offset
    # (ky mod sh, ky div sh) are constants rather than integer arithmetic in the inner loop
    ky_kind = unroll if kw_kind == unroll and sh > 1 and g["kh"] * g["kw"] <= 9 and \
        conv_direct.UNROLL_STRIDED_ROWS[conv_direct.vector_isa()] \
        else S.ForKind.SERIAL

    def ky_loop(fbody):  # the filter rows the panel's output rows need (conv_lanes.trims_rows)
        if ky_kind == unroll or not conv_lanes.trims_rows(g):
            return loop("ky", g["kh"], ky_kind, fbody)
        v = ctx.fresh("ky")
        first, count = conv_lanes.tap_rows(g, conv_direct._orow(g, E.FloorDiv(base, g["gw"])),
                                           conv_direct._orow(g, E.FloorDiv(base + (nr - 1),
                                                                           g["gw"])))
        return S.For(v, first, count, ky_kind, fbody(v))

    if kb is not None:
        taps = loop("c", kc, S.ForKind.SERIAL, lambda cc: ky_loop(lambda ky: loop(
            "kx", g["kw"], kw_kind, lambda kx: tap_of(kv * kc + cc, ky, kx))))
    else:
        taps = loop("c", g["c"], S.ForKind.SERIAL, lambda c: ky_loop(lambda ky: loop(
            "kx", g["kw"], kw_kind, lambda kx: tap_of(c, ky, kx))))
    if conv_direct.loop_passes(g, rows, g["kw"] if kw_kind == unroll else 1):
        taps = S.For(taps.loop_var, taps.min, taps.extent, taps.kind, taps.body,
                     annotations={_LOOP_PASSES_ANNOTATION: True})
    grid = g["grid"]
    full = grid % nr == 0

    def store(ii, jj, src=acc):
        col = conv_direct._opix(g, base + jj)
        oy, ox = E.FloorDiv(col, g["gw"]), E.FloorMod(col, g["gw"])
        return S.BufferStore(dst, src[ii, jj], [nv, row0 + ii, oy, ox])

    if full:
        # the flat index is contiguous: store through the flattened position directly
        out = loop("ii", rows, unroll, lambda ii: vloop(lambda jj: S.BufferStore(
            flat, acc[ii, jj],
            [(nv * g["o"] + row0 + ii) * out_grid + conv_direct._opix(g, base + jj)])))
    else:
        last = g["panels"] - 1
        fast = loop("ii", rows, unroll, lambda ii: vloop(lambda jj: S.BufferStore(
            flat, acc[ii, jj],
            [(nv * g["o"] + row0 + ii) * out_grid + conv_direct._opix(g, base + jj)])))

        def slow_of(src):
            return loop("ii", rows, S.ForKind.SERIAL, lambda ii: loop(
                "jj", nr, S.ForKind.SERIAL, lambda jj: S.IfThenElse(
                    base + jj < grid, store(ii, jj, src))))

        slow = slow_of(acc)
        if compact:  # read from a copy of the tile: the accumulators stay in registers
            res = decl_buffer((rows, nr), "float32", "tile_res")
            copy = loop("ii", rows, unroll, lambda ii: vloop(lambda jj:
                        S.BufferStore(res, acc[ii, jj], [ii, jj])))
            slow = S.Allocate(res.data, "float32", [rows * nr], True, S.DeclBuffer(
                res, S.SeqStmt([copy, slow_of(res)])))
        out = S.IfThenElse(q < last, fast, slow)
    if g.get("epi") is not None:
        out = _fused_store(ctx, g, acc, dst, nv, row0, base, rows)
    if kb is not None:
        out = S.IfThenElse(E.EQ(kv, _i(nkb - 1)), out, loop("ii", rows, unroll, lambda ii: vloop(
            lambda jj: S.BufferStore(sums, acc[ii, jj], [at(row0, q, ii, jj)]))))
    body = S.DeclBuffer(acc, S.DeclBuffer(wv, S.SeqStmt([init, taps, out])))
    if compact:
        body = S.Allocate(xv.data, "float32", [nr], True, S.DeclBuffer(xv, body))
        for jr in range(len(roff) - 1, -1, -1):
            p0 = base + jr * conv_direct.ROW_LANES
            body = S.LetStmt(roff[jr], E.FloorDiv(p0, g["ow"]) * wq + E.FloorMod(p0, g["ow"]),
                             body)
    return S.Allocate(acc.data, "float32", [rows * nr], True, body)


def _tile_weights(w, row0, rows: int):
    """The weights of a tile's output channels ``row0 ..`` as a buffer of their own from an
    element offset, so that a tap reads row ``ii`` at a constant distance from one address. With
    ``w[row0 + ii, ...]`` each row's index was an int32 sum sign-extended apart, which LLVM
    folds only where it sees ``row0``'s range: not in a parallel loop's outlined body, where the
    twelve row addresses then held registers and spilled the tile (a 96 -> 96 1x5 conv over 48
    pixels ran 1.7x slower on the pool's code path than serial, even at one thread)."""
    _, c, kh, kw = _dims(w)
    return decl_buffer((rows, c, kh, kw), w.dtype, "w_tile", data=w.data,
                       elem_offset=w.elem_offset + row0 * (c * kh * kw))

