"""conv2d of uint8 data and an int8 weight summed in int32 (a quantized model's integer conv,
``out_dtype`` int32) on AVX-512 VNNI: ``vpdpbusd`` multiplies 4 unsigned by 4 signed bytes and
adds the 4 products to an int32 lane, 64 multiply-adds an instruction where a float32 FMA does
16 (``codegen/llvm/dot.py``, the TIR call ``tir.dot_u8s8x4``).

The layout follows ``conv_lanes``: a tile is 16 (or 32) output channels in the lanes x up to 6
output pixels, one accumulator vector each. The weight is packed at build time as
``[O/16][C/4][KH][KW][16][4]`` int8 (``PackWeight``): per tap, one 64-byte vector holds 4
consecutive input channels of 16 output channels, read as 16 int32. Output channels past the
last (a count not a multiple of 16: MobileNetV2's 24) are zero rows there, computed in the
lanes of the last tile but never stored. The input of one image is
copied once a call into ``[C/4][HP][WP]`` int32 (``_pack``): the 4 channels of one padded pixel
in the bytes of one int32, which the tile broadcasts to every lane. Channels past the last (a
count not a multiple of 4) are zero bytes in both; the conv's own padding is zero bytes (an
input with a nonzero zero point comes padded with it, by ``nn.pad``, from the importer).

Where the host has AVX-512 VNNI (``available``); on an AVX2 host without VNNI uint8 data runs
as int16 pairs (``BYTE_PAIRS``, ``row_words``: the bytes zero-extended as the input is packed,
the weight's bytes sign-extended as they are loaded, ``vpmaddwd``; the pixel-lanes tiles' weight
sign-extended as it is packed: ``WIDE_BYTE_PAIRS``), in AVX2-sized pixel tiles
(``AVX2_PIXEL_TILE``); elsewhere the importers keep their float32 convs. A weight not known at
build time is packed by the kernel (``_pack_weight``).

The same kernels take int16 data with an int16 or int8 weight (a 16x8 model's int16
activations): their words hold 2 int16 values, not 4 bytes (``Words``: ``PAIRS``), multiplied
pairwise by ``vpdpwssd`` (``tir.dot_s16s16x2``; ``vpmaddwd`` + add without VNNI, on AVX-512BW
or AVX2: ``pairs_available``), an int8 weight sign-extended to int16 as it is packed."""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import post_order, substitute, transform_expr
from .common import outer_loops as _outer_loops
from .common import prefetch, static_conv2d_nchw_dims, vector_isa
from .conv_lanes import PARALLEL_MIN_MACS, SIXES_MIN, even_tiles, pixel_tiles

LANES = 16  # output channels a vector (16 int32)
GROUP = 4  # input channels an int32 lane holds (of uint8 data; 2 of int16: ``Words``)
# output channels of a tile (two zmm accumulators a pixel where they divide the channels: each
# broadcast input value serves two vpdpbusd)
WIDTH = 32
PIXELS = 6  # pixels of a tile (5 or 6: ``conv_lanes.pixel_tiles``), fewer on small planes
DOT = "tir.dot_u8s8x4"


