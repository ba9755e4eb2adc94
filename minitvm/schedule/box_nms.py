"""Native kernels of ``vision.get_valid_counts`` and ``vision.non_max_suppression`` (tags
``get_valid_counts`` / ``box_nms``, ``topi.box_nms``): one thread, a batch at a time, every
dim possibly symbolic (one kernel for every batch and box count), with the numpy reference's
arithmetic and order (``topi.reference.vision``), so the two agree bit for bit:

- valid counts: the rows whose score is above the threshold (cast to the boxes' type, as numpy
  compares a float32 with a Python float) and, with ``id_index`` >= 0, whose id is >= 0, in row
  order.
- NMS: the first ``valid_count`` rows (clamped to [0, N]) in a stable descending sort of their
  scores (a bottom-up merge sort: ties keep row order, as Python's ``sorted``), cut to ``top_k``;
  each in turn is kept unless ``max_output_size`` (>= 0) rows are kept already or a kept row
  (of the same id, unless ``force_suppress`` or ``id_index`` < 0) overlaps it by IoU >
  ``iou_threshold``. The IoU is the reference's ``iou``: corners sorted per axis (``a < b``
  picks), ``max(0, min(hi) - max(lo))`` per side (Python's ``min`` / ``max``: the first
  unless the second is strictly less / greater), ``(area + area) - inter``, 0 where that union
  is <= 0. The loops carry ``EXACT_FLOAT``: no multiply-add contraction.

Each writes a row table [B, N + 1] int32: the source rows of the op's output in order, -1
after, the count last (NMS: the kept rows packed, or, ``packed`` False, each candidate at its
rank and -1 where it was suppressed).
"""

from __future__ import annotations

from ..codegen.llvm.stmt import EXACT_FLOAT
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.box_nms import BOX_NMS_TAG, VALID_COUNTS_TAG
from .common import allocated, const_int, imm
from .lower import Rule, register_rule

__all__ = ["emit_valid_counts", "emit_box_nms"]

# the state's slots: rows counted / kept, candidates, the kept limit, no kept row overlaps,
# and the merge sort's width and run heads
COUNT, M, LIMIT, OK, WIDTH, LEFT, RIGHT = range(7)
GEO = 5  # per box: x lo, x hi, y lo, y hi, area
LEVELS_SYMBOLIC = 32  # merge passes of a symbolic box count (int32 rows: at most 31 needed)


def _i32(d) -> E.PrimExpr:
    c = const_int(d)
    if c is not None:
        return imm(c)
    return d if d.dtype == "int32" else E.Cast("int32", d)


def _exact(body: S.Stmt, ctx) -> S.Stmt:
    """``body`` in a one-trip loop annotated ``EXACT_FLOAT`` (the code generator's scope for
    float flags)."""
    return S.For(ctx.fresh("exact"), imm(0), imm(1), S.ForKind.SERIAL, body,
                 annotations={EXACT_FLOAT: True})


class _State:
    """A small int32 scratch of named slots (``get`` / ``put``)."""

    def __init__(self, name: str):
        self.buf = decl_buffer((8,), "int32", name, scope="local")

    def get(self, slot: int) -> E.PrimExpr:
        return E.BufferLoad(self.buf, [imm(slot)])

    def put(self, slot: int, v) -> S.Stmt:
        return S.BufferStore(self.buf, v, [imm(slot)])


