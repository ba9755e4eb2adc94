"""Schedule of ``vision.multiclass_nms`` (tag ``multiclass_nms``, ``topi.multiclass_nms``): the
best ``max_detections`` of a greedy NMS per class, one thread, in rounds.

Each round scans every (box, class) score once and keeps the next ``B`` candidates in order
(score descending, then ``class * N + box`` ascending), those ordered after the previous
round's last, in a sorted batch (insertion: a binary search for the new one's place, then the
entries after it move down one; a count over the whole batch and a guarded pass over it, 160
steps an insert, took the SSD head 0.212 ms where this takes 0.097); a box whose class scores'
maximum (in vectors) is below the threshold or the full batch's last is skipped whole. The
batch's candidates are then decided in order: one is kept unless its class already
has ``detections_per_class`` kept or a kept box of its class overlaps it by IoU >
``iou_threshold``. The kept list holds at most ``max_detections`` entries, so each decision
looks at those only. Rounds end once ``max_detections`` are kept or the candidates run out
(a round finding fewer than ``B``): on an SSD's 1917 boxes x 90 classes, one or two scans in
place of a sort of every class (TFLite) or NMS of every class in numpy (62 ms before).
"""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.multiclass_nms import MULTICLASS_NMS_TAG
from .common import allocated, const_int, fold_lanes, imm, lanes, vector_blocks
from .lower import Rule, register_rule

BATCH_PER_DETECTION = 8  # candidates a round keeps, per detection wanted ...
MIN_BATCH = 64  # ... and at least this many
# a box's class scores are first reduced to their maximum in vectors; the box is skipped when
# that is below the threshold or the full batch's last (ssd_mobilenet's 1917 x 90 head, random
# scores: 318 boxes scanned of 1917; the head 0.347 -> 0.212 ms, one thread)
BOX_FILTER = True