class Words:
    """What the int32 words a dot instruction reads hold: ``per_word`` values of ``data`` (the
    input's dtype, ``unsigned`` its bits read as unsigned) and of ``element`` (the packed
    weight's; a weight of any of ``weights`` is converted to it as it is packed), multiplied
    and summed into an int32 lane by ``dot``."""

    __slots__ = ("data", "weights", "element", "per_word", "unsigned", "dot")

    def __init__(self, data: str, weights: tuple, element: str, per_word: int, unsigned: str,
                 dot: str):
        self.data, self.weights, self.element = data, weights, element
        self.per_word, self.unsigned, self.dot = per_word, unsigned, dot

    @property
    def lane(self) -> str:
        """The dtype of one lane of the packed weight as the dot reads it: an int32 word of
        ``per_word`` values of ``element``, or (``BYTE_PAIRS``: int8 pairs) an int16."""
        return f"int{8 * self.per_word * word_bytes(self.element)}"

    def part(self, value, k: int) -> E.PrimExpr:
        """Data ``value`` as the int32 holding it in part ``k`` of a word (others zero)."""
        v = E.Cast("int32", value if value.dtype == self.unsigned else
                   E.Cast(self.unsigned, value))
        if not k:
            return v
        return E.Call("int32", "tir.shift_left", [v, _i32(32 // self.per_word * k)])


BYTES = Words("uint8", ("int8",), "int8", GROUP, "uint8", DOT)  # vpdpbusd
PAIRS = Words("int16", ("int16", "int8"), "int16", 2, "uint16", "tir.dot_s16s16x2")  # vpdpwssd
WORDS = {w.data: w for w in (BYTES, PAIRS)}
# uint8 data zero-extended into int16 pairs, the int8 weight kept as bytes (two a lane: an
# int16) and sign-extended as the dot loads it (``tir.dot_s16s8x2``: ``vpmovsxbw`` from memory
# + ``vpmaddwd``): how ``gemm_vnni`` and the channel-lanes tiles run a uint8 x int8 product on
# AVX2 without VNNI (``row_words``). A weight packed as int16 pairs read twice the bytes, and a
# product of few rows is bound by them: Zen 3, one thread, + requantize, MobileNetV2 w1's
# 1280 -> 1000 dense of one row in the model (its weight out of cache) 188 -> 91 us (ORT 84-126),
# alone 61-81 -> 53; 3x3 convs within the noise.
BYTE_PAIRS = Words("uint8", ("int8",), "int8", 2, "uint8", "tir.dot_s16s8x2")
# ``BYTE_PAIRS`` with the weight packed as int16 pairs (sign-extended as it is packed): the
# form of the pixel-lanes tiles (``pixel_lanes``), whose weight lane is one word broadcast to
# the tile's pixels, a ``vpbroadcastd`` load; of int8 pairs it took a ``vpbroadcastw`` and a
# ``vpmovsxbw`` for each output channel and input word, on the tile's critical port. Zen 3, one
# thread, + requantize to uint8, us, int16 -> int8 pairs: 16 -> 96 at 56x56 155 -> 184, 24 ->
# 144 at 28x28 70 -> 87, 144 -> 24 at 28x28 54 -> 76, 960 -> 320 at 4x4 80 -> 111.
WIDE_BYTE_PAIRS = Words("uint8", ("int8",), "int16", 2, "uint8", "tir.dot_s16s16x2")
# (PackWeight's ``words`` names its kind: the data's dtype, or these for the AVX2 pairs)
KINDS = {**WORDS, "uint8_pairs": WIDE_BYTE_PAIRS, "uint8_int8_pairs": BYTE_PAIRS}


def kind_name(words: Words) -> str:
    """``words``' name in ``KINDS`` (what a picklable PackWeight stores)."""
    return next(k for k, v in KINDS.items() if v is words)


def available() -> bool:
    """Does the host run this schedule on uint8 data (AVX-512 with VNNI)?"""
    from ..codegen.llvm.dot import host_vnni

    return vector_isa() == "avx512" and host_vnni()


def pairs_available() -> bool:
    """Does the host run this schedule on int16 data (``vpdpwssd``, else ``vpmaddwd``: AVX-512
    or AVX2)?"""
    from ..runtime.jit import host_has

    return host_has("avx512f", "avx512bw") if vector_isa() == "avx512" else host_has("avx2")


def row_words(dtype: str) -> Words | None:
    """The words a matrix product (``gemm_vnni``) reads rows of ``dtype`` as: ``WORDS``',
    but uint8 rows on an AVX2 host without VNNI as ``BYTE_PAIRS`` (int16 pairs: ``vpmaddwd``
    does twice the multiply-adds of a float32 FMA there, the int8 product's exact float32
    form: the encoder's 128 x 1024 x 256 dense 0.47 ms where float32 took 0.78)."""
    if dtype == "uint8" and vector_isa() != "avx512" and not available() and \
            pairs_available():
        return BYTE_PAIRS
    return WORDS.get(dtype)


def products_available() -> bool:
    """Does ``gemm_vnni`` run uint8 x int8 matrix products on this host (VNNI's bytes, or
    AVX2's int16 pairs: ``row_words``)? What the importers ask before they keep such a
    product in integers (``onnx_quant.vnni_matmul``)."""
    return available() or row_words("uint8") is BYTE_PAIRS


def _words_available(words: Words) -> bool:
    return available() if words is BYTES else pairs_available()


def geometry(t) -> dict | None:
    """Sizes of conv2d stage ``t`` when this schedule takes it: NCHW, data uint8 and weight
    int8 or data int16 and weight int16 or int8 (``words``), output int32, one group, static
    shapes; else None. (``o16``: the output channels rounded up to a vector, as the packed
    weight holds them; ``c4``: the words of input channels.)"""
    dims = static_conv2d_nchw_dims(t)
    if dims is None:
        return None
    a = t.op.attrs
    x, w = a["operands"]
    words = row_words(x.dtype)
    if words is None or w.dtype not in words.weights or t.dtype != "int32" or \
            a["groups"] != 1:
        return None
    n, c, h, wd, o, cw, kh, kw, _, _, oh, ow = dims
    if cw != c or oh * ow < 1:
        return None
    sh, sw = (int(s) for s in a["strides"])
    dh, dw = (int(d) for d in a["dilation"])
    pt, pl = (int(p) for p in a["padding"][:2])
    c4 = -(-c // words.per_word)
    wide = vector_isa() == "avx512" and o % WIDTH == 0  # (AVX2: 16 ymm, one 16-lane vector)
    g = dict(words=words, wdtype=w.dtype, n=n, c=c, c4=c4, h=h, w=wd, o=o,
             o16=-(-o // LANES) * LANES, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, dh=dh,
             dw=dw, pt=pt, pl=pl, hp=(oh - 1) * sh + (kh - 1) * dh + 1,
             wp=(ow - 1) * sw + (kw - 1) * dw + 1, width=WIDTH if wide else LANES,
             parallel=o * c * kh * kw * oh * ow >= PARALLEL_MIN_MACS)
    if words is BYTE_PAIRS and pixel_lanes(g):  # (their weight as int16 pairs: broadcast words)
        g["words"] = WIDE_BYTE_PAIRS
    return g


def supported(t, options=None) -> bool:
    """Does this schedule take stage ``t`` (the host runs its words: VNNI's bytes, or int16
    pairs; generated convs allowed)?"""
    g = geometry(t) if options is None or options.generated_conv else None
    return g is not None and _words_available(g["words"])


class PackWeight:
    """Picklable numpy transform of an ``[O, C, KH, KW]`` weight to ``[O/16, C/4, KH, KW, 16,
    4]`` int8 (``BYTES``; ``PAIRS``: ``[O/16, C/2, KH, KW, 16, 2]`` int16, seen as ``dtype``,
    the weight's own: an int8 one's last axis is the 4 bytes of the 2 int16, as for
    ``WIDE_BYTE_PAIRS``; ``BYTE_PAIRS``: ``[O/16, C/2, KH, KW, 16, 2]`` int8) (input channels
    past ``C`` and output channels past ``O`` zero; ``O/16`` rounded up)."""

    def __init__(self, o: int, c: int, kh: int, kw: int, words: str = "uint8",
                 dtype: str = "int8"):
        self.o, self.c, self.kh, self.kw = o, c, kh, kw
        self.words, self.dtype = words, dtype  # (the data's dtype, for pickling)

    def __call__(self, w):
        kind = KINDS[self.words]
        per, el = kind.per_word, kind.element
        w = np.asarray(w).astype(el)
        c4 = -(-self.c // per)
        if c4 * per != self.c:
            w = np.concatenate([w, np.zeros((self.o, c4 * per - self.c, self.kh, self.kw),
                                            el)], axis=1)
        o16 = -(-self.o // LANES) * LANES
        if o16 != self.o:
            w = np.concatenate([w, np.zeros((o16 - self.o, c4 * per, self.kh, self.kw),
                                            el)], axis=0)
        w = w.reshape(o16 // LANES, LANES, c4, per, self.kh, self.kw)
        return np.ascontiguousarray(w.transpose(0, 2, 4, 5, 1, 3)).view(self.dtype)


def word_bytes(dtype: str) -> int:
    """Bytes of one ``dtype`` value (a packed weight's: int8 or int16)."""
    return np.dtype(dtype).itemsize


def lane_values(g) -> int:
    """Values of the weight's own dtype in one lane of its packed form (the last axis)."""
    kind = g["words"]
    return kind.per_word * word_bytes(kind.element) // word_bytes(g["wdtype"])


def packed_shape(g) -> tuple[int, ...]:
    """The prepacked weight's shape, in its own dtype (``PackWeight``)."""
    return (g["o16"] // LANES, g["c4"], g["kh"], g["kw"], LANES, lane_values(g))


def packed_weight(t) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of conv2d ``t``'s constant weight."""
    g = geometry(t)
    if g is None:
        raise ValueError(f"conv_vnni.packed_weight: stage {t.name!r} is not a conv2d this "
                         "schedule takes")
    return packed_shape(g), PackWeight(g["o"], g["c"], g["kh"], g["kw"],
                                       kind_name(g["words"]), g["wdtype"])


def emit(ctx, t, out, bodies) -> S.Stmt:
    """The rule's emit (``lower.RULES``): conv2d ``t`` into ``out``, its fused elementwise
    epilogue applied in the stores."""
    from .common import emit_with_epilogue, epilogue_value

    x, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    g = geometry(t)

    def run(dst, epi):
        if pixel_lanes(g):
            return conv(ctx, g, dst, x, w, id(t) in ctx.packed, epi=epi)
        f = None if epi is None else (lambda idx, val: epilogue_value(epi, dst, idx, val))
        return conv(ctx, g, dst, x, w, id(t) in ctx.packed, f)

    return emit_with_epilogue(ctx, t, out, bodies, run, tuple(int(d) for d in t.shape))


def packed_words(ctx, w, shape, pack, parts: list, words: Words):
    """The prepacked weight ``w`` of ``shape`` seen as the lanes ``words``' dot reads (its
    ``lane``: int32 words of four int8 values for ``vpdpbusd``, of two int16 for ``vpdpwssd``;
    int16 pairs of bytes for ``BYTE_PAIRS``); ``pack(temp)`` the statements packing it into a
    temporary of ``words.element`` values of ``shape`` when it is not prepacked (appended to
    ``parts``), None when it is."""
    from ..tir.buffer import decl_buffer

    if pack is not None:
        wpk = ctx.temp(shape, words.element, "w_vnni")
        parts.append(pack(wpk))
        w = wpk
    lane = words.lane
    size = int(np.prod(shape)) * word_bytes(w.dtype) // word_bytes(lane)
    wv = decl_buffer((size,), lane, w.name + "_" + lane.replace("int", "i"), data=w.data,
                     elem_offset=w.elem_offset)
    ctx.ws_views.append(wv)
    return wv


def conv(ctx, g, out, x, w, packed: bool, epilogue=None, epi=None) -> S.Stmt:
    """Statements computing the conv of geometry ``g`` into ``out`` from input ``x`` (uint8 or
    int16) and weight ``w`` (prepacked by ``PackWeight`` when ``packed``, else ``[O, C, KH,
    KW]``):
    ``epilogue(idx, value)`` the fused epilogue's value at output index ``idx``, or, for a
    ``pixel_lanes`` geometry, ``epi`` the epilogue's (body, axis vars)."""
    parts = []
    kind = g["words"]
    shape = packed_shape(g) if packed else packed_shape(g)[:-1] + (kind.per_word,)
    wv = packed_words(ctx, w, shape, None if packed else
                      lambda wpk: _pack_weight(ctx, g, w, wpk), parts, kind)
    lanes = pixel_lanes(g)
    # (pixel lanes: the last vector of a plane reads up to 15 words past it)
    xq = ctx.temp((g["c4"] * g["hp"] * g["wp"] + (LANES if lanes else 0),), "int32", "x_vnni")
    nv = ctx.fresh("n")
    tiles = _pixel_tiles(ctx, g, xq, wv, out, nv, epi) if lanes else \
        _tiles(ctx, g, xq, wv, out, nv, epilogue)
    body = S.SeqStmt([_pack(ctx, g, xq, x, nv), tiles])
    parts.append(S.For(nv, 0, g["n"], S.ForKind.SERIAL, body))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _i32(v: int) -> E.IntImm:
    return E.IntImm("int32", v)


def _pack_weight(ctx, g, w, wpk) -> S.Stmt:
    """``wpk[ob, c4, ky, kx, l, k] = w[ob*16 + l, per*c4 + k, ky, kx]`` (0 past the channels;
    ``per`` values a word, of the packed weight's dtype)."""
    kind = g["words"]
    per, el = kind.per_word, kind.element
    o, c4 = ctx.fresh("po"), ctx.fresh("pc")
    ky, kx, k = ctx.fresh("pky"), ctx.fresh("pkx"), ctx.fresh("pk")
    ci = c4 * per + k
    load = w[E.Min(o, _i32(g["o"] - 1)), E.Min(ci, _i32(g["c"] - 1)), ky, kx]
    val = E.Call(el, "tir.if_then_else", [
        E.And(ci < g["c"], o < g["o"]), load if load.dtype == el else E.Cast(el, load),
        E.IntImm(el, 0)])
    store = S.BufferStore(wpk, val, [E.FloorDiv(o, LANES), c4, ky, kx, E.FloorMod(o, LANES), k])
    loops = store
    for v, ext in ((k, per), (kx, g["kw"]), (ky, g["kh"]), (c4, g["c4"]), (o, g["o16"])):
        loops = S.For(v, 0, ext, S.ForKind.SERIAL, loops)
    return loops


def _pack(ctx, g, xq, x, nv) -> S.Stmt:
    """``xq[c4, i, j]``: the bytes (int16 halves) of input channels ``4*c4 .. 4*c4+3``
    (``2*c4 .. 2*c4+1``) at padded row ``i``, column ``j`` of image ``nv`` (zeros for padding
    and channels past the last)."""
    hp, wp, pl, pt, w, h = g["hp"], g["wp"], g["pl"], g["pt"], g["w"], g["h"]
    r, j = ctx.fresh("qr"), ctx.fresh("qj")
    c4, i = E.FloorDiv(r, hp), E.FloorMod(r, hp)
    iy = i - pt
    kind = g["words"]
    per = kind.per_word

    def word(jj, count):  # the int32 of ``count`` channels (a tail group: fewer)
        v = None
        for k in range(count):
            b = kind.part(x[nv, c4 * per + k, iy, jj - pl], k)
            v = b if v is None else E.Call("int32", "tir.bitwise_or", [v, b])
        return v

    def row(count):
        j0 = min(wp, pl)
        j1 = min(wp, max(j0, pl + w))
        cols = []
        if j0:
            cols.append(S.For(j, 0, j0, S.ForKind.SERIAL, S.BufferStore(xq, _i32(0),
                                                                         [r * wp + j])))
        if j1 > j0:
            cols.append(_pack_run(ctx, j0, j1 - j0, lambda jj: S.BufferStore(
                xq, word(jj, count), [r * wp + jj])))
        if wp > j1:
            cols.append(S.For(j, j1, wp - j1, S.ForKind.SERIAL,
                              S.BufferStore(xq, _i32(0), [r * wp + j])))
        zero = S.For(j, 0, wp, S.ForKind.SERIAL, S.BufferStore(xq, _i32(0), [r * wp + j]))
        body = cols[0] if len(cols) == 1 else S.SeqStmt(cols)
        return S.IfThenElse(E.And(iy >= 0, iy < h), body, zero)

    full, tail = g["c"] // per, g["c"] % per
    if PACK_PLANES and (hp, wp, pt, pl) == (h, w, 0, 0):
        return _pack_planes(ctx, g, xq, x, nv)
    loops = []
    if full:
        loops.append(S.For(r, 0, full * hp, S.ForKind.SERIAL, row(per)))
    if tail:
        r2 = ctx.fresh("qr")
        loops.append(S.For(r2, full * hp, hp, S.ForKind.SERIAL,
                           _rename(row(tail), r, r2)))
    return loops[0] if len(loops) == 1 else S.SeqStmt(loops)


# An input read whole (no padding, every row and column: 1x1 convs at stride 1) is packed a
# plane at a time, as one run of words across its rows, where it went row by row: a 14x14
# plane's rows were each a vector of 14 words behind a test of the row's padding. Sapphire
# Rapids, one thread, interleaved, us, rows -> planes: the packing copy alone 1152 channels
# at 14x14 14.9 -> 6.9, 768 at 14x14 11.0 -> 5.0, 1920 at 7x7 13.1 -> 3.6, 192 at 56x56 17.4
# -> 14.8, 32 at 112x112 10.5 -> 10.3; the conv + requantize to uint8: 1152 -> 192 at 14x14
# 162.5 -> 153.0, 768 -> 192 113.2 -> 104.0, 1920 -> 320 at 7x7 141.4 -> 128.9.
PACK_PLANES = True


def _pack_planes(ctx, g, xq, x, nv) -> S.Stmt:
    """``_pack`` of an input without padding whose planes the conv reads whole: ``xq[c4 *
    plane + p]`` the word of input channels ``per*c4 ..`` at flat pixel ``p`` (a tail group of
    fewer channels: zero bytes past the last)."""
    kind = g["words"]
    per, c, plane = kind.per_word, g["c"], g["h"] * g["w"]
    xf = ctx.flat_view(x)

    def run(c4, count):
        def store(p):
            v = None
            for k in range(count):
                b = kind.part(xf[(nv * c + c4 * per + k) * plane + p], k)
                v = b if v is None else E.Call("int32", "tir.bitwise_or", [v, b])
            return S.BufferStore(xq, v, [c4 * plane + p])
        return _pack_run(ctx, 0, plane, store)

    full, tail = c // per, c % per
    loops = []
    if full:
        c4 = ctx.fresh("qc")
        loops.append(S.For(c4, 0, full, S.ForKind.SERIAL, run(c4, per)))
    if tail:
        loops.append(run(_i32(full), tail))
    return loops[0] if len(loops) == 1 else S.SeqStmt(loops)


# The packing copy's rows go PACK_LANES words a vector (a serial loop of them, then one vector
# of the rest), not as one vector as wide as the row: a row of 112 made <112 x i32> vectors
# (LLVM splits them into 7 zmm, the byte loads and shifts of 4 channels spilled).
PACK_LANES = 16


def _pack_run(ctx, start: int, extent: int, body_fn) -> S.Stmt:
    """``body_fn(j)`` for ``j`` in ``[start, start + extent)``: whole vectors of ``PACK_LANES``
    in a loop, then one vector of the rest (or a serial loop under 4)."""
    def run(first, count):
        j = ctx.fresh("qj")
        kind = S.ForKind.VECTORIZED if count >= 4 else S.ForKind.SERIAL
        return S.For(j, first, count, kind, body_fn(j))

    if not PACK_LANES or extent <= PACK_LANES:
        return run(start, extent)
    nvec, rest = divmod(extent, PACK_LANES)
    v, ll = ctx.fresh("qv"), ctx.fresh("ql")
    parts = [S.For(v, 0, nvec, S.ForKind.SERIAL, S.For(ll, 0, PACK_LANES, S.ForKind.VECTORIZED,
                                                       body_fn(start + v * PACK_LANES + ll)))]
    if rest:
        parts.append(run(start + nvec * PACK_LANES, rest))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _rename(stmt, old, new):
    from ..tir.stmt_functor import substitute

    return substitute(stmt, {old: new})


# A conv over one row (``oh == 1``: a Conv1d's) whose epilogue reads an operand at the pixel
# (the border zero-point sums of an input with a zero point, ``onnx_quant.
# border_zero_point_sums``) applies it per output channel to the tile's pixel vectors after the
# transpose (``_row_store``): tiles of 6 pixels did that on pieces of 4 and 2 lanes, tiles of
# ``ROW_PIXELS`` on one piece of 8. Zen 4, one thread, interleaved: the audio net's first Conv1d
# (40 -> 64, 5 taps, stride 2, 100 outputs) requantized to uint8 10.09 -> 9.09 us; the model
# (QOperator) 2.4-2.8% faster in both importers; 12- and 16-pixel tiles were slower than 8.
ROW_PIXELS = 8


def row_tiles(grid: int) -> list[tuple[int, int, int]]:
    """``grid`` pixels as ``ROW_PIXELS``-pixel tiles and one tile of the rest."""
    full, rest = divmod(grid, ROW_PIXELS)
    return [(0, ROW_PIXELS, full)] + ([(full * ROW_PIXELS, rest, 1)] if rest else [])


def tile_groups(g, epilogue, nv) -> list[tuple[int, int, int]]:
    """The pixel tiles ``(first pixel, pixels per tile, tiles)`` of geometry ``g``'s flat
    output plane: 6s and 5s (``conv_lanes.pixel_tiles``; fewer pixels: ``even_tiles``; on AVX2
    for a filter of several columns, ``AVX2_PIXELS``), or ``ROW_PIXELS`` for one output row
    stored through an epilogue that reads the plane."""
    from .lane_transpose import reads_plane

    grid = g["oh"] * g["ow"]
    if ROW_PIXELS and g["oh"] == 1 and grid >= ROW_PIXELS and epilogue is not None and \
            reads_plane(lambda idx, val: epilogue([idx[0], idx[1], _i32(0), idx[3]], val), nv,
                        _i32(0)):
        return row_tiles(grid)
    if vector_isa() != "avx512" and g.get("kw", 1) > 1:
        return even_tiles(grid, AVX2_PIXELS)
    return pixel_tiles(grid) if grid >= SIXES_MIN else even_tiles(grid, PIXELS)


# The channel-lanes tiles of a channel tile read its weight from memory (or L2) in the first
# pixel tile and from L1 in the others (a 7x7 plane: 9 tiles), which left the memory idle while
# those ran and the next channel tile's first one waiting on it. So the first pixel tile of
# each channel tile but the last also prefetches the next one's weight, the line of it
# matching each line it reads (as ``gemm_kernel``'s ``PREFETCH_NEXT_PIECE``). Sapphire
# Rapids, one thread, + requantize to uint8, interleaved, us, off -> on, the weight in cache /
# evicted before each call (as in a model): 7x7 320 -> 1920 148 -> 139 / 185 -> 165, 1920 ->
# 320 128 -> 121 / 161 -> 147, 1152 -> 320 86 -> 79 / 107 -> 104, 1920 -> 640 269 -> 247 /
# 327 -> 293, 640 -> 2560 396 -> 370 / 461 -> 428.
PREFETCH_NEXT_CHANNELS = True


def _tiles(ctx, g, xq, wv, out, nv, epilogue) -> S.Stmt:
    """Channel tiles (the outer loop, parallel for a large conv) x pixel tiles."""
    cw = g["width"]
    groups = tile_groups(g, epilogue, nv)
    full, rest = divmod(g["o"], cw)  # (a last tile of fewer channels: their lanes stored)
    fetch = PREFETCH_NEXT_CHANNELS and full + (1 if rest else 0) > 1 and \
        sum(count for _, _, count in groups) > 1

    def per_ob(ob, stored, ahead: bool):
        loops = []
        for n, (first, pixels, count) in enumerate(groups):
            k = ctx.fresh("pt")

            def tile(p0, fetch_next=False, pixels=pixels):
                return _tile(ctx, g, xq, wv, out, nv, ob, p0, pixels, epilogue, stored,
                             fetch_next)
            if n == 0 and ahead:  # (the first tile prefetches the next channel tile's weight)
                loops.append(tile(_i32(first), True))
                if count > 1:
                    loops.append(S.For(k, 1, count - 1, S.ForKind.SERIAL,
                                       tile(first + k * pixels)))
                continue
            loops.append(S.For(k, 0, count, S.ForKind.SERIAL, tile(first + k * pixels)))
        return loops[0] if len(loops) == 1 else S.SeqStmt(loops)

    parts = [_outer_loops(ctx, [full], g["parallel"], lambda idx: per_ob(idx[0], cw, fetch))] \
        if full else []
    if rest:
        parts.append(per_ob(_i32(full), rest, False))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _tile(ctx, g, xq, wv, out, nv, ob, p0, pixels: int, epilogue, stored: int,
          fetch_next: bool = False) -> S.Stmt:
    """Output channels ``ob*width ..`` x output pixels ``p0 .. p0+pixels`` (flattened): int32
    accumulators, one ``vpdpbusd`` per pixel, 16 channels and tap of 4 input channels; the
    first ``stored`` channels of the tile stored. ``fetch_next``: each tap also prefetches
    the lines of the next channel tile's weight matching those it reads (clamped to the
    weight's end)."""
    from ..tir.buffer import decl_buffer

    cw, ow, hp, wp = g["width"], g["ow"], g["hp"], g["wp"]
    acc = decl_buffer((pixels, cw), "int32", "vn_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody):
        v = ctx.fresh(name)
        return S.For(v, 0, extent, kind, fbody(v))

    q = [ctx.fresh("q") for _ in range(pixels)]  # each pixel's offset at tap (0, 0)
    init = loop("jj", pixels, unroll, lambda jj: loop("ll", cw, vec, lambda ll: S.BufferStore(
        acc, _i32(0), [jj, ll])))
    taps_w = g["kh"] * g["kw"] * LANES  # int32 of one (ob16, c4) block of the weight

    def tap(c4, ky, kx):
        xo, wo = ctx.fresh("xo"), ctx.fresh("wo")
        macs = [loop("ll", LANES, vec, lambda ll, jj=jj, v=v: S.BufferStore(acc, E.Call(
            "int32", g["words"].dot, [acc[jj, v * LANES + ll], xq[xo + q[jj]],
                           wv[wo + v * (g["c4"] * taps_w) + ll]]), [jj, v * LANES + ll]))
            for v in range(cw // LANES) for jj in range(pixels)]
        off = c4 * (hp * wp) + (ky * g["dh"]) * wp + kx * g["dw"]
        woff = ((ob * (cw // LANES)) * g["c4"] + c4) * taps_w + (ky * g["kw"] + kx) * LANES
        if fetch_next:
            last = g["o16"] // LANES * g["c4"] * taps_w - LANES  # (the weight's last vector)
            macs = macs + [prefetch(wv[E.Min(wo + (cw // LANES + v) * (g["c4"] * taps_w),
                                             _i32(last))]) for v in range(cw // LANES)]
        return S.LetStmt(xo, off, S.LetStmt(wo, woff, S.SeqStmt(macs)))

    macs = loop("c", g["c4"], S.ForKind.SERIAL, lambda c4: loop(
        "ky", g["kh"], S.ForKind.SERIAL, lambda ky: loop(
            "kx", g["kw"], unroll if g["kw"] <= 3 else S.ForKind.SERIAL,
            lambda kx: tap(c4, ky, kx))))

    res = decl_buffer((pixels, cw), "int32", "vn_res")
    jp = ctx.fresh("jj")

    def put(ll):
        p = p0 + jp
        idx = [nv, ob * cw + ll, E.FloorDiv(p, ow), E.FloorMod(p, ow)]
        val = res[jp, ll] if epilogue is None else epilogue(idx, res[jp, ll])
        return S.BufferStore(out, val, idx)

    copy = loop("jj", pixels, unroll, lambda jj: loop("ll", cw, vec, lambda ll: S.BufferStore(
        res, acc[jj, ll], [jj, ll])))
    if _pixel_vector_store(g, pixels, epilogue, nv, ob):
        store = S.SeqStmt([copy, _row_store(ctx, g, out, nv, ob, p0, pixels, res, epilogue,
                                            stored)])
    else:
        store = S.SeqStmt([copy, S.For(jp, 0, pixels, S.ForKind.SERIAL,
                                       loop("ll", stored, vec, put))])
    store = S.Allocate(res.data, "int32", [pixels * cw], True, S.DeclBuffer(res, store))
    body = S.DeclBuffer(acc, S.SeqStmt([init, macs, store]))
    body = S.Allocate(acc.data, "int32", [pixels * cw], True, body)
    for jj in range(pixels - 1, -1, -1):
        p = p0 + jj
        body = S.LetStmt(q[jj], E.FloorDiv(p, ow) * (g["sh"] * wp) + E.FloorMod(p, ow) * g["sw"],
                         body)
    return body


# The channel-lanes tiles store each output channel as vectors of the tile's consecutive
# pixels: the tile transposed in registers (``lane_transpose.transpose16``), where they stored
# each pixel's channels a plane apart (a scatter per pixel, of 16 lanes, which the epilogue's
# uint8 or float32 values then went through). The pixels of a tile are consecutive in the
# flattened plane, so in memory, across rows too; an epilogue that reads an operand at the
# pixel (a residual) runs on the pixel vectors after the transpose, which needs them in one
# output row (a conv over one row, a Conv1d's), else the scatter stays.
ROW_STORE = True


def _pixel_vector_store(g, pixels: int, epilogue, nv, ob) -> bool:
    """Does a tile of geometry ``g`` store pixel vectors (``ROW_STORE``)?"""
    from .lane_transpose import reads_plane

    if not ROW_STORE or pixels < 2:
        return False
    return g["oh"] == 1 or epilogue is None or not reads_plane(epilogue, nv, ob * g["width"])


def _row_pieces(count: int) -> list[tuple[int, int]]:
    """(start, length) of ``count`` lanes cut in powers of two (16 at most)."""
    out, lo = [], 0
    for n in (LANES, 8, 4, 2, 1):
        while count - lo >= n:
            out.append((lo, n))
            lo += n
    return out


def _row_store(ctx, g, out, nv, ob, p0, pixels: int, res, epilogue, stored: int) -> S.Stmt:
    """Store the tile ``res`` ``[pixels, width]`` (int32 sums of output channels ``ob*width
    ..`` at the consecutive pixels ``p0 ..`` of the flattened output plane): per 16 channels,
    the epilogue on the channel vectors (or, one that reads an operand at the pixel, on the
    pixel vectors after: one output row), the transpose, then each of the first ``stored``
    channels as vectors of its pixels in the flat output."""
    from ..tir.buffer import decl_buffer
    from .lane_transpose import reads_plane, transpose16

    cw, ow = g["width"], g["ow"]
    # (one output row: a read at row 0 is per channel, e.g. Relax's bias of a Conv1d's row conv,
    # which its broadcast indexes at the output's unit row axis)
    probe = epilogue if g["oh"] != 1 or epilogue is None else \
        (lambda idx, val: epilogue([idx[0], idx[1], _i32(0), idx[3]], val))
    after = epilogue is not None and reads_plane(probe, nv, ob * cw)
    dtype = out.dtype if epilogue is not None and not after else "int32"
    flat = ctx.flat_view(out)
    plane = g["oh"] * ow
    parts = []
    for v in range(cw // LANES):
        count = min(LANES, stored - v * LANES)
        if count <= 0:
            break
        src = decl_buffer((pixels, LANES), dtype, "vr_src", scope="local")
        fills = []
        for jj in range(pixels):
            ll = ctx.fresh("ll")
            idx = [nv, ob * cw + v * LANES + ll, E.FloorDiv(p0 + jj, ow),
                   E.FloorMod(p0 + jj, ow)]
            val = res[jj, v * LANES + ll]
            if epilogue is not None and not after:
                val = epilogue(idx, val)
            fills.append(S.For(ll, 0, LANES, S.ForKind.VECTORIZED,
                               S.BufferStore(src, val, [jj, ll])))

        def stores(tr, v=v, count=count):
            body = []
            for ll in range(count):
                o = ob * cw + (v * LANES + ll)
                for lo, n in _row_pieces(pixels):
                    j = ctx.fresh("jr")
                    val = tr[ll, lo + j]
                    if after:  # (one output row: ``_pixel_vector_store``)
                        val = epilogue([nv, o, _i32(0), p0 + lo + j], val)
                    pos = (nv * g["o"] + o) * plane + p0 + lo + j
                    body.append(S.For(j, 0, n, S.ForKind.VECTORIZED,
                                      S.BufferStore(flat, val, [pos])))
            return S.SeqStmt(body)

        body = S.SeqStmt([*fills, transpose16(src, pixels, stores)])
        parts.append(S.Allocate(src.data, dtype, [pixels * LANES], True,
                                S.DeclBuffer(src, body)))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


# 1x1 stride-1 convs put 16 output pixels in the lanes instead (``_pixel_tiles``): the packed
# input's words of consecutive pixels are consecutive, so one vector load serves 16 pixels and
# each output channel's 4 weight bytes are one broadcast word; the tile's sums are then rows of
# pixels of one channel, stored (through the epilogue) as contiguous vectors. Channels in the
# lanes (``_tiles``) store each pixel's channels a plane apart: one scalar store per output
# element, which bounded the 1x1 convs of few input channels (their reduction is short).
# Zen 4, one thread, the conv alone + requantize to uint8 (us, channel lanes -> pixel lanes):
# 32 -> 192 at 56x56 335 -> 133, 48 -> 288 at 28x28 146 -> 66, 288 -> 48 at 28x28 85 -> 59,
# 64 -> 384 at 14x14 55 -> 29, 384 -> 64 at 14x14 31 -> 28, 64 -> 128 at 14x14 19 -> 11 (tiles
# of 4 or 8 channels x 1, 2 or 3 vectors measured within noise of each other there). On a Xeon
# (AVX-512 VNNI), 4 x 1 was bound by the latency of its 4 accumulators' vpdpbusd chains: the
# same convs, one thread, 4 x 1 -> 8 x 3 (us): 32 -> 192 at 112x112 690 -> 500, 192 -> 48 at
# 56x56 180 -> 114, 48 -> 288 at 56x56 265 -> 219, 192 -> 1152 at 14x14 250 -> 148, 1152 ->
# 192 at 14x14 290 -> 164, 128 -> 768 at 14x14 110 -> 76 (8 x 2 and 12 x 2 between; 16 x 1,
# 6 x 2 and 4 x 3 behind 8 x 3). 24 accumulators, 3 data vectors and a broadcast: 28 zmm.
PIXEL_LANES = True
PIXEL_ROWS = 8  # output channels of a pixel-lanes tile
PIXEL_VECTORS = 3  # 16-pixel vectors of a pixel-lanes tile
PIXEL_STORE_BASE = True
# The pixel tile stores row by row, each output channel's vectors together (its epilogue's
# per-channel operands broadcast once, then dead), where it stored vector by vector: each
# channel's broadcast operands then stayed live beside the 24 accumulators and LLVM spilled
# them (a requantizing epilogue of per-channel scale, bias and zero-point sums: 20 zmm stores
# and 20 loads on the stack a tile, none now). SPR, one thread, interleaved, us, vectors ->
# rows: 32 -> 192 at 112x112 529 -> 522, 48 -> 288 at 56x56 210 -> 208, 128 -> 768 at 14x14
# 78.8 -> 75.9, 192 -> 48 at 56x56 and 768 -> 192 at 14x14 within the noise.
PIXEL_STORE_ROWS = True
# Planes whose last vector leaves more than PIXEL_MAX_IDLE of the plane's pixels idle keep the
# channel lanes: a 7x7 plane is 4 vectors for 49 pixels (a last one of 1), the channel tiles'
# 6-pixel rows 54. Zen 4, one thread, + requantize to uint8, interleaved (us, pixel -> channel
# lanes): 7x7 960 -> 320 159 -> 75, 320 -> 1280 165 -> 115, 960 -> 160 80 -> 41, 160 -> 960 64
# -> 51, 576 -> 96 25.5 -> 16.3, 128 -> 768 42 -> 35 (64 -> 384 11.9 -> 12.3); planes with few
# idle lanes keep pixel lanes: 10x10 (12 of 100) 256 -> 256 35.9 vs 39.5, 4x4 160 -> 960 12.8
# vs 16.6, 8x8 256 -> 256 20.9 vs 24.8.
PIXEL_MAX_IDLE = 0.25


# An AVX2 pixel tile (16 ymm): ``PIXEL_ROWS`` x ``PIXEL_VECTORS`` took 48 ymm accumulators
# (16-lane int32 vectors are two ymm each) and spilled them: rows x vectors here. Zen 3, one
# thread, uint8 x int8 as int16 pairs + requantize to uint8, us, tiles 4x1 / 6x1 / 2x2 / 3x2
# (the float32 conv of the same uint8 input): 32 -> 192 at 56x56 475 / 476 / 473 / 480 (665),
# 48 -> 288 at 28x28 227 / 233 / 239 / 233 (327), 288 -> 48 at 28x28 214 / 202 / 201 / 204
# (267), 64 -> 384 at 14x14 107 / 105 / 95 / 96 (139), 384 -> 64 at 14x14 94 / 88 / 92 / 89
# (167): within the noise of each other, all near Zen 3's one ``vpmaddwd`` a cycle (16
# multiply-adds, as its two 8-lane FMAs: the pairs' gain is the bytes read, not the products).
# AVX-512's 8 x 3, spilled, in another run (4x1 / 8x3): 500 / 601, 227 / 233, 214 / 208,
# 101 / 93, 103 / 93: 4 x 1 keeps the 32 -> 192 conv of the largest plane from its spills.
AVX2_PIXEL_TILE = (4, 1)
# An AVX2 channel-lanes tile (``_tiles``, 16 output channels: two ymm a pixel) of a filter of
# several columns holds this many pixels (``tile_groups``): AVX-512's 6s and 5s took 12 ymm
# accumulators beside the weight's two and a broadcast, and with the 3 columns of a 3x3 filter
# unrolled LLVM spilled them (ResNet-18's 3x3 convs: 8-11 accumulator stores and reloads on the
# stack a tap row; 4 pixels: 8 accumulators, 0-3 reloads). 1x1 filters (one column a tap: no
# spills at 6) keep 6s and 5s: MobileNetV2's 7x7 1x1 convs were 2-13% slower in 4s. Zen 3, one
# thread, QOperator models (benchmarks/bench_quantized, ratio to ORT's saturating kernels, two
# alternating runs, 6 / 4 / 3 pixels for every filter): resnet18 0.83, 0.81 / 0.75, 0.74 /
# 0.86, 0.87.
AVX2_PIXELS = 4


def pixel_tile() -> tuple[int, int]:
    """(output channels, 16-pixel vectors) of a pixel-lanes tile on the host's vector ISA."""
    return (PIXEL_ROWS, PIXEL_VECTORS) if vector_isa() == "avx512" else AVX2_PIXEL_TILE


def pixel_lanes(g) -> bool:
    """Does geometry ``g`` run with pixels in the lanes (``PIXEL_LANES``): a 1x1 filter at
    stride 1 without padding, at least a vector of pixels, few of them idle in the last vector
    (``PIXEL_MAX_IDLE``)?"""
    npx = g["oh"] * g["ow"]
    return PIXEL_LANES and g["kh"] == g["kw"] == 1 and g["sh"] == g["sw"] == 1 and \
        g["pt"] == g["pl"] == 0 and g["hp"] == g["h"] and g["wp"] == g["w"] and \
        npx >= LANES and (-npx) % LANES <= PIXEL_MAX_IDLE * npx


# A pixel tile's epilogue that starts by adding an int32 per output channel to the conv's sum
# (the zero point's share of a quantized conv, ``onnx_quant.zero_point_sums``, subtracted, or
# a bias added) starts the channel's accumulators from that value instead of 0
# (``channel_offset``): a vector add per 16 outputs less in the stores, a broadcast per
# channel moved into the tile's start. The sums are the same int32 values (two's complement
# addition in any order). SPR, one thread, interleaved, + (sums - zero point's share) * scale
# + bias per channel requantized to uint8, us, off -> on: 32 -> 192 at 112x112 510.6 ->
# 477.3, 48 -> 288 at 56x56 189.7 -> 182.2, 128 -> 768 at 14x14 77.1 -> 73.7, 768 -> 192 at
# 14x14 105.5 -> 101.6, 192 -> 48 at 56x56 102.8 -> 101.6.
PIXEL_OFFSET_INIT = True


def channel_offset(epi, out):
    """``(epilogue, offset)``: for an epilogue (body, axis vars: image, channel, row, column)
    reading the conv (``out``) once, as ``conv + c`` or ``conv - c`` in int32 with ``c`` read
    per output channel only, the epilogue with that sum replaced by the conv itself and
    ``offset(n, o)`` the int32 ``+c`` / ``-c`` of image ``n``'s output channel ``o``;
    else ``(epi, None)``."""
    from .common import loads_of

    if epi is None:
        return epi, None
    body, axes = epi
    # (the conv's int32 sums are read from ``out``, the epilogue's own output buffer, whose
    # loads carry that buffer's dtype)
    if len(loads_of(body, out)) != 1 or len(axes) != 4:
        return epi, None
    found = []

    def is_conv(e) -> bool:  # (the walk rebuilds nodes: the conv's load by its buffer)
        return isinstance(e, E.BufferLoad) and e.buffer is out

    def per_channel(e) -> bool:
        if e.dtype != "int32":
            return False
        leaves = [n for n in post_order(e) if isinstance(n, E.Var)]
        return not loads_of(e, out) and all(v is axes[0] or v is axes[1] for v in leaves)

    def fpost(e):
        if found or not isinstance(e, (E.Add, E.Sub)) or e.dtype != "int32":
            return None
        if is_conv(e.a) and per_channel(e.b):
            found.append((e.b, isinstance(e, E.Sub)))
            return e.a
        if isinstance(e, E.Add) and is_conv(e.b) and per_channel(e.a):
            found.append((e.a, False))
            return e.b
        return None

    rest = transform_expr(body, fpost)
    if not found:
        return epi, None
    c, negate = found[0]

    def offset(n, o):
        v = substitute(c, {axes[0]: n, axes[1]: o})
        return E.Sub(_i32(0), v) if negate else v
    return (rest, axes), offset


def _pixel_tiles(ctx, g, xq, wv, out, nv, epi) -> S.Stmt:
    """Pixel blocks of ``PIXEL_VECTORS`` vectors (the outer loop, parallel for a large conv; a
    last narrower block for the rest) x blocks of ``PIXEL_ROWS`` output channels."""
    from .conv_pointwise import pixel_value

    npx = g["oh"] * g["ow"]
    rows, vectors = pixel_tile()
    block = vectors * LANES
    full, rest = npx // block, npx % block
    gp = dict(oh=g["oh"], ow=g["ow"], p=npx)
    of = ctx.flat_view(out)
    epi, offset = channel_offset(epi, out) if PIXEL_OFFSET_INIT else (epi, None)

    def put(o, p, value, pos):
        return S.BufferStore(of, pixel_value(ctx, gp, out, epi, nv, o, p, value), [pos])

    def channels(p0, count):
        def per(o0, nrows):
            return _pixel_tile(ctx, g, xq, wv, put, o0, nrows, p0, count,
                               (nv * g["o"] + o0) * npx + p0,
                               None if offset is None else lambda o: offset(nv, o))
        k = ctx.fresh("pr")
        full, rest = divmod(g["o"], rows)  # (a last block of fewer output channels)
        loops = [S.For(k, 0, full, S.ForKind.SERIAL, per(k * rows, rows))] if full else []
        if rest:
            loops.append(per(_i32(full * rows), rest))
        return loops[0] if len(loops) == 1 else S.SeqStmt(loops)

    parts = []
    if full:
        parts.append(_outer_loops(ctx, [full], g["parallel"], lambda idx: channels(
            idx[0] * block, block)))
    if rest:
        parts.append(channels(_i32(full * block), rest))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _pixel_tile(ctx, g, xq, wv, put, o0, rows: int, p0, count: int, first,
                offset=None) -> S.Stmt:
    """Output channels ``o0 .. o0+rows`` x pixels ``p0 .. p0+count`` (flattened; ``count`` at
    most ``PIXEL_VECTORS`` vectors, the last one partly stored): int32 accumulators, one
    ``vpdpbusd`` per channel and vector of 16 pixels and input word (4 channels). ``put(o, p,
    value, pos)`` stores at ``pos`` in the flat output, ``first`` that of (``o0``, ``p0``):
    each store is at a constant offset from it (``PIXEL_STORE_BASE``). ``offset(o)``: the
    int32 each accumulator of output channel ``o`` starts from (``channel_offset``), else 0."""
    from ..tir.buffer import decl_buffer

    nvec = -(-count // LANES)
    npx = g["hp"] * g["wp"]
    acc = decl_buffer((rows, nvec * LANES), "int32", "vp_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody):
        v = ctx.fresh(name)
        return S.For(v, 0, extent, kind, fbody(v))

    def start(r):
        return _i32(0) if offset is None else offset(o0 + r)
    init = S.SeqStmt([loop("rr", rows, unroll, lambda r, v=v: loop("ll", LANES, vec, lambda ll: (
        S.BufferStore(acc, start(r), [r, v * LANES + ll])))) for v in range(nvec)])
    c4 = ctx.fresh("c")
    xo = ctx.fresh("xo")
    macs = []
    for r in range(rows):
        o = o0 + r
        # (the packed weight's word of output channel o, input word c4)
        wi = (E.FloorDiv(o, LANES) * g["c4"] + c4) * LANES + E.FloorMod(o, LANES)
        for v in range(nvec):
            macs.append(loop("ll", LANES, vec, lambda ll, r=r, v=v, wi=wi: S.BufferStore(
                acc, E.Call("int32", g["words"].dot, [acc[r, v * LANES + ll], xq[xo + v * LANES + ll],
                                            wv[wi]]), [r, v * LANES + ll])))
    red = S.For(c4, 0, g["c4"], S.ForKind.SERIAL, S.LetStmt(xo, c4 * npx + p0, S.SeqStmt(macs)))
    base = ctx.fresh("vb")
    plane = g["oh"] * g["ow"]

    def store(r, v):
        width = min(LANES, count - v * LANES)
        return loop("ll", width, vec, lambda ll: put(
            o0 + r, p0 + v * LANES + ll, acc[r, v * LANES + ll],
            base + (r * plane + v * LANES) + ll if PIXEL_STORE_BASE else
            first + r * plane + v * LANES + ll))
    if PIXEL_STORE_ROWS:
        stores = [loop("rr", rows, unroll, lambda r: S.SeqStmt([store(r, v)
                                                               for v in range(nvec)]))]
    else:
        stores = [loop("rr", rows, unroll, lambda r, v=v: store(r, v)) for v in range(nvec)]
    body = S.DeclBuffer(acc, S.SeqStmt([init, red, *stores]))
    return S.LetStmt(base, first, S.Allocate(acc.data, "int32", [rows * nvec * LANES], True,
                                             body))