def emit_valid_counts(ctx, data, thr, table, id_index: int, score_index: int) -> S.Stmt:
    """Statements writing the valid rows' table of ``data`` [B, N, K] (``thr`` a one-element
    buffer) into ``table`` [B, N + 1] (see the module)."""
    nb, n, k = (_i32(d) for d in data.shape)
    x, out = ctx.flat_view(data), ctx.flat_view(table)
    st = _State("valid_state")
    b, j, p = ctx.fresh("b"), ctx.fresh("j"), ctx.fresh("p")
    level = E.Cast(data.dtype, E.BufferLoad(ctx.flat_view(thr), [imm(0)]))

    def field(f):
        return E.BufferLoad(x, [(b * n + j) * k + imm(f)])

    ok = E.GT(field(score_index), level)
    if id_index >= 0:
        ok = E.And(ok, E.GE(field(id_index), E.const(0, data.dtype)))
    base = b * (n + imm(1))
    take = S.IfThenElse(ok, S.SeqStmt([S.BufferStore(out, j, [base + st.get(COUNT)]),
                                       st.put(COUNT, st.get(COUNT) + imm(1))]))
    per_batch = S.SeqStmt([
        st.put(COUNT, imm(0)), S.For(j, imm(0), n, S.ForKind.SERIAL, take),
        S.For(p, imm(0), n - st.get(COUNT), S.ForKind.SERIAL,
              S.BufferStore(out, imm(-1), [base + st.get(COUNT) + p])),
        S.BufferStore(out, st.get(COUNT), [base + n])])
    return allocated(st.buf, _exact(S.For(b, imm(0), nb, S.ForKind.SERIAL, per_batch), ctx))


def _merge_sort(ctx, st: _State, perm, tmp, count, before, levels: int) -> S.Stmt:
    """``perm[:count]`` sorted stably by ``before(p, q)`` (p strictly first): a bottom-up merge
    sort through ``tmp``, ``levels`` passes (each a no-op once the width reaches ``count``)."""
    lv, q, kk, t = ctx.fresh("lv"), ctx.fresh("q"), ctx.fresh("kk"), ctx.fresh("t")
    w = st.get(WIDTH)
    lo = q * w * imm(2)
    mid, hi = E.Min(lo + w, count), E.Min(lo + w * imm(2), count)
    left, right = E.BufferLoad(perm, [st.get(LEFT)]), E.BufferLoad(perm, [st.get(RIGHT)])
    take_l = S.SeqStmt([S.BufferStore(tmp, left, [lo + kk]), st.put(LEFT, st.get(LEFT) + imm(1))])
    take_r = S.SeqStmt([S.BufferStore(tmp, right, [lo + kk]),
                        st.put(RIGHT, st.get(RIGHT) + imm(1))])
    pick = S.IfThenElse(E.LT(st.get(RIGHT), hi), S.IfThenElse(
        E.LT(st.get(LEFT), mid), S.IfThenElse(before(right, left), take_r, take_l), take_r),
        take_l)
    merge = S.SeqStmt([st.put(LEFT, lo), st.put(RIGHT, mid),
                       S.For(kk, imm(0), hi - lo, S.ForKind.SERIAL, pick)])
    level = S.IfThenElse(E.LT(w, count), S.SeqStmt([
        S.For(q, imm(0), E.FloorDiv(count + w * imm(2) - imm(1), w * imm(2)), S.ForKind.SERIAL,
              merge),
        S.For(t, imm(0), count, S.ForKind.SERIAL,
              S.BufferStore(perm, E.BufferLoad(tmp, [t]), [t])),
        st.put(WIDTH, w * imm(2))]))
    return S.SeqStmt([st.put(WIDTH, imm(1)),
                      S.For(lv, imm(0), imm(levels), S.ForKind.SERIAL, level)])


def _py_min(a, b):
    """Python's ``min(a, b)``: ``b`` when ``b < a``, else ``a``."""
    return E.Select(E.LT(b, a), b, a)


def _py_max(a, b):
    """Python's ``max(a, b)``: ``b`` when ``b > a``, else ``a``."""
    return E.Select(E.GT(b, a), b, a)


def _overlap(cand, kept, dtype: str) -> E.PrimExpr:
    """The reference's ``iou(cand, kept)`` of two boxes' geometry (x lo, x hi, y lo, y hi,
    area)."""
    zero = E.const(0.0, dtype)
    w = _py_max(zero, _py_min(cand[1], kept[1]) - _py_max(cand[0], kept[0]))
    h = _py_max(zero, _py_min(cand[3], kept[3]) - _py_max(cand[2], kept[2]))
    inter = w * h
    union = cand[4] + kept[4] - inter
    return E.Select(E.LE(union, zero), zero, inter / union)


