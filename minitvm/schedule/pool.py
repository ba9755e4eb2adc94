"""Schedules for window pooling (max, the mean of avg, the sum of an integer avg) on NCHW and
NCW (a 1-D pool is a 2-D one with a unit H), and for adaptive pooling by its bins.

Where ``DIRECT`` is on (both ISAs), windows up to ``DIRECT_MAX_TAPS`` taps at column strides up
to ``DIRECT_MAX_STRIDE`` take the direct form (``emit_direct``: output vectors from the input,
edges written out); windows of more taps (or of 16 and more at column stride 1) take
``pool_symbolic``'s forms instead (``pool_symbolic.takes_static``: rows combined first, or
accumulated; chosen by ``builtin_rules``); the others, and every window with ``DIRECT`` off, the
row form (``emit_rows``), described here. Per output row (parallel over batch x channel x row), the valid
input rows of the window are combined into a row temporary with unit-stride vector loads
(padding columns hold the reduction's identity), then the window's columns are combined along
that row, again with unit-stride vectors; a strided pooling finally picks every ``stride``-th
column. This replaces the generic small-window reduction, whose strided, bounds-checked gathers
cost 4-5x more. A fused elementwise epilogue (a residual add) is applied in the direct form's
stores; the other forms leave it to a pass of its own (``lower._emit_pool``). On AVX2, windows
tiling a narrow plane (2x2 / 2 on a 14x14 map) take the flat form before the direct one
(``emit_flat``, ``FLAT``: the whole plane's windows as one row of vectors).
"""

from __future__ import annotations

import math

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.utils import static_shape as _shape
from .common import epilogue_value, overlapping_vectors, vector_isa
from .common import imm as _i
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner

