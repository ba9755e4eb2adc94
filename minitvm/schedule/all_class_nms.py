"""Native kernel of greedy non-maximum suppression, per batch and class, one thread, with the
arithmetic and candidate order of the library a model came from (``rules``):

- ``"onnxruntime"``: ONNX's NonMaxSuppression (TVM's ``vision.all_class_non_max_suppression``,
  output format "onnx") as ONNX Runtime runs it. Each box's extent is the min / max of its two
  corners (``lhs >= rhs`` picks, so a NaN corner is kept as ORT keeps it) or centre -+ half
  size, its area ``(y max - y min) * (x max - x min)`` or ``width * height``. Candidates (score
  above the threshold, or every box where there is none) go into a heap in box order, built and
  popped exactly as libstdc++'s ``std::priority_queue`` does (``make_heap``; ``pop_heap``: the
  hole sinks to a leaf along the larger child, then the last element rises), ordered by score
  then the lower box: so NaN scores, which order nothing, come out where ORT's come out. A
  candidate is suppressed by a kept box when the intersection's extents and area are positive
  and ``inter / (area + kept area - inter) > iou_threshold`` (float32; a NaN extent of either
  box makes the intersection NaN, so no overlap: ORT's build behaves so, whichever box it is).
- ``"torchvision"``: ``torchvision.ops.nms`` (boxes [x1, y1, x2, y2] as given): candidates in
  a stable descending sort of the scores (NaN first, ties: the lower box), the overlap
  ``max(0, xx2 - xx1) * max(0, yy2 - yy1)`` against ``area_i + area_j - inter``, suppressed when
  the ratio, widened to float64, exceeds the float64 threshold.

At most ``max_output_boxes_per_class`` (negative: no limit) kept a class. Kept boxes are
appended as rows (batch, class, box) to a table [B * C * N + 1, 3] int64, zero past the rows,
whose last row holds the count: the op's outputs are slices of it (``topi.all_class_nms``).
Relax calls the same statements as a PrimFunc (``nms_prim_func``).
"""

from __future__ import annotations

from ..ir.op import OpPattern
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from ..topi.all_class_nms import NMS_TABLE_TAG
from .common import LowerCtx, allocated, const_int, imm
from .lower import Rule, register_rule

__all__ = ["RULES", "emit_nms", "nms_prim_func"]

RULES = ("onnxruntime", "torchvision")
# the state's slots: rows written, heap size, kept in this class, no kept box overlaps, and
# the heap adjustment's hole, top, second child, length, value and stop flag
COUNT, M, KEPT, OK, HOLE, TOP, SEC, LEN, VAL, DONE, WIDTH, LEFT, RIGHT = range(13)
GEO = 5  # per box: x min, x max, y min, y max, area
LANES = 16  # kept boxes one candidate is checked against at once


def _f(v: float) -> E.PrimExpr:
    return E.const(float(v), "float32")


def _i32(v) -> E.PrimExpr:
    return E.as_index(v, "int32")


def _cmax(a, b):
    """C++'s ``std::max(a, b)``: ``a < b ? b : a`` (NaN operands as C++ leaves them)."""
    return E.Select(E.LT(a, b), b, a)


def _cmin(a, b):
    """C++'s ``std::min(a, b)``: ``b < a ? b : a``."""
    return E.Select(E.LT(b, a), b, a)


def _geometry(bx, geo, src, i, center: bool, rules: str) -> S.Stmt:
    """``geo[i] = (x min, x max, y min, y max, area)`` of box ``src`` (flat [.., 4] view) as the
    rules derive them (see the module)."""

    def box(k):
        return E.BufferLoad(bx, [src * imm(4) + imm(k)])

    if rules == "torchvision":
        x0, y0, x1, y1 = (box(k) for k in range(4))
        vals = [x0, x1, y0, y1, (x1 - x0) * (y1 - y0)]
    elif center:
        hw, hh = box(2) / _f(2.0), box(3) / _f(2.0)
        vals = [box(0) - hw, box(0) + hw, box(1) - hh, box(1) + hh, box(2) * box(3)]
    else:
        def max_min(lhs, rhs):  # ORT's MaxMin: lhs >= rhs decides
            ge = E.GE(lhs, rhs)
            return E.Select(ge, rhs, lhs), E.Select(ge, lhs, rhs)

        (x0, x1), (y0, y1) = max_min(box(1), box(3)), max_min(box(0), box(2))
        vals = [x0, x1, y0, y1, (y1 - y0) * (x1 - x0)]
    return S.SeqStmt([S.BufferStore(geo, v, [i * imm(GEO) + imm(k)]) for k, v in
                      enumerate(vals)])


