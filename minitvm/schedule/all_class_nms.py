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

COUNT, M, KEPT, OK, LEFT, RIGHT, WIDTH = range(7)  # the state's slots
SORT_PASSES = 31  # merge passes: widths 1, 2, 4, ... cover any int32 count


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


def suppresses(bx, p, q, iou_threshold, center: bool) -> E.PrimExpr:
    """ONNX Runtime's SuppressByIOU of boxes ``p`` and ``q`` (flat [.., 4] float32 view)."""

    def box(i):
        return lambda k: E.BufferLoad(bx, [i * imm(4) + imm(k)])

    # [y1, x1, y2, x2], or [x_center, y_center, width, height]
    xa, ya = (_extent(box(p), 0, 2, True), _extent(box(p), 1, 3, True)) if center else \
        (_extent(box(p), 1, 3, False), _extent(box(p), 0, 2, False))
    xb, yb = (_extent(box(q), 0, 2, True), _extent(box(q), 1, 3, True)) if center else \
        (_extent(box(q), 1, 3, False), _extent(box(q), 0, 2, False))
    ix0, ix1 = E.Max(xa[0], xb[0]), E.Min(xa[1], xb[1])
    iy0, iy1 = E.Max(ya[0], yb[0]), E.Min(ya[1], yb[1])
    inter = (ix1 - ix0) * (iy1 - iy0)
    area_a = (xa[1] - xa[0]) * (ya[1] - ya[0])
    area_b = (xb[1] - xb[0]) * (yb[1] - yb[0])
    union = area_a + area_b - inter
    zero = _f(0.0)
    positive = E.And(E.And(E.GT(ix1, ix0), E.GT(iy1, iy0)), E.And(
        E.GT(inter, zero), E.And(E.And(E.GT(area_a, zero), E.GT(area_b, zero)),
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
    cand, tmp, kept = (decl_buffer((slots,), "int32", f"nms_{k}") for k in ("cand", "tmp", "kept"))
    st = decl_buffer((8,), "int32", "nms_state", scope="local")

    def get(slot):
        return E.BufferLoad(st, [imm(slot)])

    def put(slot, v):
        return S.BufferStore(st, v, [imm(slot)])

    def score(plane, j):
        return E.BufferLoad(sc, [plane * n + j])

    lim64 = E.BufferLoad(ctx.flat_view(max_out), [imm(0)])
    limit = E.Select(E.LT(lim64, E.const(0, lim64.dtype)), n,
                     E.Cast("int32", E.Min(lim64, E.Cast(lim64.dtype, n))))
    iou_thr = E.BufferLoad(ctx.flat_view(iou), [imm(0)])
    b, c, j = ctx.fresh("b"), ctx.fresh("c"), ctx.fresh("j")
    plane = b * nc + c

    # ---- the candidates above the threshold, in box order
    add = S.SeqStmt([S.BufferStore(cand, j, [get(M)]), put(M, get(M) + imm(1))])
    if score_thr is not None:
        thr = E.BufferLoad(ctx.flat_view(score_thr), [imm(0)])
        add = S.IfThenElse(E.GT(score(plane, j), thr), add)
    gather = S.SeqStmt([put(M, imm(0)), S.For(j, imm(0), n, S.ForKind.SERIAL, add)])

    # ---- bottom-up merge sort of cand[0:m]: score descending, then box ascending
    ps, k, o = ctx.fresh("pass"), ctx.fresh("k"), ctx.fresh("o")
    w = get(WIDTH)
    lo = k * imm(2) * w
    mid, hi = E.Min(lo + w, get(M)), E.Min(lo + imm(2) * w, get(M))
    li, ri = get(LEFT), get(RIGHT)

    def take(src_slot):
        v = E.BufferLoad(cand, [get(src_slot)])
        return S.SeqStmt([S.BufferStore(tmp, v, [o]), put(src_slot, get(src_slot) + imm(1))])

    a, bb = E.BufferLoad(cand, [li]), E.BufferLoad(cand, [ri])
    left_first = E.Or(E.GT(score(plane, a), score(plane, bb)),
                      E.And(E.EQ(score(plane, a), score(plane, bb)), E.LT(a, bb)))
    step = S.IfThenElse(E.GE(li, mid), take(RIGHT), S.IfThenElse(
        E.GE(ri, hi), take(LEFT), S.IfThenElse(left_first, take(LEFT), take(RIGHT))))
    merge = S.SeqStmt([put(LEFT, lo), put(RIGHT, mid),
                       S.For(o, lo, hi - lo, S.ForKind.SERIAL, step)])
    runs = E.FloorDiv(get(M) + imm(2) * w - imm(1), imm(2) * w)
    cp = ctx.fresh("cp")
    one_pass = S.IfThenElse(E.LT(w, get(M)), S.SeqStmt([
        S.For(k, imm(0), runs, S.ForKind.SERIAL, merge),
        S.For(cp, imm(0), get(M), S.ForKind.SERIAL,
              S.BufferStore(cand, E.BufferLoad(tmp, [cp]), [cp])),
        put(WIDTH, w * imm(2))]))
    sort = S.SeqStmt([put(WIDTH, imm(1)),
                      S.For(ps, imm(0), imm(SORT_PASSES), S.ForKind.SERIAL, one_pass)])

    # ---- greedy selection in that order
    t, q = ctx.fresh("t"), ctx.fresh("q")
    box = E.BufferLoad(cand, [t])
    check = S.For(q, imm(0), get(KEPT), S.ForKind.SERIAL, S.IfThenElse(
        E.And(E.EQ(get(OK), imm(1)),
              suppresses(bx, b * n + box, b * n + E.BufferLoad(kept, [q]), iou_thr, center)),
        put(OK, imm(0))))
    row = get(COUNT) * imm(3)
    keep = S.SeqStmt([
        S.BufferStore(kept, box, [get(KEPT)]), put(KEPT, get(KEPT) + imm(1)),
        S.BufferStore(out, E.Cast("int64", b), [row]),
        S.BufferStore(out, E.Cast("int64", c), [row + imm(1)]),
        S.BufferStore(out, E.Cast("int64", box), [row + imm(2)]),
        put(COUNT, get(COUNT) + imm(1))])
    select = S.SeqStmt([put(KEPT, imm(0)), S.For(t, imm(0), get(M), S.ForKind.SERIAL,
                                                  S.IfThenElse(E.LT(get(KEPT), limit), S.SeqStmt([
                                                      put(OK, imm(1)), check,
                                                      S.IfThenElse(E.EQ(get(OK), imm(1)),
                                                                   keep)])))])
    classes = S.For(b, imm(0), nb, S.ForKind.SERIAL, S.For(
        c, imm(0), nc, S.ForKind.SERIAL, S.SeqStmt([gather, sort, select])))

    z = ctx.fresh("z")
    rows = nb * nc * n
    zero = S.For(z, imm(0), (rows + imm(1)) * imm(3), S.ForKind.SERIAL,
                 S.BufferStore(out, E.const(0, "int64"), [z]))
    body = S.SeqStmt([zero, put(COUNT, imm(0)), classes,
                      S.BufferStore(out, E.Cast("int64", get(COUNT)), [rows * imm(3)])])
    for buf in (cand, tmp, kept, st):
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
