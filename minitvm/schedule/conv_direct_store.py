"""Where ``conv_direct``'s register tiles land: the fused-epilogue stores and the crop.

``_fused_store`` applies the conv's fused elementwise epilogue (bias, residual add, relu) to a
tile and stores it once into the ``[N, O, OH, OW]`` output, a vector at a time (through a flat
view, ``_fused_store_flat``, where the grid is the output plane); ``_crop`` copies a grid buffer
with padding columns into the output when no epilogue is fused. The switches these read
(``COMPACT``, ``row_tail_stores``) stay in ``conv_direct``, where hosts and tests set them; it
imports this module, so they are read from it at call time.
"""

from __future__ import annotations

from ..codegen.llvm.stmt import MASKED_STORES, MAX_VECTOR_LANES
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import substitute, transform_expr
from .common import const_int as _const_int
from .common import imm as _i
from .common import lanes as _lanes
from .common import vector_inner as _vector_inner


def _fused_store(ctx, g, acc, dst, nv, row0, base, rows: int) -> S.Stmt:
    """The register tile through the fused epilogue into ``dst`` (``[N, O, OH, OW]``), in
    pieces of one vector: a piece inside one output row is one vector store (with vector
    loads of the epilogue's other operands); one that spans the grid's padding columns or a
    row end, or runs past the grid, is stored element by element where it is an output pixel.
    A grid without padding columns is the output itself: ``_fused_store_flat``.
    """
    from . import conv_direct
    lanes, ow, gw, grid, fn = conv_direct._piece(), g["ow"], g["gw"], g["grid"], g["epi"]

    def loop(name, extent, kind, fbody):
        v = ctx.fresh(name)
        return S.For(v, 0, extent, kind, fbody(v))

    if gw == ow:  # no padding columns: the tile's pixels are contiguous in `dst`
        return _fused_store_flat(ctx, g, acc, dst, nv, row0, base, rows, loop)

    def piece(ii, k):
        p0 = base + k * lanes  # (of the band: grid is the band's)
        oy, x0 = E.FloorDiv(conv_direct._opix(g, p0), gw), E.FloorMod(conv_direct._opix(g, p0), gw)
        o = row0 + ii

        def put(jl):
            idx = [nv, o, oy, x0 + jl]
            return S.BufferStore(dst, fn(idx, acc[ii, k * lanes + jl]), idx)

        vec = loop("jl", lanes, S.ForKind.VECTORIZED, put)
        inside = p0 + lanes <= grid

        def one(jl):
            p = conv_direct._opix(g, p0 + jl)
            idx = [nv, o, E.FloorDiv(p, gw), E.FloorMod(p, gw)]
            return S.IfThenElse(E.And(E.FloorMod(p, gw) < ow, p0 + jl < grid), S.BufferStore(
                dst, fn(idx, acc[ii, k * lanes + jl]), idx))

        if row_tails:  # a row's last piece: one masked vector store
            jv = ctx.fresh("jl")
            tail = S.For(jv, 0, lanes, S.ForKind.VECTORIZED,
                         S.IfThenElse(x0 + jv < ow, put(jv)), annotations={MASKED_STORES: True})
            return S.IfThenElse(inside, S.IfThenElse(x0 + lanes <= ow, vec, tail))
        return S.IfThenElse(E.And(x0 + lanes <= ow, inside), vec,
                            loop("jl", lanes, S.ForKind.SERIAL, one))

    row_tails = conv_direct.row_tail_stores(g, gw, lanes)
    unroll = S.ForKind.UNROLLED
    return loop("ii", rows, unroll, lambda ii: loop(
        "k", g["nr"] // lanes, unroll, lambda k: piece(ii, k)))


def _fused_store_flat(ctx, g, acc, dst, nv, row0, base, rows: int, loop) -> S.Stmt:
    """The fused store when the grid is the output (row mode, or no padding columns): pixel
    ``p`` of the tile is element ``p`` of its output plane, so each piece is one vector store
    through a flat view, even across row ends, and so is each epilogue operand laid out like the
    output plane (a residual); only a piece running past the grid is stored element by
    element."""
    from . import conv_direct
    lanes, ow, grid, fn = conv_direct._piece(), g["ow"], g["grid"], g["epi"]
    out_grid = g.get("out_grid", grid)  # (grid: the band's pixels, out_grid: the plane's)
    oy_v, ox_v = E.Var("oy", "int32"), E.Var("ox", "int32")
    flat_of = ctx.flat_view

    def value(o, p, v):
        e = fn([nv, o, oy_v, ox_v], v)

        def fpost(n):  # buf[..., oy, ox] of a buffer whose last dims are the output plane
            if not (isinstance(n, E.BufferLoad) and len(n.indices) >= 2 and
                    n.indices[-2] is oy_v and n.indices[-1] is ox_v and
                    [_const_int(d) for d in n.buffer.shape[-2:]] == [g["oh"], ow]):
                return None
            lead = _i(0)
            for i, d in zip(n.indices[:-2], n.buffer.shape[:-2]):
                lead = lead * d + i
            return E.BufferLoad(flat_of(n.buffer), [lead * out_grid + p])

        e = transform_expr(e, fpost)
        return substitute(e, {oy_v: E.FloorDiv(p, ow), ox_v: E.FloorMod(p, ow)})

    out = flat_of(dst)

    def piece(ii, k):
        p0 = base + k * lanes
        o = row0 + ii

        def put(jl):
            p = conv_direct._opix(g, p0 + jl)
            return S.BufferStore(out, value(o, p, acc[ii, k * lanes + jl]),
                                 [(nv * g["o"] + o) * out_grid + p])

        vec = loop("jl", lanes, S.ForKind.VECTORIZED, put)
        if grid % g["nr"] == 0 or conv_direct.COMPACT[conv_direct.vector_isa()]:
            return vec
        return S.IfThenElse(p0 + lanes <= grid, vec, loop(
            "jl", lanes, S.ForKind.SERIAL, lambda jl: S.IfThenElse(p0 + jl < grid, put(jl))))

    unroll = S.ForKind.UNROLLED
    whole = loop("ii", rows, unroll, lambda ii: loop(
        "k", g["nr"] // lanes, unroll, lambda k: piece(ii, k)))
    if grid % g["nr"] == 0 or not conv_direct.COMPACT[conv_direct.vector_isa()]:
        return whole
    # compact: a panel running past the grid (the last) is stored pixel by pixel from a copy
    # of the tile, one loop instead of every vector with its element-wise fallback. (The rows
    # of the other panels stay unrolled: in a loop over a copy of the tile, the small strided
    # 1x1 convs of ResNet-50 measured 2-3% slower on a Zen 2)
    nr = g["nr"]
    res = decl_buffer((rows, nr), "float32", "tile_res")
    ii, jj = ctx.fresh("ii"), ctx.fresh("jj")
    p = conv_direct._opix(g, base + jj)
    one = S.BufferStore(out, value(row0 + ii, p, res[ii, jj]), [(nv * g["o"] + row0 + ii) *
                                                                out_grid + p])
    ragged = S.SeqStmt([
        loop("ii", rows, unroll, lambda i: _pixel_loop(loop, nr, lambda j:
             S.BufferStore(res, acc[i, j], [i, j]))),
        S.For(ii, 0, rows, S.ForKind.SERIAL, S.For(jj, 0, E.Min(_i(nr), grid - base),
                                                   S.ForKind.SERIAL, one))])
    ragged = S.Allocate(res.data, "float32", [rows * nr], True, S.DeclBuffer(res, ragged))
    return S.IfThenElse(base + nr <= grid, whole, ragged)


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


def _pixel_loop(loop, nr: int, fbody) -> S.Stmt:
    """A vectorized loop over a tile's ``nr`` pixels, or, for a panel wider than the code
    generator takes as one vector (``conv_direct.few_channels_nr``), unrolled vectors of
    ``ROW_LANES`` (as ``conv_direct_micro``'s: one loop, in codegen's pieces, measured no
    faster)."""
    from . import conv_direct
    if nr <= MAX_VECTOR_LANES:
        return loop("jj", nr, S.ForKind.VECTORIZED, fbody)
    lanes = conv_direct.ROW_LANES
    return loop("jv", nr // lanes, S.ForKind.UNROLLED, lambda jv: loop(
        "jj", lanes, S.ForKind.VECTORIZED, lambda jl: fbody(jv * lanes + jl)))