def suppresses(cand, kept, iou_threshold, rules: str) -> E.PrimExpr:
    """Does kept box ``kept`` suppress candidate ``cand`` (their geometry: x min, x max, y min,
    y max, area) under the rules (see the module)."""
    if rules == "torchvision":
        zero = _f(0.0)
        w = _cmax(zero, _cmin(kept[1], cand[1]) - _cmax(kept[0], cand[0]))
        h = _cmax(zero, _cmin(kept[3], cand[3]) - _cmax(kept[2], cand[2]))
        inter = w * h
        ovr = inter / (kept[4] + cand[4] - inter)
        return E.GT(E.Cast("float64", ovr), iou_threshold)
    # a NaN extent of either box gives a NaN intersection (no overlap), as ORT's build does
    ix0, ix1 = E.Max(cand[0], kept[0]), E.Min(cand[1], kept[1])
    iy0, iy1 = E.Max(cand[2], kept[2]), E.Min(cand[3], kept[3])
    inter = (ix1 - ix0) * (iy1 - iy0)
    union = cand[4] + kept[4] - inter
    overlap = E.And(E.And(E.Not(E.LE(ix1, ix0)), E.Not(E.LE(iy1, iy0))),
                    E.Not(E.LE(inter, _f(0.0))))
    return E.And(overlap, E.GT(inter / union, iou_threshold))