POOL_TAG = "pool2d_window"
PARALLEL_MIN_WORK = 1 << 16  # window loads before the rows run on the thread pool
# the direct form (see ``emit_direct``): windows of at most this many taps, column strides the
# code generator loads as whole vectors and shuffles, and at most this many edge rows or columns
# (written out one by one)
DIRECT_MAX_TAPS, DIRECT_MAX_STRIDE, DIRECT_MAX_EDGES = 25, 4, 16
DIRECT_LANES = 8  # output columns per vector of the direct form
# a max pool's direct form at column stride 1 in vectors of 16 where a row has that many
# columns, by vector ISA: one zmm instead of two ymm on AVX-512. Measured on an Intel Xeon, one
# thread, ms, 8 -> 16 lanes: 3x3 / 1 max pool of 192x28x28 0.056 -> 0.043 (0.057 -> 0.047 in
# another run), of 192x35x35 0.082 -> 0.080. Not at a stride (its taps are gathered by
# shuffles of two vectors: 3x3 / 2 of 192x23x23 0.025 -> 0.027; 64x112x112, memory-bound,
# 0.134 -> 0.137), nor for means (a zmm division costs more than two ymm ones: a 3x3 / 1 mean
# of 64x56x56 0.051 -> 0.057). (On a Zen 4 a zmm max is two ymm ones: fewer instructions, the
# same work)
WIDE_MAX_LANES = {"avx512": 16, "avx2": 8}
# a max pool's direct form at a column stride without the row temporary: (lanes, the fewest
# interior output columns that take them) by vector ISA. On AVX-512 zmm vectors where a row
# has 24 or more outputs: each tap is two loads and one two-source permute per vector, the
# same for 16 lanes as for 8. Measured on an Intel Xeon, one thread, ms, 8 -> 16 lanes: 3x3 / 2
# max pool of 128x55x55 (27 outputs a row) 0.060 -> 0.053, 32x64x64 (pad 1, 32) 0.0172 ->
# 0.0133; 2x2 / 2 of 64x16x64 0.0051 -> 0.0048, 32x32x128 0.0087 -> 0.0080; but 192x35x35
# (17 outputs a row: two zmm instead of three ymm) 0.040 -> 0.042
STRIDED_MAX_LANES = {"avx512": (16, 24), "avx2": (8, 8)}
# the direct form by vector ISA: measured on AVX2 first; both ISAs (the Zen 4 measurement at
# ``common.vector_isa``)
DIRECT = {"avx512": True, "avx2": True}
VERTICAL_FIRST = True  # strided windows: rows combined into a row temporary first
# ... where the window has at least this many rows and the input row this many columns, by
# vector ISA. On AVX-512 the temporary costs more than it saves on short rows: its stores and
# the strided (shuffled) loads that follow overlap without matching, so each row waits for
# the stores (no store-to-load forwarding). Measured on an Intel Xeon, one thread, ms, row
# temporary -> taps loaded strided from the input: 3x3 / 2 max pool of 256x27x27 0.038 ->
# 0.026, 192x17x17 0.0175 -> 0.0074, 64x32x32 (pad 1) 0.0123 -> 0.0089, 192x35x35 0.042 ->
# 0.039, 64x48x48 0.021 -> 0.019, 32x64x64 (pad 1) 0.0164 -> 0.0133 and 128x55x55 0.058 ->
# 0.053 (both in zmm vectors, ``STRIDED_MAX_LANES``); 64x111x111 0.133 -> 0.134 (kept); 2x2 /
# 2: mean of 48x32x32 0.0080 -> 0.0041, of 64x64x64 0.025 -> 0.018, max of 128x16x16 0.0088 ->
# 0.0031, of 32x32x128 0.0099 -> 0.0087 (so never for two rows). AVX2 as before (any window
# of two or more rows)
VERTICAL_FIRST_MIN = {"avx512": (3, 96), "avx2": (2, 0)}
# windows that tile the plane (``emit_flat``: ``k x k`` / ``k`` windows, no padding, no overhang)
# on planes of at most FLAT_MAX_COLUMNS output columns, where a row ends in a partial vector,
# take the flat form, by vector ISA: each plane's rows combined into a temporary, then the
# windows' columns combined over the whole plane as one row (vectors across the output rows)
# rather than row by row, where a 7-column row took two overlapping vectors of 4 (and a
# 3-column row a scalar loop). Zen 3 (AVX2), one thread, A/B in one process, 9 interleaved
# rounds of median-of-10, thread CPU ms, direct form -> flat (ONNX Runtime, noisy at these
# sizes): 2x2 / 2 max pool of 32x32x14x14 (soft_decision_tree's) 0.068 -> 0.038 (0.086-0.143),
# 32x16x28x28 0.098 -> 0.083 (0.173-0.183), 64x16x10x10 0.049 -> 0.023 (0.066), 16x32x15x15
# 0.036 -> 0.020 (0.071), 8x64x6x6 0.0137 -> 0.0092 (0.022), 1x256x4x4 0.0053 -> 0.0045; 3x3 / 3
# of 1x64x12x12 0.0047 -> 0.0036 (0.016); 2x2 / 2 mean of 8x32x14x14 0.025 -> 0.009 (0.039).
# Rows of whole vectors keep the direct form: 8x64x8x8 (4 columns) lost, 0.0067 -> 0.0087;
# 4x64x32x32 (16) 0.064 -> 0.057. AVX-512 not measured: off
FLAT = {"avx512": False, "avx2": True}
FLAT_MAX_COLUMNS = 16
FLAT_MAX_ROW_FLOATS = 4096  # the temporary of a plane's combined rows (16 KB of float32)
# adaptive pools by their bins (``emit_bins``): at most this many taps per plane's output row
# pass (output rows x the columns all bins of a row read), each written out
BINS_MAX_TAPS = 4096
# the integer dtypes whose max pools this schedule takes
INT_MAX_DTYPES = ("uint8", "int8", "uint16", "int16", "int32")


