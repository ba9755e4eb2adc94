"""Schedule of resize stages (tag ``resize``: ``image.resize1d/2d/3d``, ``nn.upsampling(3d)``)
whose innermost axis is resized (NCW, NCHW, NCDHW).

The generic injective lowering computes every output element's coordinates and gathers its
taps one lane at a time (nearest 2x of 64x64x64: 0.45 ms, ONNX Runtime 0.09 ms). Here the
resize is separable: the innermost axis's taps (index and weight per output column, from the
stage's ``ResizeSpec``, so the same integer arithmetic as its compute) go to tables once per
call; per output row (parallel over rows), the outer axes' taps combine their input rows into a
row temporary with unit-stride vectors (nearest-neighbour and integer-coordinate rows read the
input row itself), and the columns are produced from that row:

- at an exact 2x along the row (nearest or linear, asymmetric / half-pixel coordinates), the
  interior columns come in pairs ``2k, 2k + 1`` that read the row at ``k + d`` with constant
  weights: both are vectors over ``k`` from unit-stride loads, stored interleaved as one 64-bit
  vector per pair (the pair's two floats packed into one ``uint64``); the few edge columns read
  the tables;
- otherwise each output vector gathers its taps through the tables.

When one other axis is upsampled (and the row is not an exact 2x, whose pair form reads the input
rows at unit stride already), the rows are resized first instead (``_width_first``): per block
of output rows along that axis (parallel over the blocks and the other outer axes), the input
rows the block reads get their columns resized once, into a temporary of a few rows, and then
each output row is a weighted sum of its taps' temporary rows (one multiply-add per tap and
output, unit-stride vectors). A bilinear 8x (deeplab's ``[1, 21, 32, 32] -> 256 x 256``)
gathers an eighth of the columns it gathered per output row.

A large output (``NONTEMPORAL_MIN_BYTES``, by host) is written with non-temporal stores, around
the caches: an 8x resize's output is mostly stores, and in a model, where the layers before
have filled the caches with data they reuse, each ordinary store first reads its line back
from memory.

A fused elementwise epilogue (``Rule.epilogue``: ``add(resize(x), y)``) is applied in the store
(``common.emit_with_epilogue``).

A PrimFunc's resize (Relax's LegalizeOps / FuseTIR blocks, raised back to TE by
``raise_blocks``) keeps its ``ResizeSpec`` as a block annotation but loses the tag and the
operand; ``raised_tag`` gives them back, so it takes this schedule as Relay's stage does rather
than the generic injective nest (per-element coordinate arithmetic and gathers).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..arith import Analyzer
from ..codegen.llvm.stmt import NONTEMPORAL_STORE
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute, transform_expr
from ..topi.image_resize import RESIZE_TAG, ResizeSpec
from .common import PARALLEL_MIN_WORK, allocated, const_int, emit_with_epilogue, host_switch, imm
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner

PAIR_LANES = 8  # column pairs per vector of the 2x form (16 output floats)
MIN_PAIRS = 8  # interior pairs a row needs for the 2x form
ROW_BYTES = 16384  # resized input rows per block of the rows-first form (about, in bytes)
MIN_TASKS = 16  # blocks of the rows-first form to share among threads (at least, when rows allow)
# Outputs of at least this many bytes are stored non-temporally (None: never). Measured on the
# Xeon that LLVM calls rocketlake (2 MB L2, one thread, thread CPU time): deeplab_head's 8x
# bilinear resize to 21 x 256 x 256 (5.5 MB, the model's output) in graph order 0.85 -> 0.50-0.58
# ms (alone, its data hot: 0.45-0.50 either way); the model, bench_model_switch, three A/B pairs
# in one process: 16.39 / 16.18 / 16.15 -> 15.74 / 15.62 / 15.72 ms (ORT 16.13). A store loop
# over 5.5 MB alone: 0.23 ms either way with cold or hot lines, 0.49 -> 0.26 ms after three
# write passes over 16 MB (lines others reuse kept in the L3 over this one's). Read at once by
# a 3x3 conv (whole graph, caches stirred between runs, three A/B pairs): 64 x 64^2 -> 128^2
# (4 MB) 5.00 / 4.46 / 4.47 -> 4.81 / 4.48 / 4.57 ms, 32 x 64^2 -> 256^2 (8 MB) 7.66 / 7.83 /
# 7.92 -> 7.94 / 7.43 / 7.35 ms: no loss beyond the noise. Not measured elsewhere: off there.
NONTEMPORAL_MIN_BYTES = {"rocketlake": 4 << 20, "avx512": None, "avx2": None}


def _static_shape(t) -> list[int] | None:
    dims = [const_int(d) for d in t.shape]
    return None if any(d is None for d in dims) else dims


def supported(t, options=None) -> bool:
    """Is ``t`` a static float resize stage that resizes its innermost axis?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != RESIZE_TAG:
        return False
    spec = t.op.attrs.get("resize")
    (x,) = t.op.attrs["operands"]
    shape, xshape = _static_shape(t), _static_shape(x)
    if spec is None or shape is None or xshape is None or len(shape) != len(xshape):
        return False
    if t.dtype not in ("float32", "float64") or x.dtype != t.dtype:
        return False
    if len(shape) - 1 not in spec.axes:
        return False
    return all(m.mode != "tf_crop_and_resize" for m in spec.maps)