def emit_nms(ctx, boxes, scores, max_out, iou, score_thr, table, center: bool,
             rules: str = "onnxruntime", output: str = "onnx") -> S.Stmt:
    """Statements writing the selection table of ``boxes`` [B, N, 4] and ``scores`` [B, C, N]
    into ``table`` (see the module); ``max_out``, ``iou`` and ``score_thr`` are one-element
    buffers (``score_thr`` None: no threshold; ``iou`` a Python float: a float64 constant).
    ``output`` "onnx": ``table`` [B * C * N + 1, 3]; "tensorflow": [B, C * N + 1, 2], each
    batch's (class, box) rows across its classes in a stable descending sort of their scores
    (NaN last), zero past them, the batch's count in its last row."""
    if rules not in RULES:
        raise ValueError(f"NMS rules must be one of {RULES}, got {rules!r}")
    if output not in ("onnx", "tensorflow"):
        raise ValueError(f"NMS output must be onnx or tensorflow, got {output!r}")
    tf = output == "tensorflow"
    dims = [const_int(d) if const_int(d) is not None else d for d in scores.shape]
    nb, nc, n = (_i32(d) for d in dims)
    bx, sc, out = ctx.flat_view(boxes), ctx.flat_view(scores), ctx.flat_view(table)
    slots = dims[2] + 1 if isinstance(dims[2], int) else n + imm(1)
    heap = decl_buffer((slots,), "int32", "nms_heap")
    # the kept boxes' geometry, field-major (a vector of kept boxes per load), a vector's
    # worth of slack past the last
    kslots = slots + LANES if isinstance(slots, int) else slots + imm(LANES)
    kgeo = decl_buffer((kslots * GEO if isinstance(kslots, int) else kslots * imm(GEO),),
                       "float32", "nms_kept_geo")
    hit = decl_buffer((LANES,), "int32", "nms_hit")
    geo = decl_buffer((slots * GEO if isinstance(slots, int) else slots * imm(GEO),),
                      "float32", "nms_geo")
    st = decl_buffer((16,), "int32", "nms_state", scope="local")
    # a heap adjustment's steps: the heap's depth, bounded (a symbolic count: any int32)
    levels = (max(1, int(dims[2]).bit_length()) if isinstance(dims[2], int) else 31) + 1

    def get(slot):
        return E.BufferLoad(st, [imm(slot)])

    def put(slot, v):
        return S.BufferStore(st, v, [imm(slot)])

    lim64 = E.BufferLoad(ctx.flat_view(max_out), [imm(0)])
    limit = E.Select(E.LT(lim64, E.const(0, lim64.dtype)), n,
                     E.Cast("int32", E.Min(lim64, E.Cast(lim64.dtype, n))))
    iou_thr = (E.const(float(iou), "float64") if isinstance(iou, float)
               else E.BufferLoad(ctx.flat_view(iou), [imm(0)]))
    b, c, j = ctx.fresh("b"), ctx.fresh("c"), ctx.fresh("j")
    plane = b * nc + c

    def score(i):
        return E.BufferLoad(sc, [plane * n + i])

    def later(p, q):
        """Is candidate ``p`` taken after ``q`` (the heap's ``p < q``)?"""
        sp, sq = score(p), score(q)
        if rules == "onnxruntime":  # ORT's operator<: a lower score, then the higher box
            return E.Or(E.LT(sp, sq), E.And(E.EQ(sp, sq), E.GT(p, q)))
        # a stable descending sort with NaN the largest: a total order
        pn, qn = E.NE(sp, sp), E.NE(sq, sq)
        same = E.Or(E.And(pn, qn), E.EQ(sp, sq))
        lower = E.Or(E.And(qn, E.Not(pn)), E.LT(sp, sq))
        return E.Or(lower, E.And(same, E.GT(p, q)))

    def at(k):
        return E.BufferLoad(heap, [k])

    def adjust(hole, length, value) -> S.Stmt:
        """libstdc++'s ``__adjust_heap``: the hole at ``hole`` sinks to a leaf along the larger
        child, then ``value`` rises from it (``__push_heap``) no higher than ``hole``."""
        lv, lu = ctx.fresh("lv"), ctx.fresh("lu")
        sec = get(SEC)
        sink = S.IfThenElse(E.LT(sec, E.FloorDiv(get(LEN) - imm(1), imm(2))), S.SeqStmt([
            put(SEC, (sec + imm(1)) * imm(2)),
            S.IfThenElse(later(at(sec), at(sec - imm(1))), put(SEC, sec - imm(1))),
            S.BufferStore(heap, at(sec), [get(HOLE)]), put(HOLE, sec)]))
        last_child = S.IfThenElse(
            E.And(E.EQ(E.FloorMod(get(LEN), imm(2)), imm(0)),
                  E.EQ(sec, E.FloorDiv(get(LEN) - imm(2), imm(2)))),
            S.SeqStmt([put(SEC, (sec + imm(1)) * imm(2)),
                       S.BufferStore(heap, at(sec - imm(1)), [get(HOLE)]),
                       put(HOLE, sec - imm(1))]))
        parent = E.FloorDiv(get(HOLE) - imm(1), imm(2))
        rise = S.IfThenElse(E.EQ(get(DONE), imm(0)), S.IfThenElse(
            E.GT(get(HOLE), get(TOP)), S.IfThenElse(
                later(at(parent), get(VAL)),
                S.SeqStmt([S.BufferStore(heap, at(parent), [get(HOLE)]), put(HOLE, parent)]),
                put(DONE, imm(1))), put(DONE, imm(1))))
        return S.SeqStmt([
            put(VAL, value), put(LEN, length), put(HOLE, hole), put(TOP, get(HOLE)),
            put(SEC, get(HOLE)), S.For(lv, imm(0), imm(levels), S.ForKind.SERIAL, sink),
            last_child, put(DONE, imm(0)),
            S.For(lu, imm(0), imm(levels), S.ForKind.SERIAL, rise),
            S.BufferStore(heap, get(VAL), [get(HOLE)])])

    # ---- the candidates (above the threshold) in box order, made a heap (``make_heap``)
    add = S.SeqStmt([S.BufferStore(heap, j, [get(M)]), put(M, get(M) + imm(1))])
    if score_thr is not None:
        thr = E.BufferLoad(ctx.flat_view(score_thr), [imm(0)])
        add = S.IfThenElse(E.GT(score(j), thr), add)
    h = ctx.fresh("h")
    first = E.FloorDiv(get(M) - imm(2), imm(2))
    heapify = S.For(h, imm(0), first + imm(1), S.ForKind.SERIAL,
                    adjust(first - h, get(M), at(first - h)))
    gather = S.SeqStmt([put(M, imm(0)), S.For(j, imm(0), n, S.ForKind.SERIAL, add), heapify])

    # ---- greedy selection, taking the top candidate while boxes are wanted
    # a candidate against every kept box of its class, a vector of them at a time: lanes
    # that suppress it mark ``hit``
    t, box = ctx.fresh("t"), ctx.fresh("box")
    vo, ln, l0, l1 = ctx.fresh("vo"), ctx.fresh("ln"), ctx.fresh("l0"), ctx.fresh("l1")
    mine = [E.BufferLoad(geo, [box * imm(GEO) + imm(f)]) for f in range(GEO)]
    k = vo * imm(LANES) + ln
    theirs = [E.BufferLoad(kgeo, [imm(f) * _i32(kslots) + k]) for f in range(GEO)]
    flag = E.Select(E.And(E.LT(k, get(KEPT)), suppresses(mine, theirs, iou_thr, rules)),
                    imm(1), imm(0))
    check = S.SeqStmt([
        S.For(l0, imm(0), imm(LANES), S.ForKind.VECTORIZED, S.BufferStore(hit, imm(0), [l0])),
        S.For(vo, imm(0), E.FloorDiv(get(KEPT) + imm(LANES - 1), imm(LANES)),
              S.ForKind.SERIAL, S.For(ln, imm(0), imm(LANES), S.ForKind.VECTORIZED,
                                      S.BufferStore(hit, E.Max(E.BufferLoad(hit, [ln]), flag),
                                                    [ln]))),
        put(OK, imm(1)),
        S.For(l1, imm(0), imm(LANES), S.ForKind.SERIAL, S.IfThenElse(
            E.NE(E.BufferLoad(hit, [l1]), imm(0)), put(OK, imm(0))))])
    row = get(COUNT) * imm(3)
    cn = nc * n
    if tf:  # a batch's kept boxes as keys class * N + box, sorted when the batch is done
        perm = decl_buffer((cn + imm(1),), "int32", "nms_perm")
        tmp = decl_buffer((cn + imm(1),), "int32", "nms_merge")
        record = [S.BufferStore(perm, c * n + box, [get(COUNT)])]
    else:
        record = [S.BufferStore(out, E.Cast("int64", b), [row]),
                  S.BufferStore(out, E.Cast("int64", c), [row + imm(1)]),
                  S.BufferStore(out, E.Cast("int64", box), [row + imm(2)])]
    keep = S.SeqStmt([
        *(S.BufferStore(kgeo, mine[f], [imm(f) * _i32(kslots) + get(KEPT)]) for f in range(GEO)),
        put(KEPT, get(KEPT) + imm(1)), *record, put(COUNT, get(COUNT) + imm(1))])
    # ``pop_heap``: the last element re-enters the heap of one less through the top's hole
    pop = S.SeqStmt([
        put(M, get(M) - imm(1)),
        S.IfThenElse(E.GT(get(M), imm(0)), adjust(imm(0), get(M), at(get(M))))])
    one = S.IfThenElse(E.And(E.LT(get(KEPT), limit), E.GT(get(M), imm(0))), S.LetStmt(
        box, at(imm(0)), S.SeqStmt([check, S.IfThenElse(E.EQ(get(OK), imm(1)), keep), pop])))
    select = S.SeqStmt([put(KEPT, imm(0)), S.For(t, imm(0), n, S.ForKind.SERIAL, one)])
    g = ctx.fresh("g")
    per_image = [
        S.For(g, imm(0), n, S.ForKind.SERIAL, _geometry(bx, geo, b * n + g, g, center, rules)),
        S.For(c, imm(0), nc, S.ForKind.SERIAL, S.SeqStmt([gather, select]))]
    if tf:
        per_image = [put(COUNT, imm(0)), *per_image,
                     _sorted_rows(ctx, sc, b * cn, perm, tmp, get, put, n, cn,
                                  lambda k: (b * (cn + imm(1)) + k) * imm(2), out,
                                  levels=(max(1, int(const_int(cn)).bit_length()) + 1
                                          if const_int(cn) is not None else 32))]
    classes = S.For(b, imm(0), nb, S.ForKind.SERIAL, S.SeqStmt(per_image))

    z = ctx.fresh("z")
    size = nb * (cn + imm(1)) * imm(2) if tf else (nb * cn + imm(1)) * imm(3)
    zero = S.For(z, imm(0), size, S.ForKind.SERIAL, S.BufferStore(out, E.const(0, "int64"), [z]))
    last = [] if tf else [S.BufferStore(out, E.Cast("int64", get(COUNT)), [nb * cn * imm(3)])]
    body = S.SeqStmt([zero, put(COUNT, imm(0)), classes, *last])
    for buf in (heap, kgeo, hit, geo, st) + ((perm, tmp) if tf else ()):
        body = allocated(buf, body)
    return body