def emit_box_nms(ctx, data, valid_count, indices, max_out, iou, table, attrs: dict) -> S.Stmt:
    """Statements writing NMS's row table of ``data`` [B, N, K] into ``table`` [B, N + 1] (see
    the module); ``max_out`` and ``iou`` one-element buffers."""
    del indices  # (the op's outputs gather them through the table)
    dt = data.dtype
    dims = [const_int(d) for d in data.shape]
    nb, n, k = (_i32(d) for d in data.shape)
    x, out = ctx.flat_view(data), ctx.flat_view(table)
    vc = ctx.flat_view(valid_count)
    cs, si, ii = attrs["coord_start"], attrs["score_index"], attrs["id_index"]
    top_k, packed = attrs["top_k"], attrs["packed"]
    same_id = not (attrs["force_suppress"] or ii < 0)
    slots = dims[1] if dims[1] is not None else n
    perm = decl_buffer((slots,), "int32", "nms_order")
    tmp = decl_buffer((slots,), "int32", "nms_merge")
    kept = decl_buffer((slots,), "int32", "nms_kept")
    mark = decl_buffer((slots,), "int32", "nms_mark")
    geo = decl_buffer((slots * GEO if dims[1] is not None else n * imm(GEO),), dt, "nms_geo")
    st = _State("nms_state")
    b = ctx.fresh("b")

    def field(row, f):
        return E.BufferLoad(x, [(b * n + row) * k + imm(f)])

    # ---- each valid row's geometry, as the reference's ``iou`` derives it
    g = ctx.fresh("g")
    stores = []
    for lo_f, hi_f, slot in ((cs, cs + 2, 0), (cs + 1, cs + 3, 2)):
        a0, a2 = field(g, lo_f), field(g, hi_f)
        swap = E.LT(a2, a0)  # (Python's ``sorted((a0, a2))``)
        stores += [S.BufferStore(geo, E.Select(swap, a2, a0), [g * imm(GEO) + imm(slot)]),
                   S.BufferStore(geo, E.Select(swap, a0, a2), [g * imm(GEO) + imm(slot + 1)])]

    def geo_of(row):
        return [E.BufferLoad(geo, [row * imm(GEO) + imm(f)]) for f in range(GEO)]

    mine = geo_of(g)
    stores.append(S.BufferStore(geo, (mine[1] - mine[0]) * (mine[3] - mine[2]),
                                [g * imm(GEO) + imm(4)]))
    count = E.BufferLoad(vc, [b])  # (clamped to [0, N] in its own type, then int32)
    nvalid = E.Max(E.Cast("int32", E.Min(count, E.Cast(count.dtype, n))), imm(0))
    geometry = S.For(g, imm(0), nvalid, S.ForKind.SERIAL, S.SeqStmt(stores))

    # ---- the candidates: the valid rows, best score first (stable), cut to top_k
    o = ctx.fresh("o")
    order = S.For(o, imm(0), nvalid, S.ForKind.SERIAL, S.BufferStore(perm, o, [o]))

    def before(p, q):
        return E.GT(field(p, si), field(q, si))

    levels = (max(1, dims[1]).bit_length() + 1) if dims[1] is not None else LEVELS_SYMBOLIC
    ranked = _merge_sort(ctx, st, perm, tmp, nvalid, before, levels)
    m = nvalid if top_k <= 0 else E.Min(nvalid, imm(top_k))

    # ---- greedy: each candidate against the rows kept so far
    lim = E.BufferLoad(ctx.flat_view(max_out), [imm(0)])
    limit = E.Select(E.LT(lim, E.const(0, lim.dtype)), n + imm(1),
                     E.Cast("int32", E.Min(lim, E.Cast(lim.dtype, n + imm(1)))))
    thr = E.Cast(dt, E.BufferLoad(ctx.flat_view(iou), [imm(0)]))
    t, r, cand = ctx.fresh("t"), ctx.fresh("r"), ctx.fresh("cand")
    other = E.BufferLoad(kept, [r])
    hit = E.GT(_overlap(geo_of(cand), geo_of(other), dt), thr)
    if same_id:
        hit = E.And(E.EQ(field(other, ii), field(cand, ii)), hit)
    check = S.For(r, imm(0), st.get(COUNT), S.ForKind.SERIAL,
                  S.IfThenElse(hit, st.put(OK, imm(0))))
    keep = [S.BufferStore(kept, cand, [st.get(COUNT)]), st.put(COUNT, st.get(COUNT) + imm(1)),
            S.BufferStore(mark, imm(1), [t])]
    decide = S.IfThenElse(E.LT(st.get(COUNT), st.get(LIMIT)), S.LetStmt(
        cand, E.BufferLoad(perm, [t]), S.SeqStmt([
            st.put(OK, imm(1)), check,
            S.IfThenElse(E.EQ(st.get(OK), imm(1)), S.SeqStmt(keep))])))
    z = ctx.fresh("z")
    greedy = S.SeqStmt([
        st.put(COUNT, imm(0)), st.put(M, m), st.put(LIMIT, limit),
        S.For(z, imm(0), st.get(M), S.ForKind.SERIAL, S.BufferStore(mark, imm(0), [z])),
        S.For(t, imm(0), st.get(M), S.ForKind.SERIAL, decide)])

    # ---- the table: kept rows packed, or each candidate at its rank
    p = ctx.fresh("p")
    base = b * (n + imm(1))
    if packed:
        row = E.Select(E.LT(p, st.get(COUNT)), E.BufferLoad(kept, [p]), imm(-1))
    else:
        ranked_row = E.Select(E.EQ(E.BufferLoad(mark, [p]), imm(1)),
                              E.BufferLoad(perm, [p]), imm(-1))
        row = E.Select(E.LT(p, st.get(M)), ranked_row, imm(-1))
    write = S.SeqStmt([S.For(p, imm(0), n, S.ForKind.SERIAL, S.BufferStore(out, row, [base + p])),
                       S.BufferStore(out, st.get(COUNT), [base + n])])
    per_batch = S.SeqStmt([geometry, order, ranked, greedy, write])
    body = _exact(S.For(b, imm(0), nb, S.ForKind.SERIAL, per_batch), ctx)
    for buf in (perm, tmp, kept, mark, geo, st.buf):
        body = allocated(buf, body)
    return body


# ---------------------------------------------------------------------------------- rules
def _stage_of(tag: str):
    def supported(t, options=None) -> bool:
        return isinstance(t.op, ComputeOp) and t.op.tag == tag
    return supported


def _emit_valid_counts(ctx, t, out, bodies) -> S.Stmt:
    a = t.op.attrs
    data, thr = (ctx.buf[id(s)] for s in a["operands"])
    return emit_valid_counts(ctx, data, thr, out, a["id_index"], a["score_index"])


def _emit_box_nms(ctx, t, out, bodies) -> S.Stmt:
    a = t.op.attrs
    bufs = [ctx.buf[id(s)] for s in a["operands"]]
    return emit_box_nms(ctx, *bufs, out, a)


register_rule(VALID_COUNTS_TAG, Rule("valid counts: rows above a threshold, packed",
                                     "get_valid_counts", _stage_of(VALID_COUNTS_TAG),
                                     _emit_valid_counts, symbolic=True, materialize=True))
register_rule(BOX_NMS_TAG, Rule("box NMS: a stable sort, then greedy", "box_nms",
                                _stage_of(BOX_NMS_TAG), _emit_box_nms, symbolic=True,
                                materialize=True))
