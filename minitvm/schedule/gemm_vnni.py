"""Integer matrix products of uint8 rows and an int8 weight summed in int32 (a quantized model's
``nn.dense`` / ``matmul`` with ``out_dtype`` int32) on AVX-512 VNNI: ``vpdpbusd`` multiplies 4
unsigned by 4 signed bytes and adds the 4 products to an int32 lane (``tir.dot_u8s8x4``,
``codegen/llvm/dot.py``), 64 multiply-adds an instruction where a float32 FMA does 16.

The weight is packed at build time as ``[ceil(N/16), ceil(K/4), 16, 4]`` int8 (``PackWeight``):
one 64-byte vector holds 4 consecutive reduction indices of 16 output columns, read as 16
int32. The rows are read as int32 words, 4 reduction indices of one row each, which a tile
broadcasts to every lane: straight from the input when K is a multiple of 4, else from a copy
whose rows are padded with zero bytes (``_pack_rows``). Columns past N are zero in the packed
weight and never stored.

A tile is up to ``ROWS`` rows x ``width`` columns (16, 32 or 64: one to four vectors), one
accumulator vector per row and vector; the fused elementwise epilogue (zero-point correction,
requantization) is applied in the tile's store. Only where the host has AVX-512 VNNI
(``conv_vnni.available``); elsewhere the importers keep their exact float32 products. A weight
not known at build time is packed by the kernel (``_pack_weight``).

A ``batch_matmul`` (both operands 8-bit activations: a quantized transformer's Q @ K^T and
P @ V) is the same product once per batch: the rows of all batches are one matrix (A is
contiguous), and each batch's B is packed into a temporary before its tiles run, a word at a
time (``_pack_batch_words``: K a multiple of 4), else byte by byte.

dense / matmul of int16 rows and an int16 or int8 weight (a 16x8 model's FULLY_CONNECTED) run
the same tiles on words of two int16 (``conv_vnni.PAIRS``: ``vpdpwssd``, or ``vpmaddwd``
without VNNI), the weight packed as ``[ceil(N/16), ceil(K/2), 16, 2]`` int16 (an int8 one
sign-extended, its packed int16 seen as bytes). On AVX2 without VNNI uint8 rows run so too
(``conv_vnni.BYTE_PAIRS``): the rows copied into int16 pairs (``_pack_rows``), the weight
packed as ``[ceil(N/16), ceil(K/2), 16, 2]`` int8 and sign-extended as it is loaded
(``vpmovsxbw``: half the bytes of int16 pairs), ``vpmaddwd`` doing twice a float32 FMA's
multiply-adds there. An AVX2 tile is one 16-lane vector (two ymm)
x ``AVX2_ROWS`` rows: 12 accumulators, the weight's two halves and the broadcast word in the
16 ymm registers (AVX-512's tiles, up to 4 vectors x 5 rows, spilled there: the 128 x 1024 x
256 int16 dense took 0.64 ms, 0.45 with this tile; float32 0.79, one thread, Zen 3)."""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from . import conv_vnni
from .common import dims_of, emit_with_epilogue, epilogue_value, unravel, vector_isa
from .common import outer_loops as _outer_loops
from .conv_lanes import even_tiles
from .conv_vnni import GROUP, LANES, packed_words, word_bytes

# rows of a tile per vectors of its width: 24 (6 x 4) or 16 accumulators of the 32 zmm, the
# rest for the weight vectors and the broadcast row words
ROWS = {1: 8, 2: 6, 4: 5}
PACK_LANES = 8  # (words of uint8 rows a vector as ``_pack_byte_pairs`` copies them)
AVX2_ROWS = 6  # (rows of an AVX2 tile: see the module docstring)
PARALLEL_MIN_MACS = 1 << 21  # (as conv_lanes': below it one thread's column tiles)