def _sorted_rows(ctx, sc, base, perm, tmp, get, put, n, cn, row_at, out, levels) -> S.Stmt:
    """A batch's ``COUNT`` kept keys ``perm`` (class * N + box) in a stable descending sort of
    their scores (``sc[base + key]``, NaN last: a bottom-up merge sort through ``tmp``), written
    as (class, box) rows at ``row_at(k)``, the count in the row after the last class's."""
    k_all = get(COUNT)

    def score(key):
        return E.BufferLoad(sc, [base + key])

    def better(p, q):  # p strictly before q: a higher score, or a number before NaN
        sp, sq = score(p), score(q)
        return E.Or(E.GT(sp, sq), E.And(E.NE(sq, sq), E.EQ(sp, sp)))

    lv, q, kk, t2 = ctx.fresh("lv"), ctx.fresh("q"), ctx.fresh("kk"), ctx.fresh("t")
    w = get(WIDTH)
    lo = q * w * imm(2)
    mid, hi = E.Min(lo + w, k_all), E.Min(lo + w * imm(2), k_all)
    left, right = E.BufferLoad(perm, [get(LEFT)]), E.BufferLoad(perm, [get(RIGHT)])
    take_l = S.SeqStmt([S.BufferStore(tmp, left, [lo + kk]), put(LEFT, get(LEFT) + imm(1))])
    take_r = S.SeqStmt([S.BufferStore(tmp, right, [lo + kk]), put(RIGHT, get(RIGHT) + imm(1))])
    pick = S.IfThenElse(E.LT(get(RIGHT), hi), S.IfThenElse(
        E.LT(get(LEFT), mid), S.IfThenElse(better(right, left), take_r, take_l), take_r), take_l)
    merge = S.SeqStmt([put(LEFT, lo), put(RIGHT, mid),
                       S.For(kk, imm(0), hi - lo, S.ForKind.SERIAL, pick)])
    level = S.IfThenElse(E.LT(w, k_all), S.SeqStmt([
        S.For(q, imm(0), E.FloorDiv(k_all + w * imm(2) - imm(1), w * imm(2)), S.ForKind.SERIAL,
              merge),
        S.For(t2, imm(0), k_all, S.ForKind.SERIAL,
              S.BufferStore(perm, E.BufferLoad(tmp, [t2]), [t2])),
        put(WIDTH, w * imm(2))]))
    r = ctx.fresh("r")
    key = E.BufferLoad(perm, [r])
    write = S.SeqStmt([
        S.BufferStore(out, E.Cast("int64", E.FloorDiv(key, n)), [row_at(r)]),
        S.BufferStore(out, E.Cast("int64", E.FloorMod(key, n)), [row_at(r) + imm(1)])])
    return S.SeqStmt([put(WIDTH, imm(1)), S.For(lv, imm(0), imm(levels), S.ForKind.SERIAL, level),
                      S.For(r, imm(0), k_all, S.ForKind.SERIAL, write),
                      S.BufferStore(out, E.Cast("int64", k_all), [row_at(cn)])])