def supported(t, options=None) -> bool:
    """Is ``t`` a multiclass NMS stage (static shapes but for the box count, which may be a
    symbolic size: a Relay VM kernel for every count)?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != MULTICLASS_NMS_TAG:
        return False
    boxes, scores = t.op.attrs["operands"]
    return all(const_int(d) is not None for d in (boxes.shape[0], boxes.shape[2],
                                                  scores.shape[0], scores.shape[2]))


def _f(v: float) -> E.PrimExpr:
    return E.const(float(v), "float32")


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements writing the detections of stage ``t`` into ``out`` (see the module)."""
    a = t.op.attrs
    boxes, scores = a["operands"]
    bx, sc = ctx.flat_view(ctx.buf[id(boxes)]), ctx.flat_view(ctx.buf[id(scores)])
    y = ctx.flat_view(out)
    n, k = const_int(scores.shape[1]), const_int(scores.shape[2])
    off, m, per = a["class_offset"], a["max_detections"], a["detections_per_class"]
    c = k - off
    if n is None:  # a run-time box count: the batch at its full size (any size keeps the same
        # detections), the rounds as many as the candidates need
        d = scores.shape[1]
        nn = d if d.dtype == "int32" else E.Cast("int32", d)
        b = max(MIN_BATCH, BATCH_PER_DETECTION * m)
        rounds = E.FloorDiv(nn * imm(c), imm(b)) + imm(1)
    else:
        total = c * n
        if total == 0:
            return S.For(ctx.fresh("m"), imm(0), imm(m), S.ForKind.SERIAL, S.Evaluate(imm(0)))
        b = max(1, min(total, max(MIN_BATCH, BATCH_PER_DETECTION * m)))
        nn, rounds = imm(n), imm(total // b + 1)

    bs = decl_buffer((b,), "float32", "nms_batch_s")
    bi = decl_buffer((b,), "int32", "nms_batch_i")
    kept = decl_buffer((m,), "int32", "nms_kept")
    st = decl_buffer((7,), "int32", "nms_state", scope="local")
    last_s = decl_buffer((1,), "float32", "nms_last_s", scope="local")
    KEPT, COUNT, DONE, LAST_I, POS, SAME, HI = range(7)  # noqa: N806 - the state's slots

    def get(slot):
        return E.BufferLoad(st, [imm(slot)])

    def put(slot, v):
        return S.BufferStore(st, v, [imm(slot)])

    def before(s1, i1, s2, i2):
        """Is candidate (s1, i1) ordered before (s2, i2)?"""
        return E.Or(E.GT(s1, s2), E.And(E.EQ(s1, s2), E.LT(i1, i2)))

    # ---- the scan: the next b candidates into the sorted batch
    nb, cb = ctx.fresh("n"), ctx.fresh("c")
    s = ctx.fresh("s", "float32")
    i = cb * nn + nb
    j, q = ctx.fresh("j"), ctx.fresh("q")
    # the batch is sorted: the entries before (s, i) by binary search, then only the
    # entries from there to the batch's end (or its last, dropped when full) move down
    mid, top = ctx.fresh("mid"), ctx.fresh("top")
    probe = S.IfThenElse(E.LT(get(POS), get(HI)), S.LetStmt(
        mid, E.FloorDiv(get(POS) + get(HI), imm(2)), S.IfThenElse(
            before(E.BufferLoad(bs, [mid]), E.BufferLoad(bi, [mid]), s, i),
            put(POS, mid + imm(1)), put(HI, mid))))
    count_before = S.SeqStmt([put(HI, get(COUNT)), S.For(
        j, imm(0), imm(max(1, b.bit_length())), S.ForKind.SERIAL, probe)])
    jj = top - imm(1) - q
    shift = S.LetStmt(top, E.Min(get(COUNT), imm(b - 1)), S.For(
        q, imm(0), top - get(POS), S.ForKind.SERIAL,
        S.SeqStmt([S.BufferStore(bs, E.BufferLoad(bs, [jj]), [jj + imm(1)]),
                   S.BufferStore(bi, E.BufferLoad(bi, [jj]), [jj + imm(1)])])))
    insert = S.SeqStmt([
        put(POS, imm(0)), count_before, shift,
        S.BufferStore(bs, s, [get(POS)]), S.BufferStore(bi, i, [get(POS)]),
        put(COUNT, E.Min(get(COUNT) + imm(1), imm(b)))])
    after_last = E.Or(E.LT(s, E.BufferLoad(last_s, [imm(0)])),
                      E.And(E.EQ(s, E.BufferLoad(last_s, [imm(0)])), E.GT(i, get(LAST_I))))
    fits = E.Or(E.LT(get(COUNT), imm(b)),
                before(s, i, E.BufferLoad(bs, [imm(b - 1)]), E.BufferLoad(bi, [imm(b - 1)])))
    visit = S.LetStmt(s, E.BufferLoad(sc, [nb * imm(k) + imm(off) + cb]), S.IfThenElse(
        E.And(E.GE(s, _f(a["score_threshold"])), after_last),
        S.IfThenElse(fits, insert)))
    classes = S.For(cb, imm(0), imm(c), S.ForKind.SERIAL, visit)
    temps = [bs, bi, kept, st, last_s]
    if BOX_FILTER and c >= lanes("float32"):
        box_max = decl_buffer((lanes("float32"),), "float32", "nms_box_max", scope="local")
        temps.append(box_max)
        reduce, best = _box_max(ctx, box_max, sc, nb * imm(k) + imm(off), c)
        worth = E.And(E.GE(best, _f(a["score_threshold"])),
                      E.Or(E.LT(get(COUNT), imm(b)), E.GE(best, E.BufferLoad(bs, [imm(b - 1)]))))
        classes = S.SeqStmt([*reduce, S.IfThenElse(worth, classes)])
    scan = S.For(nb, imm(0), nn, S.ForKind.SERIAL, classes)

    # ---- the decisions: the batch's candidates in order against the kept ones
    r, jk = ctx.fresh("r"), ctx.fresh("jk")
    cand = ctx.fresh("cand")
    cls = E.FloorDiv(cand, nn)
    other = E.BufferLoad(kept, [jk])
    overlap = _overlaps(bx, cand - cls * nn, other - cls * nn, a["iou_threshold"])
    check = S.For(jk, imm(0), imm(m), S.ForKind.SERIAL, S.IfThenElse(
        E.And(E.LT(jk, get(KEPT)), E.EQ(E.FloorDiv(other, nn), cls)),
        S.SeqStmt([put(SAME, get(SAME) + imm(1)),
                   S.IfThenElse(overlap, put(POS, imm(1)))])))
    decide = S.IfThenElse(
        E.And(E.LT(r, get(COUNT)), E.LT(get(KEPT), imm(m))),
        S.LetStmt(cand, E.BufferLoad(bi, [r]), S.SeqStmt([
            put(SAME, imm(0)), put(POS, imm(0)), check,
            S.IfThenElse(E.And(E.EQ(get(POS), imm(0)), E.LT(get(SAME), imm(per))),
                         S.SeqStmt([S.BufferStore(kept, cand, [get(KEPT)]),
                                    put(KEPT, get(KEPT) + imm(1))]))])))
    decisions = S.For(r, imm(0), imm(b), S.ForKind.SERIAL, decide)
    finish = S.IfThenElse(
        E.Or(E.LT(get(COUNT), imm(b)), E.GE(get(KEPT), imm(m))), put(DONE, imm(1)),
        S.SeqStmt([S.BufferStore(last_s, E.BufferLoad(bs, [imm(b - 1)]), [imm(0)]),
                   put(LAST_I, E.BufferLoad(bi, [imm(b - 1)]))]))
    rnd = ctx.fresh("round")
    round_loop = S.For(rnd, imm(0), rounds, S.ForKind.SERIAL, S.IfThenElse(
        E.EQ(get(DONE), imm(0)), S.SeqStmt([put(COUNT, imm(0)), scan, decisions, finish])))

    mo = ctx.fresh("m")
    write = S.For(mo, imm(0), imm(m), S.ForKind.SERIAL, S.BufferStore(
        y, E.Select(E.LT(mo, get(KEPT)), E.BufferLoad(kept, [mo]), imm(-1)), [mo]))
    body = S.SeqStmt([put(KEPT, imm(0)), put(DONE, imm(0)), put(LAST_I, imm(-1)),
                      S.BufferStore(last_s, _f(float("inf")), [imm(0)]), round_loop, write])
    for buf in temps:
        body = allocated(buf, body)
    return body


def _fmax(a, b):
    return E.Select(E.GT(a, b), a, b)  # (a NaN score is never a candidate: dropping it is safe)


def _box_max(ctx, acc, sc, base, c: int):
    """(statements, value): the maximum of ``sc[base : base + c]`` (``c`` >= one vector) into
    ``acc[0]``: whole vectors, the last one overlapping, folded by halves."""
    nl = lanes("float32")
    lv, lt = ctx.fresh("l"), ctx.fresh("l")
    parts = [S.For(lv, imm(0), imm(nl), S.ForKind.VECTORIZED,
                   S.BufferStore(acc, _f(float("-inf")), [lv]))]
    parts += vector_blocks(ctx, c // nl, nl, 1, lambda j, lane: S.BufferStore(
        acc, _fmax(E.BufferLoad(sc, [base + j]), E.BufferLoad(acc, [lane])), [lane]))
    if c % nl:
        parts.append(S.For(lt, imm(0), imm(nl), S.ForKind.VECTORIZED, S.BufferStore(
            acc, _fmax(E.BufferLoad(sc, [base + imm(c - nl) + lt]), E.BufferLoad(acc, [lt])),
            [lt])))
    parts += fold_lanes(ctx, acc, nl, _fmax)
    return parts, E.BufferLoad(acc, [imm(0)])


