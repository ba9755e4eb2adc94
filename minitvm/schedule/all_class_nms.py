"""Native kernel of ONNX's NonMaxSuppression (TVM's ``vision.all_class_non_max_suppression``,
output format "onnx"): greedy NMS per batch and class, one thread, ONNX Runtime's arithmetic.

Per (batch, class): the boxes scoring above the threshold are gathered, sorted best first
(ties: the lower box first) by a bottom-up merge sort, then taken in turn: one is kept unless a
kept box of its class overlaps it by IoU > ``iou_threshold`` (ONNX Runtime's ``SuppressByIOU``
in float32: corners as min / max of either coordinate, or centre and size with
``center_point_box``; no overlap where the intersection or either area is not positive), at
most ``max_output_boxes_per_class`` (negative: no limit, as TVM's op) a class. Kept boxes are
appended as rows (batch, class, box) to a table [B * C * N + 1, 3] int64, zero past the rows,
whose last row holds the count: the op's two outputs are slices of it (``topi.all_class_nms``).
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

__all__ = ["emit_nms", "nms_prim_func"]

COUNT, M, KEPT, OK, POS, DONE, BEST = range(7)  # the state's slots
GEO = 5  # per box: x min, x max, y min, y max, area
LANES = 16  # kept boxes one candidate is checked against at once


def _f(v: float) -> E.PrimExpr:
    return E.const(float(v), "float32")


def _i32(v) -> E.PrimExpr:
    if isinstance(v, int):
        return imm(v)
    return v if v.dtype == "int32" else E.Cast("int32", v)


def _extent(box, lo: int, hi: int, center: bool):
    """(min, max) of one axis of a box (ONNX Runtime's corners or centre +- half size)."""
    if center:
        half = box(hi) / _f(2.0)
        return box(lo) - half, box(lo) + half
    return E.Min(box(lo), box(hi)), E.Max(box(lo), box(hi))


def _geometry(bx, geo, src, i, center: bool) -> S.Stmt:
    """``geo[i] = (x min, x max, y min, y max, area)`` of box ``src`` (flat [.., 4] view), as
    ONNX Runtime's SuppressByIOU derives them: [y1, x1, y2, x2] corners in either order, or
    [x_center, y_center, width, height]."""

    def box(k):
        return E.BufferLoad(bx, [src * imm(4) + imm(k)])

    x = _extent(box, 0, 2, True) if center else _extent(box, 1, 3, False)
    y = _extent(box, 1, 3, True) if center else _extent(box, 0, 2, False)
    vals = [x[0], x[1], y[0], y[1], (x[1] - x[0]) * (y[1] - y[0])]
    return S.SeqStmt([S.BufferStore(geo, v, [i * imm(GEO) + imm(k)]) for k, v in
                      enumerate(vals)])


def suppresses(a, b, iou_threshold) -> E.PrimExpr:
    """ONNX Runtime's SuppressByIOU of two boxes from their geometry (``a``, ``b``: x min,
    x max, y min, y max, area): no overlap where the intersection or either area is not
    positive, else IoU > threshold."""
    ix0, ix1 = E.Max(a[0], b[0]), E.Min(a[1], b[1])
    iy0, iy1 = E.Max(a[2], b[2]), E.Min(a[3], b[3])
    inter = (ix1 - ix0) * (iy1 - iy0)
    union = a[4] + b[4] - inter
    zero = _f(0.0)
    positive = E.And(E.And(E.GT(ix1, ix0), E.GT(iy1, iy0)), E.And(
        E.GT(inter, zero), E.And(E.And(E.GT(a[4], zero), E.GT(b[4], zero)),
                                 E.GT(union, zero))))
    return E.And(positive, E.GT(inter / union, iou_threshold))


def emit_nms(ctx, boxes, scores, max_out, iou, score_thr, table, center: bool) -> S.Stmt:
    """Statements writing the selection table of ``boxes`` [B, N, 4] and ``scores`` [B, C, N]
    into ``table`` [B * C * N + 1, 3] int64 (see the module); ``max_out``, ``iou`` and
    ``score_thr`` are one-element buffers (``score_thr`` None: no threshold)."""
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
    st = decl_buffer((8,), "int32", "nms_state", scope="local")
    # sift-down levels: log2 of the heap's size, bounded (a symbolic count: any int32)
    levels = max(1, int(dims[2]).bit_length()) if isinstance(dims[2], int) else 31

    def get(slot):
        return E.BufferLoad(st, [imm(slot)])

    def put(slot, v):
        return S.BufferStore(st, v, [imm(slot)])

    lim64 = E.BufferLoad(ctx.flat_view(max_out), [imm(0)])
    limit = E.Select(E.LT(lim64, E.const(0, lim64.dtype)), n,
                     E.Cast("int32", E.Min(lim64, E.Cast(lim64.dtype, n))))
    iou_thr = E.BufferLoad(ctx.flat_view(iou), [imm(0)])
    b, c, j = ctx.fresh("b"), ctx.fresh("c"), ctx.fresh("j")
    plane = b * nc + c

    def score(i):
        return E.BufferLoad(sc, [plane * n + i])

    def better(p, q):
        """Is candidate ``p`` taken before ``q``: a higher score, then the lower box?"""
        return E.Or(E.GT(score(p), score(q)), E.And(E.EQ(score(p), score(q)), E.LT(p, q)))

    def at(k):
        return E.BufferLoad(heap, [k])

    def sift_down(start) -> S.Stmt:
        """Restore the max-heap (best candidate first) below slot ``start``."""
        lv = ctx.fresh("lv")
        pos, best = get(POS), get(BEST)
        left = pos * imm(2) + imm(1)
        swap = S.SeqStmt([
            put(OK, at(pos)), S.BufferStore(heap, at(best), [pos]),
            S.BufferStore(heap, get(OK), [best]), put(POS, best)])
        step = S.IfThenElse(E.And(E.EQ(get(DONE), imm(0)), E.LT(left, get(M))), S.SeqStmt([
            put(BEST, left),
            S.IfThenElse(E.LT(left + imm(1), get(M)), S.IfThenElse(
                better(at(left + imm(1)), at(left)), put(BEST, left + imm(1)))),
            S.IfThenElse(better(at(best), at(pos)), swap, put(DONE, imm(1)))]))
        return S.SeqStmt([put(POS, start), put(DONE, imm(0)),
                          S.For(lv, imm(0), imm(levels), S.ForKind.SERIAL, step)])

    # ---- the candidates above the threshold, as a heap
    add = S.SeqStmt([S.BufferStore(heap, j, [get(M)]), put(M, get(M) + imm(1))])
    if score_thr is not None:
        thr = E.BufferLoad(ctx.flat_view(score_thr), [imm(0)])
        add = S.IfThenElse(E.GT(score(j), thr), add)
    h = ctx.fresh("h")
    heapify = S.For(h, imm(0), E.FloorDiv(get(M), imm(2)), S.ForKind.SERIAL,
                    sift_down(E.FloorDiv(get(M), imm(2)) - imm(1) - h))
    gather = S.SeqStmt([put(M, imm(0)), S.For(j, imm(0), n, S.ForKind.SERIAL, add), heapify])

    # ---- greedy selection, popping the best candidate while boxes are wanted
    # a candidate against every kept box of its class, a vector of them at a time: lanes
    # that overlap by more than the threshold mark ``hit``
    t, box = ctx.fresh("t"), ctx.fresh("box")
    vo, ln, l0, l1 = ctx.fresh("vo"), ctx.fresh("ln"), ctx.fresh("l0"), ctx.fresh("l1")
    kslot = kslots if isinstance(kslots, int) else kslots
    mine = [E.BufferLoad(geo, [box * imm(GEO) + imm(f)]) for f in range(GEO)]
    k = vo * imm(LANES) + ln
    theirs = [E.BufferLoad(kgeo, [imm(f) * _i32(kslot) + k]) for f in range(GEO)]
    flag = E.Select(E.And(E.LT(k, get(KEPT)), suppresses(mine, theirs, iou_thr)), imm(1),
                    imm(0))
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
    keep = S.SeqStmt([
        *(S.BufferStore(kgeo, mine[f], [imm(f) * _i32(kslot) + get(KEPT)]) for f in range(GEO)),
        put(KEPT, get(KEPT) + imm(1)),
        S.BufferStore(out, E.Cast("int64", b), [row]),
        S.BufferStore(out, E.Cast("int64", c), [row + imm(1)]),
        S.BufferStore(out, E.Cast("int64", box), [row + imm(2)]),
        put(COUNT, get(COUNT) + imm(1))])
    pop = S.SeqStmt([put(M, get(M) - imm(1)), S.BufferStore(heap, at(get(M)), [imm(0)]),
                     sift_down(imm(0))])
    one = S.IfThenElse(E.And(E.LT(get(KEPT), limit), E.GT(get(M), imm(0))), S.LetStmt(
        box, at(imm(0)), S.SeqStmt([pop, check,
                                    S.IfThenElse(E.EQ(get(OK), imm(1)), keep)])))
    select = S.SeqStmt([put(KEPT, imm(0)), S.For(t, imm(0), n, S.ForKind.SERIAL, one)])
    g = ctx.fresh("g")
    per_image = S.SeqStmt([
        S.For(g, imm(0), n, S.ForKind.SERIAL, _geometry(bx, geo, b * n + g, g, center)),
        S.For(c, imm(0), nc, S.ForKind.SERIAL, S.SeqStmt([gather, select]))])
    classes = S.For(b, imm(0), nb, S.ForKind.SERIAL, per_image)

    z = ctx.fresh("z")
    rows = nb * nc * n
    zero = S.For(z, imm(0), (rows + imm(1)) * imm(3), S.ForKind.SERIAL,
                 S.BufferStore(out, E.const(0, "int64"), [z]))
    body = S.SeqStmt([zero, put(COUNT, imm(0)), classes,
                      S.BufferStore(out, E.Cast("int64", get(COUNT)), [rows * imm(3)])])
    for buf in (heap, kgeo, hit, geo, st):
        body = allocated(buf, body)
    return body


# ---------------------------------------------------------------------------------- Relay
def _supported(t, options=None) -> bool:
    return isinstance(t.op, ComputeOp) and t.op.tag == NMS_TABLE_TAG


def _emit(ctx, t, out, bodies) -> S.Stmt:
    bufs = [ctx.buf[id(s)] for s in t.op.attrs["operands"]]
    return emit_nms(ctx, *bufs, out, t.op.attrs["center_point_box"])


register_rule(NMS_TABLE_TAG, Rule("all-class NMS: sorted candidates, greedy", "all_class_nms",
                                  _supported, _emit, symbolic=True, materialize=True))


# ---------------------------------------------------------------------------------- Relax
def nms_prim_func(batch, classes, boxes, center: bool, has_score_threshold: bool) -> PrimFunc:
    """``(boxes, scores, max_out, iou, [score_threshold,] table)``: the kernel as a PrimFunc;
    the dims may be tir Vars."""
    bx = decl_buffer((batch, boxes, 4), "float32", "boxes")
    sc = decl_buffer((batch, classes, boxes), "float32", "scores")
    mo = decl_buffer((1,), "int64", "max_out")
    iou = decl_buffer((1,), "float32", "iou")
    thr = decl_buffer((1,), "float32", "score_threshold") if has_score_threshold else None
    rows = batch * classes * boxes
    table = decl_buffer((rows + 1, 3), "int64", "table")
    ctx = LowerCtx(own_temps=True)
    body = emit_nms(ctx, bx, sc, mo, iou, thr, table, center)
    for view in reversed(ctx.ws_views):
        body = S.DeclBuffer(view, body)
    params = [bx, sc, mo, iou] + ([thr] if thr is not None else []) + [table]
    return PrimFunc(params, body, attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})