# ---------------------------------------------------------------------------------- Relay
def _supported(t, options=None) -> bool:
    return isinstance(t.op, ComputeOp) and t.op.tag == NMS_TABLE_TAG


def _emit(ctx, t, out, bodies) -> S.Stmt:
    a = t.op.attrs
    bufs = [ctx.buf[id(s)] for s in a["operands"]]
    thr = bufs[4] if len(bufs) > 4 else None  # the score threshold, where there is one
    return emit_nms(ctx, *bufs[:4], thr, out, a["center_point_box"], a["rules"],
                    a.get("output", "onnx"))


register_rule(NMS_TABLE_TAG, Rule("all-class NMS: sorted candidates, greedy", "all_class_nms",
                                  _supported, _emit, symbolic=True, materialize=True))


# ---------------------------------------------------------------------------------- Relax
def nms_prim_func(batch, classes, boxes, center: bool, has_score_threshold: bool,
                  rules: str = "onnxruntime", iou: float | None = None) -> PrimFunc:
    """``(boxes, scores, max_out, [iou,] [score_threshold,] table)``: the kernel as a
    PrimFunc (``iou`` given: a constant, no parameter); the dims may be tir Vars."""
    bx = decl_buffer((batch, boxes, 4), "float32", "boxes")
    sc = decl_buffer((batch, classes, boxes), "float32", "scores")
    mo = decl_buffer((1,), "int64", "max_out")
    iou_buf = decl_buffer((1,), "float32", "iou") if iou is None else None
    thr = decl_buffer((1,), "float32", "score_threshold") if has_score_threshold else None
    rows = batch * classes * boxes
    table = decl_buffer((rows + 1, 3), "int64", "table")
    ctx = LowerCtx(own_temps=True)
    body = emit_nms(ctx, bx, sc, mo, iou_buf if iou is None else float(iou), thr, table,
                    center, rules)
    for view in reversed(ctx.ws_views):
        body = S.DeclBuffer(view, body)
    params = [bx, sc, mo] + [b for b in (iou_buf, thr) if b is not None] + [table]
    return PrimFunc(params, body, attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})