def _overlaps(bx, p, q, iou_threshold: float):
    """IoU(box p, box q) > threshold, boxes (y, x, y, x) with corners in any order, in float32
    as ``topi.multiclass_nms.iou_np`` computes it (no overlap where either box is empty)."""

    def corners(i):
        v = [E.BufferLoad(bx, [i * imm(4) + imm(d)]) for d in range(4)]
        return E.Min(v[0], v[2]), E.Max(v[0], v[2]), E.Min(v[1], v[3]), E.Max(v[1], v[3])

    py0, py1, px0, px1 = corners(p)
    qy0, qy1, qx0, qx1 = corners(q)
    area_p, area_q = (py1 - py0) * (px1 - px0), (qy1 - qy0) * (qx1 - qx0)
    zero = _f(0.0)
    inter = E.Max(E.Min(py1, qy1) - E.Max(py0, qy0), zero) * \
        E.Max(E.Min(px1, qx1) - E.Max(px0, qx0), zero)
    iou = E.Div(inter, area_p + area_q - inter)
    return E.And(E.And(E.GT(area_p, zero), E.GT(area_q, zero)), E.GT(iou, _f(iou_threshold)))


register_rule(MULTICLASS_NMS_TAG, Rule("multiclass NMS rounds", "multiclass_nms", supported,
                                       emit, materialize=True, symbolic=True))