def supported(t, options=None) -> bool:
    """Is ``t`` a tagged float pooling window stage this schedule handles?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != POOL_TAG:
        return False
    a = t.op.attrs
    (x,) = a["operands"]
    if not (t.dtype == x.dtype and len(_shape(x)) in (3, 4)):
        return False
    # integer pools: max (the quantized models' uint8 / int8 max pools); an integer mean
    # (its sum and division) stays on the generic reduction
    if not (t.dtype.startswith("float") or (t.dtype in INT_MAX_DTYPES and _is_max(t))):
        return False
    if "bins" in a:
        return bins_supported(t)
    # every window must see at least one input element (else the reference's value differs)
    for o, n, k, s, d, p in zip(_plane(t), _plane(x), a["pool_size"], a["strides"],
                                a["dilation"], a["padding"][:2]):
        for i in range(o):
            if not any(0 <= i * s + kk * d - p < n for kk in range(k)):
                return False
    return True


def _plane(t) -> tuple[int, int]:
    """The (H, W) of an NCHW tensor, (1, W) of an NCW one (a 1-D pool has a unit H)."""
    dims = _shape(t)
    return (dims[2], dims[3]) if len(dims) == 4 else (1, dims[2])


def _at(buf, b, c, y, j) -> list:
    """The indices of row ``y``, column ``j`` of plane (b, c) of ``buf`` (NCHW or NCW)."""
    return [b, c, y, j] if len(buf.shape) == 4 else [b, c, j]


def _is_max(t) -> bool:
    return t.op.attrs.get("kind") == "max"


def _is_mean(t) -> bool:
    """Does stage ``t`` hold its windows' means (the schedule divides the sums it combines)?"""
    return t.op.attrs.get("kind") == "avg"


def _count(pos: int, n: int, k: int, s: int, d: int, p: int, pa: int, include: bool) -> int:
    """The taps a mean at output position ``pos`` divides by: those inside the input, or with
    ``include`` (count_include_pad) inside the padded input (``p`` before it, ``pa`` after)."""
    lo, hi = (-p, n + pa) if include else (0, n)
    return max(1, sum(lo <= pos * s + kk * d - p < hi for kk in range(k)))


def _count_expr(o, n: int, k: int, s: int, d: int, p: int, pa: int, include: bool):
    """``_count`` at a run-time output position ``o``."""
    lo, hi = (-p, n + pa) if include else (0, n)
    start = o * s - p
    a, b = _i(lo + d - 1) - start, _i(hi - 1) - start
    if d != 1:
        a, b = E.FloorDiv(a, _i(d)), E.FloorDiv(b, _i(d))
    return E.Max(E.Min(b, _i(k - 1)) - E.Max(a, _i(0)) + 1, _i(1))


def _window(t) -> tuple:
    """``(nb, ch, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl)`` of pooling stage ``t``: its
    input and output sizes, window, strides, dilation and top / left padding."""
    a = t.op.attrs
    nb, ch = _shape(a["operands"][0])[:2]
    h, w = _plane(a["operands"][0])
    oh, ow = _plane(t)
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    return nb, ch, h, w, oh, ow, kh, kw, sh, sw, dh, dw, a["padding"][0], a["padding"][1]


def emit(ctx, t, out, x, ident, combine, epi=None) -> S.Stmt | None:
    """Statements computing pooling stage ``t`` (input buffer ``x``) into ``out``: the direct
    form where it applies, else the row form. With a fused epilogue ``epi``
    (``common.emit_with_epilogue``'s body and axis vars) the direct form stores the epilogue's
    value; where the direct form does not apply, None (the caller runs the epilogue in a pass
    of its own)."""
    if "bins" in t.op.attrs:
        return emit_bins(ctx, t, out, x, combine) if epi is None else None
    direct = None
    if FLAT[vector_isa()] and epi is None:
        direct = emit_flat(ctx, t, out, x, combine)
    if direct is None and DIRECT[vector_isa()]:
        direct = emit_direct(ctx, t, out, x, combine, epi)
    if direct is not None or epi is not None:
        return direct
    return emit_rows(ctx, t, out, x, ident, combine)


