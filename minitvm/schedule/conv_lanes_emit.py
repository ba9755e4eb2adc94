"""The loop nests of ``conv_lanes``' convolutions: the tiles of output channels and of pixels, the
copies of the input they read, and the tables of pixel offsets (``emit``; one tile is
``conv_lanes_tile``'s).

The tiles of output channels are the outer (parallel) loop. Inside one, the input channels
run in blocks whose weights (16 KB) stay in L1 while a band of pixel tiles reads them, the
band's partial sums kept in a scratch between blocks (measured on a loaded Zen 2, one thread:
64 -> 64 at 56x56 16% faster than one pass over all channels, 512 -> 512 at 7x7 7%).

A dilated conv on a small plane (DeepLab's 3x3 branches of dilation 6 at 32x32) has output
columns whose outer filter columns read only padding. There the tiles follow the output rows,
cut at the runs of columns that share their filter columns (``row_segments``), and each tile
runs only its run's filter columns and its row's filter rows: no tap reads padding, so the
input is copied unpadded, in blocks of 16 channels side by side (``_pack``). ``conv_direct``'s
row mode, whose pixel vectors compute every filter column, leaves such convs to this schedule
(``conv_direct.lanes_candidate``).

On AVX-512 the tiles read the input itself, with no zero-padded copy (``DIRECT``, the
``lanes_direct`` knob): the output plane is cut in rectangles of pixels that read input through
the same filter rows and columns (``pixel_classes``: the interior, the border strips, the
corners), the pixel table lists them class by class, and each class's tiles run only their taps
(a second table gives each slot's output pixel). The copy was a pass of its own over an input
that, in a model, arrives from memory: ResNet-50's stride-2 convs on a Sapphire Rapids Xeon,
one thread, the caches flushed before each run, ms, direct / padded copy (ONNX Runtime):
128 -> 128 at 56x56 1.35 / 1.57 (1.50), 256 -> 256 at 28x28 1.40 / 1.49 (1.50), 512 -> 512 at
14x14 1.55 / 1.69 (2.10); 512 -> 512 at 7x7 (stride 1, four 1-pixel corner tiles) 1.47 / 1.42
(1.91), in the model 1.49 / 1.60. AVX2 keeps the copy (not measured there).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from . import conv_lanes as lanes
from .common import allocated as _allocated
from .common import lanes as _lanes
from .common import num_threads
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner
from .conv_lanes_tile import emit_tile
from .knobs import select as _knobs
from .lane_transpose import costly_plane_epilogue

# a parallel "bands" order chooses its split at run time: on one thread (a pool of one, or one
# image of a batch whose images run on the pool, as Relax's per-image kernels do) the serial
# split's bands of up to ``conv_lanes.band_tiles`` tiles, each block of weights loaded once for all of
# them, instead of ``lanes_parts`` bands of fewer tiles. Rocket Lake, one thread, Relax (batch
# 4, per-image kernel) against Relay's static batch-4 kernel (whose images run the serial split),
# medians of 300 interleaved calls: 64 -> 96 3x3/2 at 16x16 1.05-1.06x -> 1.03-1.04x (0.977x of
# before). The split as two static loop nests behind that test ran 1.03x of before instead.
SOLO_BANDS = True
# a batch of images is split over the pool image by image as in conv_direct
BATCH_PARALLEL_MIN_MACS = 1 << 21
BATCH_PARALLEL_MIN_IMAGES = 4




def emit(ctx, t, out, x, wp, epilogue=None, pool=None) -> S.Stmt:
    """Statements computing conv2d ``t`` into ``out`` (read and written at ``[n, o, oy, ox]``)
    from input ``x`` and the prepacked weight ``wp`` (``packed_weight``); ``epilogue(indices,
    value)``, when given, is the fused elementwise stage applied before the store.

    Images run in turn, each padded once and its tiles split over the thread pool, or, as in
    ``conv_direct``, the images themselves are split over the pool (each padding its own copy)
    when one image is too small to split or there are enough of them to balance. Where whole
    filter columns read only padding (``row_segments``) the tiles follow the output rows and
    skip those taps (``_row_tiles``), reading an unpadded copy instead (``_pack``).

    ``pool = (k, pooled rows, pooled columns, combine[, stride, top, left padding])``: ``out``
    is the ``k x k`` max pool (by default at stride ``k``, unpadded) of the epilogue's values
    (``conv_pool``), pooled in the tiles (each window's ``k*k`` pixels computed for it, those
    of overlapping windows again, a padded window's outside pixels clamped into it,
    ``conv_lanes.window_pixel``): the pixel table
    lists the windows' pixels window by window over the padded copy (``_pool_tables``), a
    tile holds whole windows (``conv_lanes.pool_tiles``) and stores one ``combine``d value a
    window."""
    g = lanes.geometry(t)
    g = lanes.with_knobs(g, _knobs(ctx.options, t))
    if pool is not None:  # (the padded copy: its table may list the pixels in any order)
        k, ph, pw, combine, *at = pool
        g = dict(g, lanes_direct=False, lanes_rowstore=False, pool=(k, ph, pw),
                 pool_at=tuple(at) or (k, 0, 0), pool_combine=combine, grid=ph * pw * k * k)
    if g["lanes_rowstore"] and epilogue is not None and costly_plane_epilogue(epilogue):
        g = dict(g, lanes_rowstore=False)  # (its calls would run on pieces of rows)
    nv = ctx.fresh("n")
    segments = lanes.row_segments(g) if pool is None else None
    if segments is not None:  # no tap reads padding: an unpadded, channel-blocked copy
        g = dict(g, hp=g["h"], wp=g["w"], cb=lanes.pack_channels(g))
    if pool is None:
        pix, fill = _pixel_offsets(ctx, g)
    else:  # (the windows in classes, each class's tiles running only its taps)
        pix, fill, g = _pool_tables(ctx, g)
    size = g["cin"] * g["hp"] * g["wp"]
    macs = g["o"] * g["c"] * g["kh"] * g["kw"] * g["grid"]
    by_image = g["n"] > 1 and g["n"] * macs >= BATCH_PARALLEL_MIN_MACS and \
        (not g["parallel"] or g["n"] >= BATCH_PARALLEL_MIN_IMAGES)
    if segments is not None:
        one = dict(g, parallel=False) if by_image else g
        xp = decl_buffer((size,), "float32", "xpack") if by_image else \
            ctx.temp((size,), "float32", "xpack")
        body = S.SeqStmt([_pack(ctx, one, xp, x, nv),
                          _row_tiles(ctx, one, xp, wp, out, nv, epilogue, pix, segments)])
        if by_image:
            body = S.Allocate(xp.data, "float32", [size], True, S.DeclBuffer(xp, body))
        kind = S.ForKind.PARALLEL if by_image else S.ForKind.SERIAL
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], kind, body)])
    if g["lanes_direct"]:  # no padded copy: each class of pixels runs its own taps
        pix, fill, g = _direct_tables(ctx, g)
        one = dict(g, parallel=False) if by_image else g
        kind = S.ForKind.PARALLEL if by_image else S.ForKind.SERIAL
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], kind, _tiles(
            ctx, one, ctx.flat_view(x), wp, out, nv, epilogue, pix))])
    if by_image:
        one = dict(g, parallel=False)  # the loops inside one image stay on its thread
        xp = decl_buffer((size,), "float32", "xpad")
        body = S.SeqStmt([_pad(ctx, one, xp, x, nv), _tiles(ctx, one, xp, wp, out, nv,
                                                             epilogue, pix)])
        body = S.Allocate(xp.data, "float32", [size], True, S.DeclBuffer(xp, body))
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], S.ForKind.PARALLEL, body)])
    xp = ctx.temp((size,), "float32", "xpad")
    body = S.SeqStmt([_pad(ctx, g, xp, x, nv), _tiles(ctx, g, xp, wp, out, nv, epilogue, pix)])
    return S.SeqStmt([fill, S.For(nv, 0, g["n"], S.ForKind.SERIAL, body)])


def pack_at_run_time(ctx, t, w):
    """(statement, buffer): conv ``t``'s weight ``w`` (``[O, C, KH, KW]``, computed in the
    graph: a hypernetwork's dynamic conv) packed per call into ``packed_weight``'s layout
    ``[O/16, C, KH, KW, 16]`` (zeros past the real output channels), so that a grouped conv
    of a computed weight runs each group as a dense conv on channel lanes as a constant one
    does. The copy is the weight's size, small beside the conv (2 groups of 32 at 32x32: 18 K
    floats for 19 M multiply-adds)."""
    g = lanes.geometry(t)
    shape = (g["o"] // lanes.LANES, g["c"], g["kh"], g["kw"], lanes.LANES)
    wp = ctx.temp(shape, "float32", "cl_wpack")
    ob, ci, ky, kx, ll = (ctx.fresh(n) for n in ("wo", "wc", "wy", "wx", "wl"))
    o = ob * lanes.LANES + ll
    value = w[o, ci, ky, kx]
    if g["real_o"] != g["o"]:  # (the zero channels of the last tile, or of each group's)
        og, real = g["og"], g["real_og"]
        gi, local = E.FloorDiv(o, og), E.FloorMod(o, og)
        value = E.Select(E.LT(local, real), w[gi * real + E.Min(local, real - 1), ci, ky, kx],
                         E.FloatImm("float32", 0.0))
    body = S.For(ll, 0, lanes.LANES, S.ForKind.SERIAL, S.BufferStore(wp, value,
                                                                     [ob, ci, ky, kx, ll]))
    for v, n in ((kx, g["kw"]), (ky, g["kh"]), (ci, g["c"]), (ob, shape[0])):
        body = S.For(v, 0, n, S.ForKind.SERIAL, body)
    return body, wp


def _pixel_offsets(ctx, g):
    """(table, fill): ``table[p]``, the padded-input offset of output pixel ``p`` at tap (0, 0)
    of channel 0 (in ``_pack``'s copy for ``row_segments``' tiles), filled once per call so
    that a pixel tile loads its pixels' offsets rather than dividing by the row width for each
    (the tile's setup runs once per channel block)."""
    pix = ctx.temp((g["grid"],), "int32", "cl_pix")
    p = ctx.fresh("pp")
    at = E.FloorDiv(p, g["ow"]) * (g["sh"] * g["wp"]) + E.FloorMod(p, g["ow"]) * g["sw"]
    if g.get("cb"):  # (into ``_pack``'s unpadded copy: negative where tap (0, 0) is)
        at = (at - (g["pt"] * g["wp"] + g["pl"])) * g["cb"]
    return pix, S.For(p, 0, g["grid"], S.ForKind.SERIAL, S.BufferStore(pix, at, [p]))


def _pool_tables(ctx, g):
    """(table, fill, geometry) of a conv pooling ``k x k`` windows in its tiles (``g["pool"]``,
    over the padded copy): the windows in classes (``conv_lanes.pool_classes``: those whose
    pixels together read input through the same filter rows and columns), each class's windows
    row by row, each window's ``k*k`` pixels row by row; ``table[s]`` the padded-input offset
    of the pixel at slot ``s``, the geometry's ``pool_out[w]`` the pooled offset ``py * pw +
    px`` of the window at window slot ``w`` and ``classes`` its tiles of whole windows
    (``conv_lanes.pool_tiles``), which skip the taps that read only padding for all their
    pixels."""
    k, _, pw = g["pool"]
    taps = k * k
    pix = ctx.temp((g["grid"],), "int32", "cl_pix")
    pout = ctx.temp((g["grid"] // taps,), "int32", "cl_pout")
    fills, groups, base = [], [], 0
    for r0, nr, c0, nc, ky, kx in lanes.pool_classes(g):
        a, b, r = ctx.fresh("pa"), ctx.fresh("pb"), ctx.fresh("pr")
        py, px, win = a + r0, b + c0, base + a * nc + b
        oy, ox = lanes.window_pixel(g, py, px, r)
        at = oy * (g["sh"] * g["wp"]) + ox * g["sw"]
        fills.append(S.For(a, 0, nr, S.ForKind.SERIAL, S.For(b, 0, nc, S.ForKind.SERIAL, S.SeqStmt([
            S.BufferStore(pout, py * pw + px, [win]),
            S.For(r, 0, taps, S.ForKind.SERIAL, S.BufferStore(pix, at, [win * taps + r]))]))))
        groups += [(base * taps + f, p, m, ky, kx, False) for f, p, m in lanes.pool_tiles(g, nr * nc)]
        base += nr * nc
    return pix, S.SeqStmt(fills), dict(g, pool_out=pout, classes=groups)


def _direct_tables(ctx, g):
    """(table, fill, geometry) for the tiles reading the input itself (``lanes_direct``): the
    pixels ordered class by class (``pixel_classes``), each class's rows in turn; ``table[s]``
    the input offset of the pixel at slot ``s`` at tap (0, 0) of channel 0 (outside the plane
    where that tap reads padding: its class never runs it), the geometry's ``out_pix[s]`` its
    output offset ``oy * ow + ox`` and ``classes`` its tiles, ``(first slot, pixels, tiles,
    filter rows, filter columns, in rows)`` (6s and 5s, or the fewest even tiles of a small
    class).

    With ``lanes_rowstore`` a class of at least ``ROW_STORE_MIN_COLUMNS`` columns has its rows
    cut in ``even_tiles`` instead, each size of them a group whose slots list those tiles row
    by row (the ``in rows`` flag: every tile's pixels are consecutive in one output row)."""
    pix = ctx.temp((g["grid"],), "int32", "cl_pix")
    opix = ctx.temp((g["grid"],), "int32", "cl_opix")
    fills, groups, base = [], [], 0

    def fill(r0, nr, c0, nc, base):  # the slots of rows r0.. x columns c0.., row by row
        a, b = ctx.fresh("pa"), ctx.fresh("pb")
        oy, ox, slot = a + r0, b + c0, base + a * nc + b
        at = (oy * g["sh"] - g["pt"]) * g["w"] + ox * g["sw"] - g["pl"]
        return S.For(a, 0, nr, S.ForKind.SERIAL, S.For(b, 0, nc, S.ForKind.SERIAL, S.SeqStmt([
            S.BufferStore(pix, at, [slot]), S.BufferStore(opix, oy * g["ow"] + ox, [slot])])))

    for r0, nr, c0, nc, ky, kx in lanes.pixel_classes(g):
        if g.get("lanes_rowstore") and lanes.width(g) == lanes.LANES and nc >= lanes.ROW_STORE_MIN_COLUMNS:
            for f, pixels, m in lanes.even_tiles(nc, lanes.row_tile_pixels(g, nc)):
                fills.append(fill(r0, nr, c0 + f, pixels * m, base))
                groups.append((base, pixels, nr * m, ky, kx, True))
                base += nr * pixels * m
            continue
        fills.append(fill(r0, nr, c0, nc, base))
        groups += [(base + f, pixels, m, ky, kx, False)
                   for f, pixels, m in lanes.plane_tiles(g, nr * nc)]
        base += nr * nc
    return pix, S.SeqStmt(fills), dict(g, out_pix=opix, classes=groups)


def _groups(g) -> list[tuple]:
    """The pixel tiles as groups ``(first, pixels, tiles, filter rows, filter columns, in
    rows)``: the classes' (``lanes_direct``) or, over the padded copy, ``pixel_tiles`` of the
    plane (the filter ranges None: every tap; tiles crossing rows)."""
    if "classes" in g:
        return g["classes"]
    return [(f, p, m, None, None, False) for f, p, m in lanes.plane_tiles(g, g["grid"])]


def _pack(ctx, g, xp, x, nv) -> S.Stmt:
    """``xp[c // cb, i, j, c % cb] = x[n, c, i, j]``: the input in blocks of ``cb`` channels
    (``pack_channels``), so that a tile's taps over consecutive channels read consecutive
    floats, one cache line a pixel, rather than ``cb`` planes whose rows alias in L1 (planes of
    32x32 floats are 4 KB apart)."""
    cb, h, w = g["cb"], g["h"], g["w"]
    r, j, k = ctx.fresh("pr"), ctx.fresh("pj"), ctx.fresh("pc")
    blk, i = E.FloorDiv(r, h), E.FloorMod(r, h)
    body = S.For(j, 0, w, S.ForKind.SERIAL, S.For(k, 0, cb, S.ForKind.UNROLLED, S.BufferStore(
        xp, x[nv, blk * cb + k, i, j], [(r * w + j) * cb + k])))
    rows = g["cin"] // cb * h
    kind = S.ForKind.PARALLEL if g["parallel"] and rows * w * cb >= (1 << 15) else \
        S.ForKind.SERIAL
    return S.For(r, 0, rows, kind, body)


def _pad(ctx, g, xp, x, nv) -> S.Stmt:
    """``xp[c, i, j] = x_padded[n, c, i, j]`` for the ``hp x wp`` padded rows and columns the
    taps read: vector copies between zero columns, or zeros for a padding row."""
    hp, wp, pl, w = g["hp"], g["wp"], g["pl"], g["w"]
    lanes = _lanes("float32")
    r = ctx.fresh("pr")
    c, i = E.FloorDiv(r, hp), E.FloorMod(r, hp)
    iy = i - g["pt"]
    zero = E.FloatImm("float32", 0.0)

    def put(j0, count, value):
        return _vector_inner(ctx, count, lanes, lambda j: S.BufferStore(
            xp, value(j0 + j), [r * wp + j0 + j]))

    j0 = min(wp, pl)
    j1 = min(wp, max(j0, pl + w))  # one past the last column inside the input
    parts = [put(0, j0, lambda j: zero)] if j0 else []
    if j1 > j0:
        parts.append(put(j0, j1 - j0, lambda j: x[nv, c, iy, j - pl]))
    if wp > j1:
        parts.append(put(j1, wp - j1, lambda j: zero))
    row = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
    body = S.IfThenElse(E.And(iy >= 0, iy < g["h"]), row, put(0, wp, lambda j: zero))
    rows = g["cin"] * hp
    kind = S.ForKind.PARALLEL if g["parallel"] and rows * wp >= (1 << 15) else S.ForKind.SERIAL
    return S.For(r, 0, rows, kind, body)


def _row_tiles(ctx, g, xp, wp, out, nv, epilogue, pix, segments) -> S.Stmt:
    """The tiles of a plane whose columns trim filter columns (``row_segments``): each output
    row is cut into its runs' tiles (``even_tiles``), so a tile runs only its run's filter
    columns, and the filter rows of its one row (``tap_rows``): no tap reads padding, and ``xp``
    is the unpadded channel-blocked copy (``_pack``). Bands of output rows x tiles of 16 output
    channels are the outer (parallel) loop, band-major in the "bands" order; inside one, blocks
    of input channels (``channel_block``) over the band's tiles, their partial sums in a scratch
    between blocks, as in ``_tiles``."""
    groups = [(c0 + f, pixels, m, lo, hi) for c0, cols, lo, hi in segments
              for f, pixels, m in lanes.even_tiles(cols, lanes.tile_pixels(g))]
    per_row = sum(m for _, _, m, _, _ in groups)
    rows = max(1, lanes.band_tiles(g) // per_row)
    nbands = -(-g["oh"] // rows)
    rows = -(-g["oh"] // nbands)  # (the bands as even as the rows allow)
    obs, kc = g["o"] // lanes.width(g), lanes.channel_block(g)
    dims = [nbands, obs] if g["lanes_order"] == "bands" else [obs, nbands]

    def one(idx):
        b, ob = idx if g["lanes_order"] == "bands" else idx[::-1]
        sums = decl_buffer((rows * per_row * lanes.tile_pixels(g) * lanes.width(g),), "float32", "cl_sums") \
            if kc < g["c"] else None
        kb = None if sums is None else ctx.fresh("kb")
        parts, slot = [], 0
        for first, pixels, m, lo, hi in groups:
            kk = ctx.fresh("pk")
            oy = b * rows + E.FloorDiv(kk, m) if m > 1 else b * rows + kk
            p0 = oy * g["ow"] + (first + E.FloorMod(kk, m) * pixels if m > 1 else first)
            blk = None if kb is None else (kb, kc, g["c"] // kc, sums, slot + kk * pixels)
            tile = emit_tile(ctx, g, xp, wp, out, nv, pix, ob, p0, pixels, epilogue, blk, (lo, hi))
            if nbands * rows != g["oh"]:
                tile = S.IfThenElse(oy < g["oh"], tile)
            parts.append(S.For(kk, 0, rows * m, S.ForKind.SERIAL, tile))
            slot += rows * m * pixels
        body = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
        if kb is not None:
            body = S.For(kb, 0, g["c"] // kc, S.ForKind.SERIAL, body)
        return body if sums is None else _allocated(sums, body)

    return _outer_loops(ctx, dims, g["parallel"], one)


def _tiles(ctx, g, xp, wp, out, nv, epilogue, pix) -> S.Stmt:
    """Channel tiles x pixel tiles, the channel tiles outer; inside one, bands of pixel tiles
    x blocks of input channels (``channel_block``). On the thread pool the pixel tiles are
    also cut in a few parts when there are fewer than ``PARALLEL_PARTS`` channel tiles, so that
    a conv of 16 or 32 output channels still splits. The "bands" order (``lanes_order``) runs
    ``_bands_outer`` instead: on a Zen 2 it measured within the noise of this one at 56x56; on
    a Zen 3 at two threads, with the filter columns as a loop, 17% faster at 56x56 and 10% at
    28x28 (with them unrolled, within 2%)."""
    if g["lanes_order"] == "bands":
        return _bands_outer(ctx, g, xp, wp, out, nv, epilogue, pix)
    obs = g["o"] // lanes.width(g)
    groups = _groups(g)
    parts = 1
    if g["parallel"] and obs < g["lanes_parts"]:
        parts = max(1, min(-(-g["lanes_parts"] // obs), groups[0][2]))

    kc = lanes.channel_block(g)
    band = lanes.band_tiles(g)

    def run(ob, first, pixels, lo, count, sums, ky, kx, row):
        """Tiles ``lo .. lo+count`` of a group, in bands over the channel blocks (or, with
        one block, in turn)."""
        k = ctx.fresh("pt")
        if kc == g["c"]:
            return S.For(k, lo, count, S.ForKind.SERIAL, emit_tile(
                ctx, g, xp, wp, out, nv, pix, ob, first + k * pixels, pixels, epilogue,
                kx_range=kx, ky_range=ky, row=row))
        b, kb, kk = ctx.fresh("band"), ctx.fresh("kb"), ctx.fresh("pk")
        tile = emit_tile(ctx, g, xp, wp, out, nv, pix, ob, first + (lo + b * band + kk) * pixels,
                     pixels, epilogue, (kb, kc, g["c"] // kc, sums, kk * pixels), kx, ky,
                     row)
        static = isinstance(count, int)
        if not static or count % band:
            tile = S.IfThenElse(b * band + kk < count, tile)
        bands = -(-count // band) if static else E.FloorDiv(count + (band - 1), band)
        return S.For(b, 0, bands, S.ForKind.SERIAL, S.For(
            kb, 0, g["c"] // kc, S.ForKind.SERIAL, S.For(kk, 0, band, S.ForKind.SERIAL, tile)))

    def over_pixels(idx):
        part, ob = idx
        sums = _sums_scratch(g, band) if kc < g["c"] else None
        out_parts = []
        for gi, (first, pixels, count, ky, kx, row) in enumerate(groups):
            if gi == 0 and parts > 1:  # this part's share of the first group's tiles
                lo = E.FloorDiv(part * count, parts)
                hi = E.FloorDiv((part + 1) * count, parts)
                loop = run(ob, first, pixels, lo, hi - lo, sums, ky, kx, row)
            else:
                loop = run(ob, first, pixels, 0, count, sums, ky, kx, row)
                if parts > 1:  # the other groups go with the last part
                    loop = S.IfThenElse(E.EQ(part, parts - 1), loop)
            out_parts.append(loop)
        body = out_parts[0] if len(out_parts) == 1 else S.SeqStmt(out_parts)
        return body if sums is None else _allocated(sums, body)

    return _outer_loops(ctx, [parts, obs], g["parallel"], over_pixels)


def _sums_scratch(g, band: int):
    """The partial sums of a band of ``band`` pixel tiles between blocks of input channels,
    room for the geometry's largest tile (a row tile of ``lanes_rowstore`` may hold
    ``ROW_TILE_SLACK`` pixels more than ``tile_pixels``)."""
    most = max(pixels for _, pixels, *_ in _groups(g))
    return decl_buffer((band * max(most, lanes.tile_pixels(g)) * lanes.width(g),), "float32", "cl_sums")


def _bands_outer(ctx, g, xp, wp, out, nv, epilogue, pix) -> S.Stmt:
    """The "bands" order: bands of pixel tiles outermost (the parallel loop), each running every
    channel tile (and block of input channels) over its pixels, so that a band's input rows are
    read from memory once and stay in L2 while the weights, re-read by every band, come from L2
    too; the few 5-pixel tiles at the end then run per channel tile."""
    obs = g["o"] // lanes.width(g)
    (first, pixels, count, ky, kx, row), *rest = _groups(g)
    kc = lanes.channel_block(g)
    nbands, band = lanes.band_split(g, count)
    solo = lanes.band_split(dict(g, parallel=False), count)  # (on one thread: SOLO_BANDS)
    most = max(band, solo[1])
    uneven = nbands * band != count or solo[0] * solo[1] != count

    def one_band(idx, band=band):
        b, ob, kk = idx[0], ctx.fresh("ob"), ctx.fresh("pk")
        sums = _sums_scratch(g, most) if kc < g["c"] else None
        kb = None if sums is None else ctx.fresh("kb")
        tile = emit_tile(ctx, g, xp, wp, out, nv, pix, ob, first + (b * band + kk) * pixels, pixels,
                     epilogue, None if kb is None else (kb, kc, g["c"] // kc, sums, kk * pixels),
                     kx, ky, row)
        if uneven:
            tile = S.IfThenElse(b * band + kk < count, tile)
        body = S.For(kk, 0, band, S.ForKind.SERIAL, tile)
        if kb is not None:
            body = S.For(kb, 0, g["c"] // kc, S.ForKind.SERIAL, body)
        body = S.For(ob, 0, obs, S.ForKind.SERIAL, body)
        return body if sums is None else _allocated(sums, body)

    if g["parallel"] and SOLO_BANDS and solo != (nbands, band):
        # the split at run time: on one thread (a pool of one, or an image of a batch whose
        # images are on the pool) the serial split's larger bands, each weight block serving
        # more pixel tiles; on the pool ``lanes_parts`` shares
        alone = E.LE(num_threads(), E.IntImm("int32", 1))
        nb, bv, b = ctx.fresh("nbands"), ctx.fresh("band"), ctx.fresh("b")
        loop = S.For(b, 0, nb, S.ForKind.PARALLEL, one_band([b], bv))
        parts = [S.LetStmt(nb, E.Select(alone, E.IntImm("int32", solo[0]),
                                        E.IntImm("int32", nbands)),
                           S.LetStmt(bv, E.Select(alone, E.IntImm("int32", solo[1]),
                                                  E.IntImm("int32", band)), loop))]
    else:
        parts = [_outer_loops(ctx, [nbands], g["parallel"], one_band)]
    for first2, pixels2, count2, ky2, kx2, row2 in rest:
        def tail(idx, first2=first2, pixels2=pixels2, count2=count2, ky2=ky2, kx2=kx2,
                 row2=row2):
            k = ctx.fresh("pt")
            return S.For(k, 0, count2, S.ForKind.SERIAL, emit_tile(
                ctx, g, xp, wp, out, nv, pix, idx[0], first2 + k * pixels2, pixels2, epilogue,
                kx_range=kx2, ky_range=ky2, row=row2))
        parts.append(_outer_loops(ctx, [obs], g["parallel"], tail))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)