def raised_tag(t) -> tuple[str, dict]:
    """``(RESIZE_TAG, {"operands": (x,)})`` for a raised stage ``t`` whose attrs hold the
    ``ResizeSpec`` of the compute it was written from (its block annotation) and whose body
    reads one tensor ``x`` of the spec's input shape; ``("", {})`` otherwise."""
    none: tuple[str, dict] = ("", {})
    spec = t.op.attrs.get("resize") if isinstance(t.op, ComputeOp) else None
    if not isinstance(spec, ResizeSpec) or t.op.reduce_axis or t.op.tag:
        return none
    read = {id(n.producer): n.producer for n in post_order(t.op.body)
            if isinstance(n, E.ProducerLoad)}
    if len(read) != 1:
        return none
    (x,) = read.values()
    shape, xshape = _static_shape(t), _static_shape(x)
    if shape is None or xshape is None or len(shape) != len(xshape) or \
            len(spec.axes) != len(spec.maps) or any(not 0 <= a < len(shape) for a in spec.axes):
        return none
    for a in range(len(shape)):
        if a in spec.axes:
            m = spec.maps[spec.axes.index(a)]
            if (const_int(m.n_in), const_int(m.n_out)) != (xshape[a], shape[a]):
                return none
        elif shape[a] != xshape[a]:
            return none
    return RESIZE_TAG, {"operands": (x,)}


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing resize stage ``t`` (and its fused epilogue) into ``out``."""
    x = ctx.buf[id(t.op.attrs["operands"][0])]
    return emit_with_epilogue(
        ctx, t, out, bodies,
        lambda buf, epi: _emit(ctx, t, buf, x, epi, buf is out and _streamed(out)),
        _static_shape(t))


def _streamed(out) -> bool:
    """Is ``out`` large enough for non-temporal stores here (``NONTEMPORAL_MIN_BYTES``)?"""
    least = host_switch(NONTEMPORAL_MIN_BYTES)
    shape = _static_shape(out)
    if least is None or shape is None:
        return False
    return int(np.prod(shape)) * np.dtype(out.dtype).itemsize >= least



# ---------------------------------------------------------------------------------- the 2x form
def _py_taps(spec, k: int, o: int) -> list[tuple[int, np.float32 | None]]:
    """``spec.taps(k, o)`` evaluated in Python (nearest / linear on a rational map), with the
    weights rounded as the generated float32 code computes them."""
    m = spec.maps[k]
    a, b, q = m.rational
    fl, rem = divmod(a * o + b, q)

    def clamp(i):
        return min(max(i, 0), m.n_in - 1)

    if spec.method == "nearest_neighbor":
        rounding = spec.rounding or ("round" if m.mode == "align_corners" else "floor")
        up = {"floor": False, "ceil": rem > 0, "round_prefer_floor": 2 * rem > q,
              "round_prefer_ceil": 2 * rem >= q,
              "round": 2 * rem > q or (2 * rem == q and fl % 2 == 1)}[rounding]
        return [(clamp(fl + int(up)), None)]
    if q == 1:
        return [(clamp(fl), None)]
    w1 = np.float32(rem) / np.float32(q)
    return [(clamp(fl), np.float32(1.0) - w1), (clamp(fl + 1), w1)]


def _pair_form(spec, k: int):
    """``(phases, lo, hi)`` when output columns ``2j + r`` (``lo <= j < hi``) read the input
    at ``j + d`` with weights that depend on ``r`` only (``phases[r]``: ``[(d, w), ...]``),
    else None."""
    m = spec.maps[k]
    if spec.method not in ("nearest_neighbor", "linear") or m.rational is None or \
            m.n_out != 2 * m.n_in or spec.comp != "float32":
        return None
    n = m.n_in
    mid = n // 2
    phases = [[(i - mid, w) for i, w in _py_taps(spec, k, 2 * mid + r)] for r in (0, 1)]

    def fits(j):
        return all(_py_taps(spec, k, 2 * j + r) == [(j + d, w) for d, w in phases[r]]
                   for r in (0, 1))

    if not fits(mid):
        return None
    lo, hi = mid, mid + 1
    while lo > 0 and fits(lo - 1):
        lo -= 1
    while hi < n and fits(hi):
        hi += 1
    return (phases, lo, hi) if hi - lo >= MIN_PAIRS else None


def _pack(lo_val, hi_val):
    """Two float32 vectors as one uint64 vector: ``lo_val`` in the low halves."""
    u64 = "uint64"
    lo = E.Cast(u64, tir_op.reinterpret("uint32", lo_val))
    hi = E.Cast(u64, tir_op.reinterpret("uint32", hi_val))
    return tir_op.bitwise_or(lo, tir_op.shift_left(hi, E.IntImm(u64, 32)))


# ---------------------------------------------------------------------------------- the kernel
def _int32(e):
    return e if e.dtype == "int32" else E.Cast("int32", e)


def _columns(ctx, spec, ow, lanes, tables, pairs, load, put_col, put_pair) -> list[S.Stmt]:
    """Statements producing the ``ow`` columns of one row from a source row (``load(c)``: its
    column ``c``): ``put_col(c, value)`` stores one column, ``put_pair(k, v0, v1)`` the
    columns ``2k, 2k + 1`` of the 2x form (``pairs``)."""
    comp = spec.comp

    def gathered(c):
        v = None
        for ib, wb in tables:
            e = load(E.BufferLoad(ib, [c]))
            e = e if e.dtype == comp else E.Cast(comp, e)
            e = e if wb is None else e * E.BufferLoad(wb, [c])
            v = e if v is None else v + e
        return v

    def put(c):
        return put_col(c, gathered(c))

    if pairs is None:
        return [_vector_inner(ctx, ow, lanes, put)]
    phases, lo, hi = pairs

    def phase(r, k):
        v = None
        for d, w in phases[r]:
            e = load(k + imm(d))
            e = e if e.dtype == comp else E.Cast(comp, e)
            e = e if w is None else e * E.FloatImm(comp, float(w))
            v = e if v is None else v + e
        return v

    def pair(k):
        return put_pair(k, phase(0, k), phase(1, k))

    parts = []
    if lo:
        parts.append(_scalar_cols(ctx, 0, 2 * lo, put))
    kv, ki = ctx.fresh("k"), ctx.fresh("ki")
    nvec = (hi - lo) // PAIR_LANES
    parts.append(S.For(kv, 0, nvec, S.ForKind.SERIAL, S.For(
        ki, 0, PAIR_LANES, S.ForKind.VECTORIZED, pair(kv * imm(PAIR_LANES) + ki + imm(lo)))))
    if (hi - lo) % PAIR_LANES:  # the last vector overlaps the one before it
        ki = ctx.fresh("ki")
        parts.append(S.For(ki, 0, PAIR_LANES, S.ForKind.VECTORIZED,
                           pair(ki + imm(hi - PAIR_LANES))))
    if 2 * hi < ow:
        parts.append(_scalar_cols(ctx, 2 * hi, ow - 2 * hi, put))
    return parts


def _width_first(spec, shape, xshape):
    """``(k, a, block, nblocks, rows)`` when the rows are best resized first: one other axis
    ``a`` (the ``k``-th resized) is upsampled, so each input row, resized once, serves several
    output rows. Output rows of axis ``a`` go in blocks of ``block`` (``nblocks`` of them);
    a block reads at most ``rows`` input rows."""
    nd = len(shape)
    outer = [a for a in spec.axes if a != nd - 1]
    if len(outer) != 1:
        return None
    a = outer[0]
    k = spec.axes.index(a)
    if spec.comp == "float32" and _pair_form(spec, spec.axes.index(nd - 1)) is not None:
        return None  # the 2x form reads the input rows at unit stride already
    n_in, n_out, ow = xshape[a], shape[a], shape[-1]
    if n_out <= n_in or spec.maps[k].rational is None or int(np.prod(shape)) >= 2 ** 31:
        return None
    # about ROW_BYTES of resized rows per block; enough blocks to share among threads
    per = max(2, min(n_in, ROW_BYTES // (ow * np.dtype(spec.comp).itemsize)))
    nblocks = -(-n_in // per)
    slices = int(np.prod(shape[:-1])) // n_out
    if slices * nblocks < MIN_TASKS:
        nblocks = max(nblocks, min(-(-MIN_TASKS // slices), max(1, n_in // 4)))
    block = -(-n_out // nblocks)
    nblocks = -(-n_out // block)
    ana = Analyzer()

    def index(o, which):
        i = ana.simplify(spec.taps(k, E.IntImm("int32", o))[which][0])
        return const_int(i)

    rows = 0
    for b in range(nblocks):
        lo, hi = index(b * block, 0), index(min(n_out, (b + 1) * block) - 1, -1)
        if lo is None or hi is None:
            return None
        rows = max(rows, hi - lo + 1)
    return k, a, block, nblocks, rows


def _emit(ctx, t, out, x, epi, stream: bool = False) -> S.Stmt:
    spec = t.op.attrs["resize"]
    shape, xshape = _static_shape(t), _static_shape(x)
    nd = len(shape)
    ow = shape[-1]
    kx = spec.axes.index(nd - 1)
    comp, dt = spec.comp, t.dtype
    outer = [(spec.axes.index(a), a) for a in range(nd - 1) if a in spec.axes]

    def finish(v):
        return v if v.dtype == dt else E.Cast(dt, v)

    def apply(idx, v):  # the epilogue at output position idx, the resize's value v
        v = finish(v)
        if epi is None:
            return v
        body, axes = epi
        e = substitute(body, dict(zip(axes, idx)))
        return transform_expr(e, lambda n: v if isinstance(n, E.BufferLoad) and
                              n.buffer is out else None)

    # per-column tables: the input column and weight of each tap
    xv = ctx.fresh("x")
    xtaps = spec.taps(kx, xv)
    tables, fills = [], []
    for j, (ix, w) in enumerate(xtaps):
        ib = decl_buffer((ow,), "int32", f"resize_ix{j}")
        wb = decl_buffer((ow,), comp, f"resize_wx{j}") if w is not None else None
        tables.append((ib, wb))
        fills.append(S.BufferStore(ib, _int32(ix), [xv]))
        if wb is not None:
            fills.append(S.BufferStore(wb, w, [xv]))
    fill = S.For(xv, 0, ow, S.ForKind.SERIAL, S.SeqStmt(fills) if len(fills) > 1 else fills[0])
    plan = _width_first(spec, shape, xshape)
    if plan is not None:
        loops = _rows_first_resized(ctx, spec, shape, x, out, plan, tables, apply,
                                    len(xtaps))
        view = None
    else:
        loops, view = _rows_last_resized(ctx, spec, shape, x, out, outer, tables, apply,
                                         len(xtaps))
    if stream:
        loops = S.AttrStmt(out.data, NONTEMPORAL_STORE, E.IntImm("int32", 1), loops)
    body = S.SeqStmt([fill, loops])
    if view is not None:
        body = S.DeclBuffer(view, body)
    for ib, wb in reversed(tables):
        body = allocated(ib, body)
        if wb is not None:
            body = allocated(wb, body)
    return body


def _rows_last_resized(ctx, spec, shape, x, out, outer, tables, apply, nxtaps):
    """Per output row: its input rows combined into one row, whose columns are resized."""
    nd, ow, iw = len(shape), shape[-1], const_int(x.shape[-1])
    kx, comp, dt = spec.axes.index(nd - 1), spec.comp, out.dtype
    lanes = _lanes(dt)
    pairs = _pair_form(spec, kx) if dt == "float32" and const_int(out.elem_offset) is not None \
        and const_int(out.elem_offset) % 2 == 0 else None
    view = None
    if pairs is not None:
        total = int(np.prod(shape))
        view = decl_buffer((total // 2,), "uint64", out.name + "_pairs", data=out.data,
                           elem_offset=const_int(out.elem_offset) // 2)

    def row(idx):
        # the outer axes' taps: the input rows this output row combines, with their weights
        per_axis = [spec.taps(k, idx[a]) for k, a in outer]
        combos = []
        for combo in itertools.product(*per_axis):
            src, w = list(idx), None
            for (_, a), (i, wt) in zip(outer, combo):
                src[a] = i
                if wt is not None:
                    w = wt if w is None else w * wt
            combos.append((src, w))
        parts, vrow = [], None
        if len(combos) == 1 and combos[0][1] is None:
            src_idx = combos[0][0]

            def load(c):
                return E.BufferLoad(x, [*src_idx, c])
        else:
            vrow = decl_buffer((iw,), comp, "resize_row")

            def vsum(c):
                v = None
                for src, w in combos:
                    e = E.BufferLoad(x, [*src, c])
                    e = e if e.dtype == comp else E.Cast(comp, e)
                    e = e if w is None else e * w
                    v = e if v is None else v + e
                return v

            parts.append(_vector_inner(ctx, iw, lanes, lambda c: S.BufferStore(
                vrow, vsum(c), [c])))

            def load(c):
                return E.BufferLoad(vrow, [c])

        def put_col(c, v):
            pos = [*idx, c]
            return S.BufferStore(out, apply(pos, v), pos)

        flat = imm(0)
        for i, d in zip(idx, shape[:-1]):
            flat = flat * imm(d) + i

        def put_pair(k, v0, v1):
            return S.BufferStore(view, _pack(apply([*idx, k * imm(2)], v0),
                                             apply([*idx, k * imm(2) + imm(1)], v1)),
                                 [flat * imm(ow // 2) + k])

        parts += _columns(ctx, spec, ow, lanes, tables, pairs, load, put_col, put_pair)
        body = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
        return allocated(vrow, body) if vrow is not None else body

    work = int(np.prod(shape)) * nxtaps
    return _outer_loops(ctx, shape[:-1], work >= PARALLEL_MIN_WORK, row, ow), view


def _rows_first_resized(ctx, spec, shape, x, out, plan, tables, apply, nxtaps):
    """Per block of output rows along the upsampled axis: the input rows the block reads,
    their columns resized (into a temporary), then each output row a weighted sum of those
    rows, unit-stride vectors along the row."""
    k, a, block, nblocks, rows = plan
    ow, n_out = shape[-1], shape[a]
    comp, dt = spec.comp, out.dtype
    lanes = _lanes(dt)
    hrows = decl_buffer((rows * ow,), comp, "resize_hrows")  # (no 2x pairs: _width_first)

    def blk(idx):
        r0 = idx[a] * imm(block)
        if n_out % block:
            extent = E.Min(imm(n_out) - r0, imm(block))
            last = r0 + extent - imm(1)
        else:
            extent, last = imm(block), r0 + imm(block - 1)
        base, count = ctx.fresh("base"), ctx.fresh("count")
        j = ctx.fresh("j")
        src = list(idx)
        src[a] = base + j

        def load(c):
            return E.BufferLoad(x, [*src, c])

        def put_col(c, v):
            return S.BufferStore(hrows, v, [j * imm(ow) + c])

        cols = _columns(ctx, spec, ow, lanes, tables, None, load, put_col, None)
        resize_rows = S.For(j, 0, count, S.ForKind.SERIAL,
                            cols[0] if len(cols) == 1 else S.SeqStmt(cols))
        # each output row: its taps' offsets into the temporary and weights, bound once
        rr = ctx.fresh("r")
        pos = list(idx)
        pos[a] = r0 + rr
        lets, taps = [], []
        for n, (i, w) in enumerate(spec.taps(k, r0 + rr)):
            iv = ctx.fresh(f"row{n}")
            lets.append((iv, (_int32(i) - base) * imm(ow)))
            wv = None
            if w is not None:
                wv = ctx.fresh(f"w{n}", comp)
                lets.append((wv, w))
            taps.append((iv, wv))

        def put(c):
            v = None
            for iv, wv in taps:
                e = E.BufferLoad(hrows, [iv + c])
                e = e if wv is None else e * wv
                v = e if v is None else v + e
            return S.BufferStore(out, apply([*pos, c], v), [*pos, c])

        row_body = _vector_inner(ctx, ow, lanes, put)
        for v, e in reversed(lets):
            row_body = S.LetStmt(v, e, row_body)
        out_rows = S.For(rr, 0, extent, S.ForKind.SERIAL, row_body)
        body = S.SeqStmt([resize_rows, out_rows])
        body = S.LetStmt(base, _int32(spec.taps(k, r0)[0][0]), S.LetStmt(
            count, _int32(spec.taps(k, last)[-1][0]) - base + imm(1), body))
        return allocated(hrows, body)

    dims = list(shape[:-1])
    dims[a] = nblocks
    slices = int(np.prod(dims))
    work = int(np.prod(shape)) * len(spec.taps(k, imm(0))) + slices * rows * ow * nxtaps
    return _outer_loops(ctx, dims, work >= PARALLEL_MIN_WORK, blk, block * ow)


def _scalar_cols(ctx, first: int, n: int, put) -> S.Stmt:
    """``put(c)`` for the columns ``[first, first + n)``, one at a time."""
    c = ctx.fresh("c")
    return S.For(c, first, n, S.ForKind.SERIAL, put(c))
