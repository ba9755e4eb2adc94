"""Attention as one kernel: ``softmax(f(Q @ K)) @ V`` over blocks of query rows, for the fused
function ``FuseAttention`` makes (Relay's ``batch_matmul -> [scale, mask] -> softmax ->
batch_matmul``).

Run as three kernels, the ``rows x cols`` score matrix goes to memory and back twice (written
by the first product, read and written by the softmax, read by the second product). Here each
task takes ``ROW_BLOCK`` query rows of one batch: their scores go into a tile of its own
(``ROW_BLOCK x cols``, cache resident), the row softmax runs on the tile (the max, then
``exp(s - max)`` in place while its sum accumulates), the tile times V gives the output rows,
scaled by the reciprocal of each row's sum as they are stored. Only the output is written.
K and V are read along their contiguous axis: one given the other way round is first copied
transposed (they are ``cols x depth``, small beside the scores).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..te.tensor import ComputeOp, PlaceholderOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute, transform_expr
from .common import allocated, const_int, fold_lanes, lanes, parallel_for
from .softmax_rows import relay_softmax

# query rows per task: the tile is ROW_BLOCK x cols floats (2048 columns: 128 KB, in L2)
ROW_BLOCK = 16
# rows sharing each load of K in the scores' register blocks (ROW_GROUP x SCORE_VECTORS
# accumulators), and of V in the output's when it is one or two vectors wide (else 4 rows:
# ROW_GROUP x OUT_VECTORS accumulators would spill). Rows of tsm_nonlocal's 2048 x 2048 x 16,
# one thread, ms: 4 rows 3.67, 8 rows 3.10. (A dot-product form for narrow outputs, 4 rows x 4
# columns of partial sums along the tile's rows, measured 4% slower there: 3.67 vs 3.52.)
ROW_GROUP = 8
# vectors of score columns per register block (ROW_GROUP x SCORE_VECTORS accumulators)
SCORE_VECTORS = 2
# vectors of output columns per register block (ROW_GROUP x OUT_VECTORS accumulators)
OUT_VECTORS = 4
# the fused kernel is taken when one batch's score matrix (rows x cols float32) has at least
# this many bytes. Measured on the Xeon (AVX-512, one thread, thread CPU time, median of 9,
# fused / the three kernels, batch x rows x cols x depth(=depth_v), KB of scores per batch):
# 16x48x48x16 (9 KB) 0.79, 8x64x64x32 (16) 0.92, 4x96x96x32 (36) 0.84, 12x128x128x64 (64)
# 0.87-0.93, 3x197x197x64 (152) 0.91, 2x512x512x64 (1024) 0.96, 724x724x64 (2048) 0.92,
# 1024x1024x64 (4096) 0.95, 1024x1024x16 (4096) 0.61, 2048x2048x16 (16384) 0.45. Alone it wins
# at every size (most where the depth is small), but in a whole model it lost where the scores
# stay in cache anyway: relay.testing.bert (12 layers, 12x128x128x64, V given transposed, so
# packed per call) ran 1.02-1.03x slower with it (interleaved A/B, one thread, 7 and 9
# rounds). So the floor is the L2 (2 MiB): tsm_nonlocal (2048x2048x16) 0.79x with it
MIN_SCORE_BYTES = 1 << 21
# the most injective stages inlined between the scores and the softmax
_MAX_INLINE = 64


def worth_fusing(rows: int, cols: int) -> bool:
    """Does a ``rows x cols`` float32 score matrix (per batch) take the fused kernel?"""
    return rows * cols * 4 >= MIN_SCORE_BYTES


@dataclass(frozen=True)
class Found:
    """What ``match`` recognized: placeholders ``q``, ``k``, ``v``; ``k_nd``: K is given
    ``[batch, cols, depth]`` (the scores product's ``transpose_b``); ``v_dn``: V is given
    ``[batch, depth_v, cols]``; ``score``: the product stage; ``pre``: the softmax input's
    body in terms of ``score`` at ``axes`` (and other inputs); ``exp``/``x``/``mx``: the
    softmax's exponential term, reading ``x`` and the row max ``mx``."""

    q: object
    k: object
    v: object
    k_nd: bool
    v_dn: bool
    score: object
    pre: E.PrimExpr
    axes: tuple
    exp: E.PrimExpr
    x: object
    mx: object
    out: object


def _product(t):
    """``(a, b, transpose_b)`` of a float32 3-d ``batch_matmul`` stage without transpose_a."""
    if not isinstance(t.op, ComputeOp) or t.op.tag != "batch_matmul" or t.dtype != "float32":
        return None
    attrs = t.op.attrs
    if attrs.get("transpose_a") or len(t.shape) != 3:
        return None
    a, b = attrs["operands"]
    return a, b, bool(attrs.get("transpose_b"))


def _inline_pre(x, score):
    """The body of ``x`` with every injective stage between it and ``score`` inlined, or None
    when something else (a reduction, another product) is in between."""
    if x is score:
        return E.ProducerLoad(score, [iv.var for iv in score.op.axis])
    body, bad = x.op.body, [False]

    def fpost(e):
        if not isinstance(e, E.ProducerLoad) or e.producer is score or \
                isinstance(e.producer.op, PlaceholderOp):
            return None
        op = e.producer.op
        if not isinstance(op, ComputeOp) or op.reduce_axis or isinstance(op.body, E.Reduce):
            bad[0] = True
            return None
        return substitute(op.body, {iv.var: i for iv, i in zip(op.axis, e.indices, strict=True)})

    for _ in range(_MAX_INLINE):
        new = transform_expr(body, fpost)
        if bad[0]:
            return None
        if new is body:
            return body
        body = new
    return None  # (more stages than _MAX_INLINE: left to the three kernels)


def match(inputs, outputs) -> Found | None:
    """``Found`` when ``outputs`` is one ``batch_matmul(softmax(pre(batch_matmul(Q, K))), V)``
    over placeholders among ``inputs`` with static shapes, the softmax over the last axis and
    ``pre`` elementwise (a scale, an added mask), else None."""
    if len(outputs) != 1:
        return None
    out = outputs[0]
    pv = _product(out)
    if pv is None:
        return None
    p, v, v_dn = pv
    soft = relay_softmax(p)
    if soft is None:
        return None
    x, _norm, _ident, exp, _total, mx = soft
    if not isinstance(x.op, ComputeOp) or len(x.shape) != 3:
        return None
    # the scores: the product itself or the end of an elementwise chain on it
    score = x if x.op.tag == "batch_matmul" else None
    if score is None:
        cands = [t for t in {id(e.producer): e.producer for e in post_order(x.op.body)
                             if isinstance(e, E.ProducerLoad)}.values()]
        seen, stack = set(), list(cands)
        found = []
        while stack:  # the one product the chain reads
            t = stack.pop()
            if id(t) in seen or isinstance(t.op, PlaceholderOp):
                continue
            seen.add(id(t))
            if t.op.tag == "batch_matmul":
                found.append(t)
                continue
            stack.extend(t.op.input_tensors)
        if len(found) != 1:
            return None
        score = found[0]
    qk = _product(score)
    if qk is None:
        return None
    q, k, k_nd = qk
    ins = {id(t) for t in inputs}
    if any(id(t) not in ins or not isinstance(t.op, PlaceholderOp) for t in (q, k, v)):
        return None
    pre = _inline_pre(x, score)
    if pre is None:
        return None
    axes = tuple(iv.var for iv in x.op.axis)
    for e in post_order(pre):
        if not isinstance(e, E.ProducerLoad):
            continue
        if e.producer is score:  # at its own position (a unit axis may be read at 0)
            if len(e.indices) != 3 or any(
                    i is not a and not (const_int(i) == 0 and const_int(n) == 1)
                    for i, a, n in zip(e.indices, axes, score.shape)):
                return None
        elif id(e.producer) not in ins:
            return None
    dims = [const_int(d) for t in (q, k, v, score, x, out) for d in t.shape]
    if any(d is None for d in dims) or [const_int(d) for d in x.shape] != \
            [const_int(d) for d in score.shape]:
        return None
    if any(t.dtype != "float32" for t in (q, k, v)):
        return None
    return Found(q, k, v, k_nd, v_dn, score, pre, axes, exp, x, mx, out)


def _dims(t) -> list[int]:
    return [const_int(d) for d in t.shape]


def emit(ctx, found: Found, q_buf, k_buf, v_buf, out_buf, bufs: dict) -> S.Stmt:
    """The fused kernel for ``match``'s result; ``bufs`` maps ``id(placeholder)`` to the buffer
    of every input the softmax input's body reads (a mask)."""
    f = found
    batch, rows, cols = _dims(f.score)
    depth = _dims(f.q)[2]
    dv = _dims(f.out)[2]
    nl = lanes("float32")
    zero = E.FloatImm("float32", 0.0)

    def c(v):
        return E.IntImm("int32", v) if isinstance(v, int) else v

    def bat(t, b):  # a batch index of operand t (batch 1 broadcasts)
        return c(0) if _dims(t)[0] == 1 else b

    pre_packs = []
    kt = k_buf  # K read as [batch, depth, cols]
    if f.k_nd:
        kb = _dims(f.k)[0]
        kt = decl_buffer((kb, depth, cols), "float32", "attn_kt")
        pre_packs.append((kt, lambda b, d, j: E.BufferLoad(k_buf, [b, j, d]), kb, depth, cols))
    vn = v_buf  # V read as [batch, cols, dv]
    if f.v_dn:
        vb = _dims(f.v)[0]
        vn = decl_buffer((vb, cols, dv), "float32", "attn_vn")
        pre_packs.append((vn, lambda b, j, d: E.BufferLoad(v_buf, [b, d, j]), vb, cols, dv))

    nblk = -(-rows // ROW_BLOCK)
    tile = decl_buffer((ROW_BLOCK * cols,), "float32", "attn_tile")
    inv = decl_buffer((ROW_BLOCK,), "float32", "attn_inv")

    def pre_at(b, i, j, value):
        """The softmax input at (b, i, j) given the product's ``value`` there."""
        vmap = dict(zip(f.axes, (b, i, j), strict=True))

        def fpost(e):
            if isinstance(e, E.ProducerLoad) and e.producer is f.score:
                return value
            if isinstance(e, E.ProducerLoad):
                return E.BufferLoad(bufs[id(e.producer)], list(e.indices))
            return None

        return substitute(transform_expr(f.pre, fpost), vmap)

    def exp_at(value, m):
        def fpost(e):
            if isinstance(e, E.ProducerLoad) and e.producer is f.x:
                return value
            if isinstance(e, E.ProducerLoad) and e.producer is f.mx:
                return m
            return None

        return transform_expr(f.exp, fpost)

    def block(group, nvec, extent, acc_name, a_at, b_at, store):
        """A register block: ``group`` rows x ``nvec`` vectors of columns accumulating
        ``a_at(g, k) * b_at(k, col_offset)`` over ``k < extent``, then ``store(g, v, lane,
        value)``; the row and vector loops unrolled so the accumulators stay in registers."""
        acc = decl_buffer((group * nvec * nl,), "float32", acc_name, scope="local")
        w = nvec * nl

        def each(fn):
            g, v, ln = ctx.fresh("g"), ctx.fresh("v"), ctx.fresh("ln")
            return S.For(g, c(0), c(group), S.ForKind.UNROLLED, S.For(
                v, c(0), c(nvec), S.ForKind.UNROLLED, S.For(
                    ln, c(0), c(nl), S.ForKind.VECTORIZED, fn(g, v, ln, g * c(w) + v * c(nl) + ln))))

        kk = ctx.fresh("k")
        init = each(lambda g, v, ln, a: S.BufferStore(acc, zero, [a]))
        upd = S.For(kk, c(0), c(extent), S.ForKind.SERIAL, each(
            lambda g, v, ln, a: S.BufferStore(acc, E.BufferLoad(acc, [a]) + a_at(g, kk) * b_at(
                kk, v * c(nl) + ln), [a])))
        fin = each(lambda g, v, ln, a: store(g, v, ln, E.BufferLoad(acc, [a])))
        return allocated(acc, S.SeqStmt([init, upd, fin]))

    def task(t):
        b = E.FloorDiv(t, c(nblk))
        r0 = E.FloorMod(t, c(nblk)) * c(ROW_BLOCK)
        n = E.Min(c(ROW_BLOCK), c(rows) - r0)  # the block's rows
        bq, bk, bv = bat(f.q, b), bat(f.k, b), bat(f.v, b)
        parts = []

        # -- scores: tile[r, j] = pre(Q[r] . K[:, j])
        def score_rows(group, base):
            def a_at(g, d):
                return E.BufferLoad(q_buf, [bq, r0 + base + g, d])

            sw = SCORE_VECTORS * nl
            stmts = []
            nsv = cols // sw

            def store_at(first):
                def store(g, v, ln, val):
                    j = first + v * c(nl) + ln
                    r = base + g
                    return S.BufferStore(tile, pre_at(b, r0 + r, j, val), [r * c(cols) + j])

                return store

            def k_at(first):
                return lambda d, o: E.BufferLoad(kt, [bk, d, first + o])

            if nsv:
                jb = ctx.fresh("jb")
                stmts.append(S.For(jb, c(0), c(nsv), S.ForKind.SERIAL, block(
                    group, SCORE_VECTORS, depth, "attn_sacc", a_at, k_at(jb * c(sw)),
                    store_at(jb * c(sw)))))
            # leftover columns: whole vectors, the last one overlapping the one before (its
            # stores are a pure function of the inputs, so twice is the same)
            firsts = list(range(nsv * sw, cols - nl + 1, nl))
            if cols >= nl and cols % nl:
                firsts.append(cols - nl)
            for first in firsts:
                stmts.append(block(group, 1, depth, "attn_sacc1", a_at, k_at(c(first)),
                                   store_at(c(first))))
            if cols < nl:  # fewer columns than a vector: one at a time
                g, j, d = ctx.fresh("g"), ctx.fresh("j"), ctx.fresh("d")
                s1 = decl_buffer((1,), "float32", "attn_s1", scope="local")
                r = base + g
                body = S.SeqStmt([
                    S.BufferStore(s1, zero, [c(0)]),
                    S.For(d, c(0), c(depth), S.ForKind.SERIAL, S.BufferStore(
                        s1, E.BufferLoad(s1, [c(0)]) + a_at(g, d) * E.BufferLoad(
                            kt, [bk, d, j]), [c(0)])),
                    S.BufferStore(tile, pre_at(b, r0 + r, j, E.BufferLoad(s1, [c(0)])),
                                  [r * c(cols) + j])])
                stmts.append(S.For(g, c(0), c(group), S.ForKind.SERIAL, S.For(
                    j, c(0), c(cols), S.ForKind.SERIAL, allocated(s1, body))))
            return S.SeqStmt(stmts)

        def grouped(fn, group):
            """``fn(rows, base)`` over the block's rows: groups of ``group``, then of 4 (when
            smaller), then single rows."""
            stmts, done = [], c(0)
            for g in sorted({group, min(group, 4), 1}, reverse=True):
                rg = ctx.fresh("rg")
                ng = E.FloorDiv(n - done, c(g))
                stmts.append(S.For(rg, c(0), ng, S.ForKind.SERIAL, fn(g, done + rg * c(g))))
                done = done + ng * c(g)
            return S.SeqStmt(stmts)

        parts.append(grouped(score_rows, ROW_GROUP))

        # -- the row softmax on the tile: max, exp in place while summing, 1 / sum
        acc = decl_buffer((nl,), "float32", "attn_racc", scope="local")
        r = ctx.fresh("r")

        def at(j):
            return E.BufferLoad(tile, [r * c(cols) + j])

        def lane_pass(fvec, ftail):
            stmts = []
            if cols // nl:
                jo, ln = ctx.fresh("jo"), ctx.fresh("ln")
                stmts.append(S.For(jo, c(0), c(cols // nl), S.ForKind.SERIAL, S.For(
                    ln, c(0), c(nl), S.ForKind.VECTORIZED, fvec(jo * c(nl) + ln, ln))))
            if cols % nl:
                jt = ctx.fresh("jt")
                stmts.append(S.For(jt, c(cols - cols % nl), c(cols % nl), S.ForKind.SERIAL,
                                   ftail(jt)))
            return stmts

        def fill(value):
            ln = ctx.fresh("ln")
            return S.For(ln, c(0), c(nl), S.ForKind.VECTORIZED, S.BufferStore(acc, value, [ln]))

        def fmax(a, bb):
            return E.Select(E.GT(a, bb), a, bb)

        def acc0():
            return E.BufferLoad(acc, [c(0)])

        m = E.BufferLoad(inv, [r])  # (the row max is kept in inv until the sum replaces it)
        row = [fill(E.FloatImm("float32", float("-inf")))]
        row += lane_pass(lambda j, ln: S.BufferStore(acc, fmax(at(j), E.BufferLoad(acc, [ln])),
                                                     [ln]),
                         lambda j: S.BufferStore(acc, fmax(at(j), acc0()), [c(0)]))
        row += fold_lanes(ctx, acc, nl, fmax)
        row += [S.BufferStore(inv, acc0(), [r]), fill(zero)]

        def exp_store(j, ln):
            return S.SeqStmt([S.BufferStore(tile, exp_at(at(j), m), [r * c(cols) + j]),
                              S.BufferStore(acc, E.BufferLoad(acc, [ln]) + at(j), [ln])])

        row += lane_pass(exp_store, lambda j: exp_store(j, c(0)))
        row += fold_lanes(ctx, acc, nl, lambda a, bb: a + bb)
        row += [S.BufferStore(inv, E.FloatImm("float32", 1.0) / acc0(), [r])]
        parts.append(allocated(acc, S.For(r, c(0), n, S.ForKind.SERIAL, S.SeqStmt(row))))

        # -- the output: out[r, :] = (tile[r, :] @ V) * inv[r]
        def out_rows(group, base):
            def a_at(g, j):
                return E.BufferLoad(tile, [(base + g) * c(cols) + j])

            stmts = []
            nvc = dv // nl
            for c0 in range(0, nvc, OUT_VECTORS):
                nv = min(OUT_VECTORS, nvc - c0)
                col0 = c0 * nl

                def store(g, v, ln, val, col0=col0):
                    i = base + g
                    return S.BufferStore(out_buf, val * E.BufferLoad(inv, [i]),
                                         [b, r0 + i, c(col0) + v * c(nl) + ln])

                stmts.append(block(group, nv, cols, "attn_oacc", a_at,
                                   lambda j, o, col0=col0: E.BufferLoad(
                                       vn, [bv, j, c(col0) + o]), store))
            if dv > nl and dv % nl:  # a last vector overlapping the one before
                col0 = dv - nl

                def store_last(g, v, ln, val):
                    i = base + g
                    return S.BufferStore(out_buf, val * E.BufferLoad(inv, [i]),
                                         [b, r0 + i, c(col0) + ln])

                stmts.append(block(group, 1, cols, "attn_oacc1", a_at, lambda j, o: E.BufferLoad(
                    vn, [bv, j, c(col0) + o]), store_last))
            elif dv % nl:  # fewer output columns than a vector: one at a time
                g, cc, j = ctx.fresh("g"), ctx.fresh("cc"), ctx.fresh("j")
                s1 = decl_buffer((1,), "float32", "attn_o1", scope="local")
                i = base + g
                body = S.SeqStmt([
                    S.BufferStore(s1, zero, [c(0)]),
                    S.For(j, c(0), c(cols), S.ForKind.SERIAL, S.BufferStore(
                        s1, E.BufferLoad(s1, [c(0)]) + a_at(g, j) * E.BufferLoad(
                            vn, [bv, j, cc]), [c(0)])),
                    S.BufferStore(out_buf, E.BufferLoad(s1, [c(0)]) * E.BufferLoad(inv, [i]),
                                  [b, r0 + i, cc])])
                stmts.append(S.For(g, c(0), c(group), S.ForKind.SERIAL, S.For(
                    cc, c(nvc * nl), c(dv % nl), S.ForKind.SERIAL, allocated(s1, body))))
            return S.SeqStmt(stmts)

        parts.append(grouped(out_rows, ROW_GROUP if dv < 3 * nl else 4))
        return allocated(tile, allocated(inv, S.SeqStmt(parts)))

    work = ROW_BLOCK * cols * (2 * depth + 2 * dv + 8)
    main = parallel_for(ctx, batch * nblk, work, task)
    stmts = []
    for buf, load, nb, d0, d1 in pre_packs:  # K or V transposed once, before the tasks
        def copy(t, buf=buf, load=load, d0=d0, d1=d1):
            bb, i0 = E.FloorDiv(t, c(d0)), E.FloorMod(t, c(d0))
            i1 = ctx.fresh("i")
            return S.For(i1, c(0), c(d1), S.ForKind.SERIAL,
                         S.BufferStore(buf, load(bb, i0, i1), [bb, i0, i1]))

        stmts.append(parallel_for(ctx, nb * d0, d1, copy))
    body = S.SeqStmt([*stmts, main])
    for buf, *_ in pre_packs:
        body = allocated(buf, body)
    return body