def _interior(n: int, k: int, s: int, d: int, p: int, o: int) -> tuple[int, int]:
    """The output positions ``[lo, hi)`` whose whole window (``k`` taps, dilation ``d``) lies
    inside an input of ``n`` (padding ``p`` before it, stride ``s``)."""
    lo = -(-p // s)
    hi = (n - 1 + p - (k - 1) * d) // s + 1
    lo, hi = min(max(lo, 0), o), min(max(hi, 0), o)
    return lo, max(lo, hi)


def _taps(pos: int, n: int, k: int, s: int, d: int, p: int) -> list[int]:
    """The window taps of output position ``pos`` that fall inside the input."""
    return [kk for kk in range(k) if 0 <= pos * s + kk * d - p < n]


def _tree(vals, combine):
    """A balanced combine of ``vals``: short dependency chains."""
    while len(vals) > 1:
        vals = [combine(vals[k], vals[k + 1]) if k + 1 < len(vals) else vals[k]
                for k in range(0, len(vals), 2)]
    return vals[0]


def _int_lanes(dt: str, lanes: int) -> int:
    """An integer pool's lanes for a float pool's ``lanes``: as many bytes a vector (an 8-bit
    max takes 32 outputs where a float32 one takes 8)."""
    if dt.startswith("float"):
        return lanes
    return lanes * 32 // int("".join(ch for ch in dt if ch.isdigit()))


def _max_tree(vals):
    """The NaN-propagating max of ``vals`` (IEEE / numpy: NaN if any value is NaN) in about
    half the instructions of a tree of exact ``Max``: a tree of plain ``a > b ? a : b`` (x86's
    one-instruction maxps, which may drop a NaN), an "all ordered" test that checks two values
    per compare (a chain of masked ``cmpordps``), and one select of NaN per window. (The NaN
    is the canonical quiet NaN, not the input's.) The 3x3 / 1 pool of 192x28x28 went from
    165 us to 68 us at one thread (ONNX Runtime: 79 us; its MaxPool lets NaN through only
    where a comparison happens to keep it)."""
    plain = _tree(list(vals), lambda a, b: E.Select(E.GT(a, b), a, b))
    if not plain.dtype.startswith("float"):  # (integers have no NaN)
        return plain
    loads = [v for v in vals if not isinstance(v, E.FloatImm)]
    if not loads:
        return plain
    ordered = [E.Not(E.Or(tir_op.isnan(loads[k]), tir_op.isnan(loads[k + 1])))
               if k + 1 < len(loads) else E.Not(tir_op.isnan(loads[k]))
               for k in range(0, len(loads), 2)]
    ok = _tree(ordered, E.And)
    return E.Select(ok, plain, E.FloatImm(plain.dtype, math.nan))


def emit_direct(ctx, t, out, x, combine, epi=None) -> S.Stmt | None:
    """Pooling stage ``t`` computed output vector by output vector from the input (None when
    the window, stride or edges are too large for it).

    Each output row splits into edge columns (written one by one with only their in-bounds
    taps) and interior columns, whose windows lie inside the input: ``DIRECT_LANES`` outputs
    at a time combine their ``kh * kw`` taps as vector loads, the last vector overlapping the
    one before rather than a scalar tail. Rows split the same way (edge rows written out,
    interior rows a loop). At stride 1 the taps are contiguous loads of the input; at stride
    2-4 (``VERTICAL_FIRST``) the row's input columns are first combined down the window's rows
    into a row temporary (contiguous vectors), whose ``kw`` taps per output are then strided
    loads (whole vectors and shuffles): a third of the shuffles of loading every tap strided
    (on AVX-512 only for tall windows on wide rows: ``VERTICAL_FIRST_MIN``).
    On a Zen 2 this takes ResNet's 3x3 / 2 max pool of 64x112x112 from 0.57 ms (the row form)
    to 0.15 ms (0.27 ms without ``VERTICAL_FIRST``); ONNX Runtime's takes 0.13 ms."""
    nb, ch, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(t)
    dt = t.dtype
    if kh * kw > DIRECT_MAX_TAPS or not 1 <= sw <= DIRECT_MAX_STRIDE:
        return None
    ylo, yhi = _interior(h, kh, sh, dh, pt, oh)
    xlo, xhi = _interior(w, kw, sw, dw, pl, ow)
    if oh - (yhi - ylo) > DIRECT_MAX_EDGES or ow - (xhi - xlo) > DIRECT_MAX_EDGES:
        return None
    lanes = _int_lanes(dt, DIRECT_LANES)
    parallel = nb * ch * oh * ow * kh * kw >= PARALLEL_MIN_WORK
    # (a max pool's padding holds the dtype's lowest finite value, as in ``emit_rows``)
    padv = tir_op.min_value(dt) if _is_max(t) else None
    # a mean divides each window's sum by its tap count, a constant per edge row / column
    mean = _is_mean(t)
    pb, pr = t.op.attrs["padding"][2:]
    include = bool(t.op.attrs.get("count_include_pad", False))

    def count_y(y):
        return kh if ylo <= y < yhi else _count(y, h, kh, sh, dh, pt, pb, include)

    def count_x(j):
        return kw if xlo <= j < xhi else _count(j, w, kw, sw, dw, pl, pr, include)

    def tree(vals):
        return _max_tree(vals) if _is_max(t) else _tree(vals, combine)

    def window(b, c, oy, j, kys, kxs, padded, col):
        if col is not None:  # the rows already combined per input column
            taps = [E.BufferLoad(col, [j * sw + (kx * dw - pl)]) for kx in kxs]
        else:
            taps = [E.BufferLoad(x, _at(x, b, c, oy * sh + (ky * dh - pt),
                                        j * sw + (kx * dw - pl))) for kx in kxs for ky in kys]
        if padded and padv is not None:
            taps.append(padv)
        return tree(taps)

    min_kh, min_w = VERTICAL_FIRST_MIN[vector_isa()]
    wide = _int_lanes(dt, WIDE_MAX_LANES[vector_isa()]) if _is_max(t) and sw == 1 else lanes

    def vector_loop(n, first, fbody, wide=wide):
        vl = wide if n >= wide else lanes
        if not dt.startswith("float"):  # the widest vector a row fills, down to 8 lanes
            vl = wide
            while vl > DIRECT_LANES and vl > n:
                vl //= 2
        return overlapping_vectors(ctx, first, n, vl, fbody)

    def row(b, c, oy, kys, cy):
        rpad = len(kys) < kh
        # (one row per window: nothing to combine first)
        first = sw > 1 and VERTICAL_FIRST and len(kys) > 1 and kh >= min_kh and w >= min_w
        col = decl_buffer((w,), dt, "pool_col") if first else None

        def put(j, kxs=tuple(range(kw)), cpad=False, cx=kw):
            v = window(b, c, oy, j, kys, kxs, rpad or cpad, col)
            if mean:
                v = v / E.FloatImm(dt, float(cy * cx))
            idx = _at(out, b, c, oy, j)
            return S.BufferStore(out, v if epi is None else epilogue_value(epi, out, idx, v), idx)

        def edge(j):
            return put(_i(j), _taps(j, w, kw, sw, dw, pl), True, count_x(j))

        parts = []
        if col is not None:  # each input column's taps down the window's rows, once
            parts += vector_loop(w, 0, lambda j: S.BufferStore(col, tree([E.BufferLoad(
                x, _at(x, b, c, oy * sh + (ky * dh - pt), j)) for ky in kys]), [j]))
        parts += [edge(j) for j in range(xlo)]
        slanes, scols = STRIDED_MAX_LANES[vector_isa()]
        strided = _is_max(t) and sw > 1 and col is None and xhi - xlo >= scols
        parts += vector_loop(xhi - xlo, xlo, put, _int_lanes(dt, slanes) if strided else wide)
        parts += [edge(j) for j in range(xhi, ow)]
        body = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
        if col is not None:
            body = S.Allocate(col.data, dt, [w], True, S.DeclBuffer(col, body))
        return body

    def plane(idx):
        b, c = idx

        def edge(y):
            return row(b, c, _i(y), _taps(y, h, kh, sh, dh, pt), count_y(y))

        parts = [edge(y) for y in range(ylo)]
        if yhi > ylo:
            v = ctx.fresh("oy")
            parts.append(S.For(v, ylo, yhi - ylo, S.ForKind.SERIAL,
                               row(b, c, v, range(kh), kh)))
        parts += [edge(y) for y in range(yhi, oh)]
        return parts[0] if len(parts) == 1 else S.SeqStmt(parts)

    return _outer_loops(ctx, [nb, ch], parallel, plane)


def _partial_row(n: int, lanes: int) -> bool:
    """Does a row of ``n`` outputs end in a partial vector in the direct form
    (``common.overlapping_vectors``: vectors of ``lanes``, of 4 under ``lanes``, a scalar loop
    under 4)?"""
    vl = lanes if n >= lanes else (4 if n >= 4 else 0)
    return vl == 0 or n % vl != 0


def emit_flat(ctx, t, out, x, combine) -> S.Stmt | None:
    """Pooling stage ``t`` whose ``k x k`` / ``k`` windows tile its unpadded input plane
    (``FLAT``; a last row or column no window reads left out): per plane, the input rows of
    each output row combined into a temporary of ``oh`` rows of the ``k * ow`` columns the
    windows read (whole vectors along each row), then every output of the plane at once as a
    flat row, output ``q`` combining the temporary's ``k`` values from ``k * q``. None where
    the windows do not tile the plane, it is too wide (``FLAT_MAX_COLUMNS``), its temporary
    too large, or its output rows are whole vectors (``_partial_row``: nothing to gain)."""
    nb, ch, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(t)
    pb, pr = (int(p) for p in t.op.attrs["padding"][2:])
    dt = t.dtype
    lanes = _int_lanes(dt, DIRECT_LANES)
    if not (kh == sh and kw == sw and sw >= 2 and dh == dw == 1 and
            pt == pl == pb == pr == 0 and ow * sw <= w and oh * sh <= h and
            ow <= FLAT_MAX_COLUMNS and oh * ow * sw <= FLAT_MAX_ROW_FLOATS and
            _partial_row(ow, lanes)):
        return None
    wr = ow * sw  # the columns the windows read
    parallel = nb * ch * oh * ow * kh * kw >= PARALLEL_MIN_WORK
    xf, of = ctx.flat_view(x), ctx.flat_view(out)

    def tree(vals):
        return _max_tree(vals) if _is_max(t) else _tree(vals, combine)

    def plane(idx):
        b, c = idx
        src = (b * ch + c) * (h * w)
        dst = (b * ch + c) * (oh * ow)
        rows = decl_buffer((oh * wr,), dt, "pool_plane")
        oy = ctx.fresh("oy")
        down = S.For(oy, _i(0), _i(oh), S.ForKind.SERIAL, S.SeqStmt(overlapping_vectors(
            ctx, 0, wr, lanes, lambda j: S.BufferStore(rows, tree([E.BufferLoad(
                xf, [src + (oy * sh + ky) * w + j]) for ky in range(kh)]), [oy * wr + j]))))

        def across(q):
            v = tree([E.BufferLoad(rows, [q * sw + kx]) for kx in range(kw)])
            if _is_mean(t):
                v = v / E.FloatImm(dt, float(kh * kw))
            return S.BufferStore(of, v, [dst + q])

        body = S.SeqStmt([down, *overlapping_vectors(ctx, 0, oh * ow, lanes, across)])
        return S.Allocate(rows.data, dt, [oh * wr], True, S.DeclBuffer(rows, body))

    return _outer_loops(ctx, [nb, ch], parallel, plane)


def emit_rows(ctx, t, out, x, ident, combine) -> S.Stmt:
    """Pooling stage ``t`` (input buffer ``x``) into ``out`` row by row through temporaries."""
    nb, ch, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(t)
    dt, lanes = t.dtype, _lanes(t.dtype)
    need = (ow - 1) * sw + (kw - 1) * dw + 1  # padded columns the windows read
    wp = max(need, pl + w)
    hw = (ow - 1) * sw + 1  # columns of the horizontal pass (all start columns)
    wvalid = max(0, min(w, wp - pl))
    parallel = nb * ch * oh * ow * kh * kw >= PARALLEL_MIN_WORK
    # a max pool's padding holds the dtype's lowest finite value (TVM's topi), not the
    # reduction's identity (-inf): a window over padding and -inf inputs gives that value
    padv = tir_op.min_value(dt) if _is_max(t) else None
    pb, pr = t.op.attrs["padding"][2:]
    include = bool(t.op.attrs.get("count_include_pad", False))

    def mean(v, oy, j):  # (a mean: the window's sum over its tap count)
        if not _is_mean(t):
            return v
        cnt = _count_expr(oy, h, kh, sh, dh, pt, pb, include) * \
            _count_expr(j, w, kw, sw, dw, pl, pr, include)
        return v / E.Cast(dt, cnt)

    def row(idx):
        b, c, oy = idx
        vrow = decl_buffer((wp,), dt, "pool_vrow")
        parts = [_vector_inner(ctx, wp, lanes, lambda j: S.BufferStore(vrow, ident, [j]))]
        for ky in range(kh):
            iy = oy * sh + (ky * dh - pt)
            upd = _vector_inner(ctx, wvalid, lanes, lambda j, iy=iy: S.BufferStore(
                vrow, combine(E.BufferLoad(vrow, [j + pl]),
                              E.BufferLoad(x, _at(x, b, c, iy, j))),
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
                out, mean(window(j), oy, j), _at(out, b, c, oy, j))))
            body = S.SeqStmt(parts)
        else:
            hrow = decl_buffer((hw,), dt, "pool_hrow")
            parts.append(_vector_inner(ctx, hw, lanes, lambda j: S.BufferStore(
                hrow, window(j), [j])))
            parts.append(_vector_inner(ctx, ow, lanes, lambda j: S.BufferStore(
                out, mean(E.BufferLoad(hrow, [j * sw]), oy, j), _at(out, b, c, oy, j))))
            body = S.Allocate(hrow.data, dt, [hw], True, S.DeclBuffer(hrow, S.SeqStmt(parts)))
        return S.Allocate(vrow.data, dt, [wp], True, S.DeclBuffer(vrow, body))

    return _outer_loops(ctx, [nb, ch, oh], parallel, row)