def geometry(t) -> dict | None:
    """Sizes of dense / matmul / batch_matmul stage ``t`` when this schedule takes it: uint8
    rows and an int8 weight, or (not a batch_matmul) int16 rows and an int16 or int8 weight
    (``words``) (``[N, K]`` for dense and a transposed matmul, ``[K, N]`` otherwise;
    a batch_matmul's with the same leading batch axes as A and the output), int32 output,
    static shapes, A not transposed and (but for batch_matmul) B a matrix; else None.
    ``batch`` is the number of products (1 but for a batch_matmul, whose ``batch_dims`` are
    its batch axes), ``m`` the rows of each."""
    tag = t.op.tag
    if tag not in ("dense", "matmul", "batch_matmul"):
        return None
    a, w = t.op.attrs["operands"]
    words = conv_vnni.row_words(a.dtype)
    if words is None or w.dtype not in words.weights or t.dtype != "int32" or \
            (tag == "batch_matmul" and words is not conv_vnni.BYTES):
        return None
    if tag != "dense" and (t.op.attrs["transpose_a"] or len(a.shape) != len(t.shape)):
        return None
    sa, sw, so = dims_of(a), dims_of(w), dims_of(t)
    if not all(isinstance(d, int) for d in (*sa, *sw, *so)) or len(so) < 1:
        return None
    batch, batch_dims = 1, []
    if tag == "batch_matmul":  # (no broadcast batch: each batch's B is its own)
        if len(sa) < 3 or len(sw) != len(sa) or sa[:-2] != sw[:-2] or so[:-2] != sa[:-2]:
            return None
        batch, batch_dims, sw = int(np.prod(sa[:-2])), list(sa[:-2]), sw[-2:]
    if len(sw) != 2:
        return None
    tb = True if tag == "dense" else bool(t.op.attrs["transpose_b"])
    n, k = (sw[0], sw[1]) if tb else (sw[1], sw[0])
    m = (int(np.prod(sa[:-1])) if len(sa) > 1 else 1) // batch
    if sa[-1] != k or so[-1] != n or m < 1 or n < 1 or k < 1:
        return None
    blocks = -(-n // LANES)
    vecs = 4 if blocks % 4 == 0 else 2 if blocks % 2 == 0 else 1
    if vector_isa() != "avx512":
        vecs = 1
    return dict(words=words, wdtype=w.dtype, m=m, n=n, k=k, k4=-(-k // words.per_word),
                blocks=blocks, tb=tb, vecs=vecs,
                lead=list(so[:-1]), batch=batch, batch_dims=batch_dims,
                parallel=m * n * k >= PARALLEL_MIN_MACS)


def supported(t, options=None) -> bool:
    """Does this schedule take stage ``t`` (the host has VNNI, generated dense allowed)?"""
    g = geometry(t) if options is None or options.generated_dense else None
    return g is not None and (conv_vnni.available() if g["words"] is conv_vnni.BYTES else
                              conv_vnni.pairs_available())


class PackWeight:
    """Picklable numpy transform of a weight (``[N, K]`` when ``transpose_b``, else ``[K,
    N]``) to ``[ceil(N/16), ceil(K/4), 16, 4]`` int8 (zero past N and K; of int16 rows
    (``words``): ``[ceil(N/16), ceil(K/2), 16, 2]`` int16, seen as the weight's ``dtype``; of
    ``BYTE_PAIRS``: ``[ceil(N/16), ceil(K/2), 16, 2]`` int8);
    a constant batch_matmul weight (leading batch axes) batch by batch, the packed ones
    stacked."""

    def __init__(self, n: int, k: int, transpose_b: bool, words: str = "uint8",
                 dtype: str = "int8"):
        self.n, self.k, self.transpose_b = n, k, transpose_b
        self.words, self.dtype = words, dtype

    def __call__(self, w):
        kind = conv_vnni.KINDS[self.words]
        per, el = kind.per_word, kind.element
        w = np.asarray(w).astype(el)
        if w.ndim > 2:
            return np.stack([self(b) for b in w.reshape(-1, *w.shape[-2:])])
        w = w if self.transpose_b else w.T
        blocks, k4 = -(-self.n // LANES), -(-self.k // per)
        full = np.zeros((blocks * LANES, k4 * per), el)
        full[:self.n, :self.k] = w
        return np.ascontiguousarray(full.reshape(blocks, LANES, k4, per).transpose(
            0, 2, 1, 3)).view(self.dtype)


def packed_shape(g) -> tuple[int, ...]:
    one = (g["blocks"], g["k4"], LANES, conv_vnni.lane_values(g))
    return (g["batch"], *one) if g["batch_dims"] else one


def packed_weight(t) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of stage ``t``'s constant weight."""
    g = geometry(t)
    if g is None:
        raise ValueError(f"gemm_vnni.packed_weight: stage {t.name!r} is not an int8 product "
                         "this schedule takes")
    return packed_shape(g), PackWeight(g["n"], g["k"], g["tb"], conv_vnni.kind_name(g["words"]),
                                       g["wdtype"])


def emit(ctx, t, out, bodies) -> S.Stmt:
    """The rule's emit (``lower.RULES``): the product ``t`` into ``out``, its fused elementwise
    epilogue applied in the stores."""
    a, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    g = geometry(t)

    def run(dst, epi):
        f = None if epi is None else (lambda idx, val: epilogue_value(epi, dst, idx, val))
        return gemm(ctx, g, dst, a, w, id(t) in ctx.packed, f)

    return emit_with_epilogue(ctx, t, out, bodies, run, tuple(int(d) for d in t.shape))


def _i32(v: int) -> E.IntImm:
    return E.IntImm("int32", v)


def gemm(ctx, g, out, a, w, packed: bool, epilogue=None) -> S.Stmt:
    """Statements computing the product of geometry ``g`` into ``out`` from uint8 (int16) rows
    ``a`` and weight ``w`` (prepacked by ``PackWeight`` when ``packed``)."""
    from ..tir.buffer import decl_buffer

    parts = []
    rows = g["m"] * g["batch"]
    kind = g["words"]
    if g["k"] % kind.per_word == 0 and _zero_offset(a) and \
            word_bytes(a.dtype) * kind.per_word == 4:
        av = decl_buffer((rows * g["k4"],), "int32", a.name + "_i32", data=a.data)
        ctx.ws_views.append(av)
    else:  # (a row length not a multiple of 4: a copy with zero bytes past K)
        av = ctx.temp((rows * g["k4"],), "int32", "a_vnni")
        parts.append(_pack_rows(ctx, g, a, av))
    if g["batch_dims"]:
        parts.append(_batches(ctx, g, av, w, packed, out, epilogue))
        return parts[0] if len(parts) == 1 else S.SeqStmt(parts)
    shape = packed_shape(g) if packed else packed_shape(g)[:-1] + (kind.per_word,)
    wv = packed_words(ctx, w, shape, None if packed else
                      lambda wpk: _pack_weight(ctx, g, w, wpk), parts, kind)
    parts.append(_tiles(ctx, g, av, wv, out, epilogue))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _batches(ctx, g, av, w, packed: bool, out, epilogue) -> S.Stmt:
    """A batch_matmul: for each batch, its weight packed into a temporary (unless prepacked),
    then its row tiles (the rows of batch ``b`` are ``b * m ..`` of A and the output)."""
    from ..tir.buffer import decl_buffer

    one = (g["blocks"], g["k4"], LANES, GROUP)
    words = int(np.prod(one)) // GROUP
    bv = ctx.fresh("bt")
    if packed:
        wv = decl_buffer((words * g["batch"],), "int32", w.name + "_i32", data=w.data,
                         elem_offset=w.elem_offset)
        ctx.ws_views.append(wv)
        return S.For(bv, 0, g["batch"], S.ForKind.SERIAL, _tiles(
            ctx, g, av, wv, out, epilogue, row0=bv * g["m"], wbase=bv * words))
    wpk = ctx.temp(one, "int8", "w_vnni")
    wv = decl_buffer((words,), "int32", wpk.name + "_i32", data=wpk.data,
                     elem_offset=wpk.elem_offset)
    ctx.ws_views.append(wv)
    if g["k"] % GROUP == 0 and _zero_offset(w):
        wsrc = decl_buffer((g["batch"] * g["n"] * g["k"] // GROUP,), "int32", w.name + "_w32",
                           data=w.data)
        ctx.ws_views.append(wsrc)
        pack = _pack_batch_words(ctx, g, w, wsrc, wv, bv)
    else:
        pack = _pack_weight(ctx, g, w, wpk, bv)
    return S.For(bv, 0, g["batch"], S.ForKind.SERIAL, S.SeqStmt([
        pack, _tiles(ctx, g, av, wv, out, epilogue, row0=bv * g["m"])]))


def _pack_batch_words(ctx, g, w, wsrc, wv, bv) -> S.Stmt:
    """Batch ``bv``'s weight into ``wv`` (``PackWeight``'s layout as int32 words, zero past
    N), K a multiple of 4: a transposed B ``[N, K]`` is a transpose of its rows' words
    (``wsrc``, the weight seen as int32); a ``[K, N]`` one combines the bytes of 4 rows a
    word, 16 columns at once."""
    nb, c, ll = ctx.fresh("pn"), ctx.fresh("pk"), ctx.fresh("pl")
    n, k4 = g["n"], g["k4"]
    col = nb * LANES + ll
    inside = col < n
    colc = E.Min(col, _i32(n - 1))
    if g["tb"]:
        val = wsrc[(bv * n + colc) * k4 + c]
    else:
        lead = unravel(bv, g["batch_dims"])
        val = None
        for j in range(GROUP):
            b = E.Cast("int32", E.Cast("uint8", w[(*lead, c * GROUP + j, colc)]))
            if j:
                b = E.Call("int32", "tir.shift_left", [b, _i32(8 * j)])
            val = b if val is None else E.Call("int32", "tir.bitwise_or", [val, b])
    if n % LANES:
        val = E.Call("int32", "tir.if_then_else", [inside, val, _i32(0)])
    store = S.BufferStore(wv, val, [(nb * k4 + c) * LANES + ll])
    kind = S.ForKind.VECTORIZED if not g["tb"] else S.ForKind.SERIAL
    loops = S.For(ll, 0, LANES, kind, store)
    return S.For(nb, 0, g["blocks"], S.ForKind.SERIAL, S.For(c, 0, k4, S.ForKind.SERIAL, loops))


def _zero_offset(buf) -> bool:
    off = buf.elem_offset
    return off is None or (isinstance(off, E.IntImm) and off.value == 0)


def _flat(buf, row, col):
    """``buf[row, col]`` of a buffer whose leading axes flatten into the rows."""
    shape = dims_of(buf)
    if len(shape) == 2:
        return [row, col]
    return [*unravel(row, shape[:-1]), col]


def _pack_weight(ctx, g, w, wpk, bv=None) -> S.Stmt:
    """``wpk[nb, k4, l, j] = W[16*nb + l, per*k4 + j]`` (0 past N and K; ``per`` values a
    word, of the packed weight's dtype), W the weight as ``[N, K]`` (of batch ``bv`` for a
    batch_matmul)."""
    per, el = g["words"].per_word, g["words"].element
    nb, k4, ll, j = ctx.fresh("pn"), ctx.fresh("pk"), ctx.fresh("pl"), ctx.fresh("pj")
    col, red = nb * LANES + ll, k4 * per + j
    ci, ri = E.Min(col, _i32(g["n"] - 1)), E.Min(red, _i32(g["k"] - 1))
    lead = [] if bv is None else unravel(bv, g["batch_dims"])
    load = w[(*lead, ci, ri)] if g["tb"] else w[(*lead, ri, ci)]
    val = E.Call(el, "tir.if_then_else", [
        E.And(col < g["n"], red < g["k"]), load if load.dtype == el else E.Cast(el, load),
        E.IntImm(el, 0)])
    loops = S.BufferStore(wpk, val, [nb, k4, ll, j])
    for v, ext in ((j, per), (ll, LANES), (k4, g["k4"]), (nb, g["blocks"])):
        loops = S.For(v, 0, ext, S.ForKind.SERIAL, loops)
    return loops


def _pack_rows(ctx, g, a, av) -> S.Stmt:
    """``av[r * k4 + c]``: the int32 of row ``r``'s bytes ``4c .. 4c+3`` (int16 values ``2c,
    2c+1``, or uint8 ones zero-extended for ``BYTE_PAIRS``; zero past K)."""
    kind = g["words"]
    r, c = ctx.fresh("qr"), ctx.fresh("qc")
    if kind is conv_vnni.BYTE_PAIRS and g["k4"] % PACK_LANES == 0 and g["k"] % 2 == 0:
        return _pack_byte_pairs(ctx, g, a, av, r, c)
    word = None
    for j in range(kind.per_word):
        kk = c * kind.per_word + j
        b = E.Call("int32", "tir.if_then_else", [
            kk < g["k"], kind.part(a[tuple(_flat(a, r, E.Min(kk, _i32(g["k"] - 1))))], j),
            _i32(0)])
        word = b if word is None else E.Call("int32", "tir.bitwise_or", [word, b])
    store = S.BufferStore(av, word, [r * g["k4"] + c])
    return S.For(r, 0, g["m"] * g["batch"], S.ForKind.SERIAL, S.For(c, 0, g["k4"], S.ForKind.SERIAL, store))


def _pack_byte_pairs(ctx, g, a, av, r, c) -> S.Stmt:
    """``_pack_rows`` of ``BYTE_PAIRS`` rows of an even K, ``PACK_LANES`` words a vector (the
    rows' producer, fused, computed in vectors too)."""
    cv = ctx.fresh("qv")
    cc = c * PACK_LANES + cv
    word = None
    for j in range(2):
        b = g["words"].part(a[tuple(_flat(a, r, cc * 2 + j))], j)
        word = b if word is None else E.Call("int32", "tir.bitwise_or", [word, b])
    store = S.BufferStore(av, word, [r * g["k4"] + cc])
    inner = S.For(cv, 0, PACK_LANES, S.ForKind.VECTORIZED, store)
    return S.For(r, 0, g["m"] * g["batch"], S.ForKind.SERIAL,
                 S.For(c, 0, g["k4"] // PACK_LANES, S.ForKind.SERIAL, inner))


def _tiles(ctx, g, av, wv, out, epilogue, row0=None, wbase=None) -> S.Stmt:
    """Column tiles (the outer loop, parallel for a large product) x row tiles; the last
    column tile stores only the columns before N. ``row0``: the first row (a batch's), and
    ``wbase``: the first word of the packed weight (a prepacked batch's), 0 when None."""
    vecs = g["vecs"]
    width = vecs * LANES
    tiles = g["blocks"] // vecs
    groups = even_tiles(g["m"], ROWS[vecs] if vector_isa() == "avx512" else AVX2_ROWS)
    tail = g["n"] - (tiles - 1) * width  # (columns the last tile stores)

    def rows(cb, cols):
        loops = []
        for first, count_rows, count in groups:
            k = ctx.fresh("rt")
            r0 = first + k * count_rows
            loops.append(S.For(k, 0, count, S.ForKind.SERIAL, _tile(
                ctx, g, av, wv, out, cb, r0 if row0 is None else row0 + r0, count_rows, cols,
                epilogue, wbase)))
        return loops[0] if len(loops) == 1 else S.SeqStmt(loops)

    if tail == width:
        return _outer_loops(ctx, [tiles], g["parallel"], lambda idx: rows(idx[0], width))
    body = rows(_i32(tiles - 1), tail)
    if tiles > 1:
        body = S.SeqStmt([_outer_loops(ctx, [tiles - 1], g["parallel"],
                                       lambda idx: rows(idx[0], width)), body])
    return body


def _tile(ctx, g, av, wv, out, cb, r0, rows: int, cols: int, epilogue, wbase=None) -> S.Stmt:
    """Rows ``r0 .. r0+rows`` x columns ``cb*width ..`` (``cols`` of them stored): int32
    accumulators, one ``vpdpbusd`` per row and vector for each 4 reduction indices (one
    ``vpdpwssd`` for each 2 of int16 rows)."""
    from ..tir.buffer import decl_buffer

    vecs, k4 = g["vecs"], g["k4"]
    width = vecs * LANES
    acc = decl_buffer((rows, width), "int32", "vg_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody):
        v = ctx.fresh(name)
        return S.For(v, 0, extent, kind, fbody(v))

    init = loop("jj", rows, unroll, lambda jj: loop("ll", width, vec, lambda ll: S.BufferStore(
        acc, _i32(0), [jj, ll])))
    ro = ctx.fresh("ro")  # the first row's word offset

    def step(c):
        wo = ctx.fresh("wo")
        macs = [loop("ll", LANES, vec, lambda ll, jj=jj, v=v: S.BufferStore(acc, E.Call(
            "int32", g["words"].dot, [acc[jj, v * LANES + ll], av[ro + jj * k4 + c],
                           wv[wo + v * (k4 * LANES) + ll]]), [jj, v * LANES + ll]))
            for v in range(vecs) for jj in range(rows)]
        first = (cb * vecs * k4 + c) * LANES
        return S.LetStmt(wo, first if wbase is None else wbase + first, S.SeqStmt(macs))

    macs = loop("c", k4, S.ForKind.SERIAL, step)
    res = decl_buffer((rows, width), "int32", "vg_res")
    jp = ctx.fresh("jj")

    def put(ll):
        idx = _flat(out, r0 + jp, cb * width + ll)
        val = res[jp, ll] if epilogue is None else epilogue(idx, res[jp, ll])
        return S.BufferStore(out, val, idx)

    store = S.SeqStmt([
        loop("jj", rows, unroll, lambda jj: loop("ll", width, vec, lambda ll: S.BufferStore(
            res, acc[jj, ll], [jj, ll]))),
        S.For(jp, 0, rows, S.ForKind.SERIAL, loop(
            "ll", cols, vec if cols >= 4 else S.ForKind.SERIAL, put))])
    store = S.Allocate(res.data, "int32", [rows * width], True, S.DeclBuffer(res, store))
    body = S.DeclBuffer(acc, S.SeqStmt([init, macs, store]))
    body = S.Allocate(acc.data, "int32", [rows * width], True, body)
    return S.LetStmt(ro, r0 * k4, body)