def bins_supported(t) -> bool:
    """Is adaptive stage ``t`` small enough to write its cells out one by one?"""
    ybins, xbins = t.op.attrs["bins"]
    taps = len(ybins) * sum(hi - lo for lo, hi in xbins)
    return taps <= BINS_MAX_TAPS


def emit_bins(ctx, t, out, x, combine) -> S.Stmt:
    """Adaptive pooling stage ``t`` (attrs ``bins``: the static input range of each output row
    and column) into ``out``. Per (image, channel) plane and output row, the input rows of the
    row's bin are combined into a row temporary with unit-stride vectors (a one-row bin reads
    the input itself); then each output cell combines its bin's columns of that row, written
    out one by one. Every tap is read once per bin; the generic reduction instead masked a
    window as wide as the widest bin, with index arithmetic per tap."""
    ybins, xbins = t.op.attrs["bins"]
    nb, ch = _shape(x)[:2]
    h, w = _plane(x)
    dt = t.dtype
    parallel = nb * ch * h * w >= PARALLEL_MIN_WORK

    def plane(idx):
        b, c = idx
        row = decl_buffer((w,), dt, "pool_bin_row")
        parts = []
        for oy, (ylo, yhi) in enumerate(ybins):
            if yhi - ylo > 1:
                def fill(j, rows=range(ylo, yhi)):
                    loads = [E.BufferLoad(x, _at(x, b, c, _i(y), j)) for y in rows]
                    return S.BufferStore(row, _tree(loads, combine), [j])

                parts += overlapping_vectors(ctx, 0, w, DIRECT_LANES, fill)

                def src(j):
                    return E.BufferLoad(row, [_i(j)])
            else:
                def src(j, y=ylo):
                    return E.BufferLoad(x, _at(x, b, c, _i(y), _i(j)))
            for ox, (xlo, xhi) in enumerate(xbins):
                v = _tree([src(j) for j in range(xlo, xhi)], combine)
                if _is_mean(t):
                    v = v / E.FloatImm(dt, float((yhi - ylo) * (xhi - xlo)))
                parts.append(S.BufferStore(out, v, _at(out, b, c, _i(oy), _i(ox))))
        body = S.SeqStmt(parts)
        return S.Allocate(row.data, dt, [w], True, S.DeclBuffer(row, body))

    return _outer_loops(ctx, [nb, ch], parallel, plane)
