"""Softmax over the last axis as one pass per row, for block-form PrimFuncs (Relax's
LegalizeOps writes ``softmax`` as four blocks: max, exp, sum of exp, divide).

Lowered stage by stage, those blocks become three passes over the whole tensor (max, sum of
exp, exp again and divide): the input streams from memory three times and ``exp`` runs twice
per element. ``match(inputs, outputs)`` recognizes the four raised stages; ``emit`` writes one
loop over rows (on the thread pool) whose body keeps the row in cache: a vectorized max, then
``exp(x - max)`` stored into the output while its sum accumulates, then the output scaled by
the reciprocal of the sum (measured: ``ROW_SOFTMAX``).

A softmax whose only output is an elementwise epilogue of it (quantized models requantize it:
``cast(clip(round(softmax * s) + zp))`` to int8 or uint8) gets the same kernel: ``epilogue``
peels those stages into an expression of the softmax's value, the row's exps go to a float32
row on the stack, and the last pass stores the epilogue of ``exp * reciprocal`` in the output's
dtype (measured: ``EPILOGUE_ROW_LIMIT``).
"""

from __future__ import annotations

from ..te.tensor import ComputeOp, PlaceholderOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import expr_children, post_order, transform_expr
from .common import (
    at_own_position,
    const_int,
    fold_lanes,
    lanes,
    parallel_for,
    prod_dims,
    same_dims,
    vector_blocks,
    vector_isa,
)

# whether raised softmax blocks get the row kernel, by vector ISA. Measured on a Zen 2 (AVX2,
# one thread, thread CPU time, best of 15, the BERT layer's 12 x seq x seq attention softmax,
# symbolic seq, stages -> rows, ms): seq 7 0.032 -> 0.030, 32 0.063 -> 0.048, 128 0.436 ->
# 0.301, 512 6.05 -> 3.66. Both ISAs (the Zen 4 measurement at ``common.vector_isa``).
ROW_SOFTMAX = {"avx512": True, "avx2": True}
# vector accumulators of a row's max, for rows of at least twice as many vectors (power of two).
# Zen 4, one thread, thread CPU time, Relay softmax of (1, 4, 128, 128), us: IEEE max in one
# accumulator 30-34, ``a > b ? a : b`` in one 22.9-23.5, in four 22.5-22.6 (ONNX Runtime 26)
MAX_ACCUMULATORS = 4
# longest static row (elements) whose exps a softmax with an epilogue of another dtype keeps in a
# float32 row on the stack (longer or symbolic rows keep the stage lowering). Zen 4, one thread,
# thread CPU time, A/B in one process, softmax of (1, 4, 128, 128) requantized to int8: stages
# 0.047 ms -> row kernel 0.036 (the float32 softmax alone 0.024; ONNX QDQ's divide-by-scale
# form 0.052 -> 0.042)
EPILOGUE_ROW_LIMIT = 8192


def _reduce_over_last(t, kind):
    """``(source load, identity)`` when ``t`` is ``kind``-reduce over its input's last axis
    into shape ``[*lead, 1]`` (one reduction axis, no condition), else None."""
    if not isinstance(t.op, ComputeOp) or len(t.op.reduce_axis) != 1:
        return None
    body = t.op.body
    if not isinstance(body, E.Reduce) or len(body.source) != 1 or \
            (body.condition is not None and not (isinstance(body.condition, E.IntImm) and
                                                 body.condition.value)):
        return None
    comb = body.combiner
    res = comb.result[0]
    if not isinstance(res, kind) or {id(res.a), id(res.b)} != {id(comb.lhs[0]), id(comb.rhs[0])}:
        return None
    if body.init and not (isinstance(body.init[0], E.FloatImm) and
                          body.init[0].value == comb.identity_element[0].value):
        return None
    src = body.source[0]
    if not isinstance(src, E.ProducerLoad) or const_int(t.shape[-1]) != 1:
        return None
    axes = [iv.var for iv in t.op.axis]
    r = t.op.reduce_axis[0].var
    want = [*axes[:-1], r]
    if len(src.indices) != len(want) or any(i is not w for i, w in zip(src.indices, want)):
        return None
    return src, comb.identity_element[0]


def _at_row(load, axes) -> bool:
    """Is ``load`` ``T[*axes[:-1], 0]`` (a per-row statistic)?"""
    if not isinstance(load, E.ProducerLoad):
        return False
    idx = load.indices
    return len(idx) == len(axes) and all(i is a for i, a in zip(idx[:-1], axes[:-1])) and \
        const_int(idx[-1]) == 0


def _at(load, axes) -> bool:
    return isinstance(load, E.ProducerLoad) and len(load.indices) == len(axes) and \
        all(i is a for i, a in zip(load.indices, axes))


def _elementwise(t) -> bool:
    return isinstance(t.op, ComputeOp) and not t.op.reduce_axis


def _scalar_const(t):
    """The body of ``t`` when it is a rank-0 stage that reads nothing (a bound constant), else
    None."""
    if not _elementwise(t) or len(t.shape) != 0 or \
            any(isinstance(e, E.ProducerLoad) for e in post_order(t.op.body)):
        return None
    return t.op.body


def epilogue(out, is_root):
    """``(root, epi)`` where ``out`` is a chain of same-shape elementwise stages over a stage
    ``root`` that ``is_root`` accepts (each reading the one before only at its own position, and
    otherwise only rank-0 constants): ``epi(v)`` is ``out``'s value where ``root``'s is ``v``.
    ``(out, None)`` when ``is_root(out)``; None when no such chain leads to a root."""
    chain = [out]  # out, its producer, ... (walked iteratively: no recursion)
    while not is_root(chain[-1]):
        t = chain[-1]
        if not _elementwise(t) or not same_dims(t.shape, out.shape) or len(chain) > 16:
            return None
        axes = [iv.var for iv in t.op.axis]
        loads = [e for e in post_order(t.op.body) if isinstance(e, E.ProducerLoad)]  # one walk
        srcs = {id(e.producer): e.producer for e in loads if _scalar_const(e.producer) is None}
        if len(srcs) != 1 or _reads_axes(t.op.body, axes):
            return None
        (src,) = srcs.values()
        if any(e.producer is src and not at_own_position(e.indices, axes, t.shape)
               for e in loads):
            return None
        chain.append(src)
    if len(chain) == 1:
        return out, None
    norm = chain[-1]

    def epi(v):
        val = v
        for t in reversed(chain[:-1]):  # from the stage after norm up to out
            prev, cur = val, t

            def fpost(e, prev=prev, cur=cur):
                if isinstance(e, E.ProducerLoad):
                    c = _scalar_const(e.producer)
                    return c if c is not None else prev
                return None

            val = transform_expr(cur.op.body, fpost)
        return val

    return norm, epi


def _reads_axes(body, axes) -> bool:
    """Does ``body`` use an axis var outside of its loads' indices (an epilogue may not)?"""
    ids = {id(a) for a in axes}
    # one walk that does not enter the loads (no rebuilt copy of the body without them)
    stack, seen = [body], {id(body)}
    while stack:
        e = stack.pop()
        if isinstance(e, E.ProducerLoad):
            continue
        if isinstance(e, E.Var) and id(e) in ids:
            return True
        for c in expr_children(e):
            if id(c) not in seen:
                seen.add(id(c))
                stack.append(c)
    return False


def _output_stage(inputs, outputs, is_root):
    """``(stage, its axis vars, its body, epi)`` of the float32 elementwise stage of a
    one-input softmax candidate (``is_root``): its one output, or the stage under that
    output's elementwise epilogue (``epi``, ``epilogue``'s), else None."""
    if len(outputs) != 1 or len(inputs) != 1:
        return None
    peeled = epilogue(outputs[0], is_root)
    if peeled is None:
        return None
    norm, epi = peeled
    if not _elementwise(norm) or norm.dtype != "float32":
        return None
    return norm, [iv.var for iv in norm.op.axis], norm.op.body, epi


def match(inputs, outputs):
    """``(x, out, max_identity, exp_body, exp_stage, max_stage, epi)`` when the raised stages
    are a last-axis softmax of placeholder ``x`` (exactly the four stages of LegalizeOps'
    softmax; ``epi``: ``epilogue``'s function of an epilogue after it, or None), else None."""
    head = _output_stage(inputs, outputs, lambda t: _relax_softmax(t, inputs) is not None)
    if head is None:
        return None
    found = _relax_softmax(head[0], inputs)
    return None if found is None else _with_epilogue(found, head[3])


def _relax_softmax(norm, inputs):
    """``match``'s tuple (without the epilogue) when stage ``norm`` is LegalizeOps' softmax of
    placeholder ``inputs[0]``, else None."""
    if not _elementwise(norm) or norm.dtype != "float32":
        return None
    axes, body = [iv.var for iv in norm.op.axis], norm.op.body
    if not axes or not isinstance(body, E.Div) or not _at(body.a, axes) or \
            not _at_row(body.b, axes):
        return None
    ex, total = body.a.producer, body.b.producer
    s = _reduce_over_last(total, E.Add)
    if s is None or s[0].producer is not ex or s[1].value != 0:
        return None
    if not isinstance(ex.op, ComputeOp) or ex.op.reduce_axis:
        return None
    ex_axes = [iv.var for iv in ex.op.axis]
    call = ex.op.body
    if not isinstance(call, E.Call) or "exp" not in str(getattr(call.op, "name", call.op)) or \
            len(call.args) != 1 or not isinstance(call.args[0], E.Sub):
        return None
    sub = call.args[0]
    if not _at(sub.a, ex_axes) or not _at_row(sub.b, ex_axes):
        return None
    x, mx = sub.a.producer, sub.b.producer
    m = _reduce_over_last(mx, E.Max)
    if m is None or m[0].producer is not x or not isinstance(x.op, PlaceholderOp) or \
            x is not inputs[0]:
        return None
    shapes = [x.shape, ex.shape, norm.shape]
    if any(len(sh) != len(axes) for sh in shapes):
        return None
    if not all(same_dims(sh, x.shape) for sh in shapes) or \
            not same_dims([*x.shape[:-1], 1], mx.shape) or \
            not same_dims([*x.shape[:-1], 1], total.shape):
        return None
    return x, norm, m[1], call, ex, mx


def _with_epilogue(found, epi):
    """``found`` with ``epi`` appended, or None where the epilogue's row would not fit
    (``EPILOGUE_ROW_LIMIT``)."""
    width = const_int(found[0].shape[-1])
    if epi is not None and (width is None or width > EPILOGUE_ROW_LIMIT):
        return None
    return (*found, epi)


def match_relay(inputs, outputs):
    """``match``'s tuple for Relay's softmax compute over the last axis (``topi.nn``: stages
    max, sum of exp, reciprocal of the sum, and ``exp(x - max) * reciprocal``) of placeholder
    ``inputs[0]``, else None."""
    head = _output_stage(inputs, outputs, lambda t: relay_softmax(t) is not None)
    if head is None:
        return None
    found = relay_softmax(head[0])
    if found is None or not isinstance(found[0].op, PlaceholderOp) or found[0] is not inputs[0]:
        return None
    return _with_epilogue(found, head[3])


def relay_softmax(norm):
    """``match``'s tuple when stage ``norm`` is Relay's float32 softmax over the last axis of
    some tensor (a placeholder or a stage), else None."""
    if not isinstance(norm.op, ComputeOp) or norm.op.reduce_axis or norm.dtype != "float32":
        return None
    axes, body = [iv.var for iv in norm.op.axis], norm.op.body
    if not axes or not isinstance(body, E.Mul) or not isinstance(body.a, E.Call):
        return None
    call, recip = body.a, body.b
    if "exp" not in str(getattr(call.op, "name", call.op)) or len(call.args) != 1 or \
            not isinstance(call.args[0], E.Sub):
        return None
    sub = call.args[0]
    if not _at(sub.a, axes) or not _at_row(sub.b, axes):
        return None
    x, mx = sub.a.producer, sub.b.producer
    # the reciprocal of the row's total: a stage of its own, or inlined into the output's body
    rows = [mx]
    if _at_row(recip, axes) and isinstance(recip.producer.op, ComputeOp) and \
            not recip.producer.op.reduce_axis:
        rows.append(recip.producer)
        recip = recip.producer.op.body
        if not isinstance(recip, E.Div) or not _at(recip.b, [iv.var for iv in
                                                            rows[-1].op.axis]):
            return None
    elif not isinstance(recip, E.Div) or not _at_row(recip.b, axes):
        return None
    if not isinstance(recip.a, E.FloatImm) or recip.a.value != 1.0:
        return None
    total = recip.b.producer
    rows.append(total)
    # total = sum over the last axis of the same exp(x - max), the max at the row
    if not isinstance(total.op, ComputeOp) or len(total.op.reduce_axis) != 1:
        return None
    red = total.op.body
    if not isinstance(red, E.Reduce) or len(red.source) != 1 or red.init or \
            not isinstance(red.combiner.result[0], E.Add) or \
            red.combiner.identity_element[0].value != 0 or \
            (red.condition is not None and not (isinstance(red.condition, E.IntImm) and
                                                red.condition.value)):
        return None
    src = red.source[0]
    t_axes = [iv.var for iv in total.op.axis]
    r = total.op.reduce_axis[0].var
    if not isinstance(src, E.Call) or src.op != call.op or len(src.args) != 1 or \
            not isinstance(src.args[0], E.Sub):
        return None
    ssub = src.args[0]
    if not isinstance(ssub.a, E.ProducerLoad) or ssub.a.producer is not x or \
            len(ssub.a.indices) != len(t_axes) or \
            any(i is not w for i, w in zip(ssub.a.indices, [*t_axes[:-1], r])) or \
            not _at(ssub.b, t_axes) or ssub.b.producer is not mx:
        return None
    m = _reduce_over_last(mx, E.Max)
    if m is None or m[0].producer is not x:
        return None
    row = [*x.shape[:-1], 1]
    if len(x.shape) != len(axes) or not same_dims(norm.shape, x.shape) or \
            not all(same_dims(row, t.shape) for t in rows):
        return None
    return x, norm, m[1], call, total, mx


def emit(ctx, found, x_buf, out_buf) -> S.Stmt:
    """The row kernel for ``match``'s result, reading ``x_buf`` and writing ``out_buf``."""
    x, norm, ident, call, ex, mx, epi = found  # (epi: an epilogue; the exps go to a row)
    dims = [const_int(d) if const_int(d) is not None else d for d in x.shape]
    lead, width = dims[:-1], dims[-1]
    static = all(isinstance(d, int) for d in dims)
    dt = "int32" if static else next(d.dtype for d in dims if not isinstance(d, int))
    rows = prod_dims(lead, dt) if lead else 1
    xv = decl_buffer((rows, width), x_buf.dtype, "softmax_x", data=x_buf.data,
                     elem_offset=x_buf.elem_offset)
    ov = decl_buffer((rows, width), out_buf.dtype, "softmax_y", data=out_buf.data,
                     elem_offset=out_buf.elem_offset)
    ctx.ws_views.extend([xv, ov])
    nl = lanes("float32")
    zero = E.FloatImm("float32", 0.0)

    def c(v):
        return E.IntImm(dt, v) if isinstance(v, int) else v

    nw = MAX_ACCUMULATORS * nl if not isinstance(width, int) or \
        width >= 2 * MAX_ACCUMULATORS * nl else nl  # lanes of the max's accumulators

    def row_body(r):
        acc = decl_buffer((nw,), "float32", "sm_acc", scope="local")
        stat = decl_buffer((2,), "float32", "sm_stat", scope="local")
        row = decl_buffer((width,), "float32", "sm_row", scope="local") if epi else None

        def exp_at(j):  # exp(x[r, j] - max), through the matched call (same function)
            def fpost(e):
                if isinstance(e, E.ProducerLoad) and e.producer is x:
                    return E.BufferLoad(xv, [r, j])
                if isinstance(e, E.ProducerLoad) and e.producer is mx:
                    return E.BufferLoad(stat, [c(0)])
                return None

            return transform_expr(call, fpost)

        vi = ctx.fresh("l", dt)
        init = S.For(vi, c(0), c(nw), S.ForKind.VECTORIZED, S.BufferStore(acc, ident, [vi]))

        def lane_fold(slot, fold, folded):
            return S.SeqStmt([*fold_lanes(ctx, acc, folded, fold, dt), S.BufferStore(
                stat, fold(E.BufferLoad(stat, [c(slot)]), E.BufferLoad(acc, [c(0)])), [c(slot)])])

        def vec_pass(fvec, ftail, blocks: int = 1):
            """``fvec(j, lane, new)`` on vector chunks (lane ``j % nl`` of ``acc``, or with
            ``blocks`` of them at a time, lane ``j % (blocks * nl)``: independent
            accumulators), ``ftail(j)`` on a scalar tail. A static row of a vector or more ends
            with one vector chunk at ``width - nl`` overlapping the one before; there ``new``
            is the condition that a lane's element is not covered before (else None): five
            scalar exps per row of 197 cost as much as the row's twelve vectors."""
            nvec = width // nl if isinstance(width, int) else E.FloorDiv(width, c(nl))
            parts = vector_blocks(ctx, nvec, nl, blocks, lambda j, lane: fvec(j, lane, None), dt)
            done = nvec * nl if isinstance(nvec, int) else nvec * c(nl)
            rest = width - done
            if isinstance(rest, int) and rest and nvec:
                lv = ctx.fresh("vj", dt)
                parts.append(S.For(lv, c(0), c(nl), S.ForKind.VECTORIZED, fvec(
                    c(width - nl) + lv, lv, E.GE(lv, c(nl - rest)))))
            elif not isinstance(rest, int) or rest:
                t = ctx.fresh("t", dt)
                parts.append(S.For(t, c(done), c(rest), S.ForKind.SERIAL, ftail(t)))
            return parts

        def fmax(a, b):
            # ``a > b ? a : b`` (x86's one-instruction maxps), not IEEE's NaN-propagating max
            # (two compares and a mask or on the accumulator's chain): a NaN it drops still
            # reaches every output, through its exp and the row's sum
            return E.Select(E.GT(a, b), a, b)

        def fadd(a, b):
            return a + b

        def x_at(j):
            return E.BufferLoad(xv, [r, j])

        def y_at(j):
            return E.BufferLoad(ov, [r, j]) if row is None else E.BufferLoad(row, [j])

        def y_store(v, j):
            return S.BufferStore(ov, v, [r, j]) if row is None else S.BufferStore(row, v, [j])

        def acc_at(lane):
            return E.BufferLoad(acc, [lane])

        parts = [init]  # the row's max (an overlapping last chunk changes no maximum)
        # (the max in independent accumulators on long rows; the exp sum's adds hide behind
        # the exps)
        parts += vec_pass(lambda j, lane, _: S.BufferStore(acc, fmax(x_at(j), acc_at(lane)),
                                                           [lane]),
                          lambda j: S.BufferStore(acc, fmax(x_at(j), acc_at(c(0))), [c(0)]),
                          nw // nl)
        parts += [S.BufferStore(stat, ident, [c(0)]), lane_fold(0, fmax, nw)]
        vi2 = ctx.fresh("l", dt)
        parts.append(S.For(vi2, c(0), c(nl), S.ForKind.VECTORIZED,
                           S.BufferStore(acc, zero, [vi2])))

        def exp_sum(j, lane, new):  # store exp(x - max), add it to the sum where it is new
            term = y_at(j) if new is None else E.Select(new, y_at(j), zero)
            return S.SeqStmt([y_store(exp_at(j), j),
                              S.BufferStore(acc, acc_at(lane) + term, [lane])])

        parts += vec_pass(exp_sum, lambda j: exp_sum(j, c(0), None))
        parts += [S.BufferStore(stat, zero, [c(1)]), lane_fold(1, fadd, nl),
                  S.BufferStore(stat, E.FloatImm("float32", 1.0) / E.BufferLoad(stat, [c(1)]),
                                [c(1)])]

        def scale(j, _lane, new):  # times the reciprocal of the sum, once per element
            v = y_at(j) * E.BufferLoad(stat, [c(1)])
            if epi is not None:  # (the row keeps the exps: an overlapping chunk may redo one)
                return S.BufferStore(ov, epi(v), [r, j])
            return S.BufferStore(ov, v if new is None else E.Select(new, v, y_at(j)), [r, j])

        parts += vec_pass(scale, lambda j: scale(j, None, None))
        body = S.DeclBuffer(stat, S.SeqStmt(parts))
        body = S.Allocate(stat.data, "float32", [2], True, body)
        body = S.DeclBuffer(acc, body)
        body = S.Allocate(acc.data, "float32", [nw], True, body)
        if row is not None:
            body = S.Allocate(row.data, "float32", [width], True, S.DeclBuffer(row, body))
        return body

    work = width if isinstance(width, int) else 64  # (a symbolic width counted as 64)
    return parallel_for(ctx, rows, 4 * work, row_body, dt)


def applies() -> bool:
    """Is the row kernel used on this machine (``ROW_SOFTMAX``)?"""
    return ROW_SOFTMAX[vector_isa()]


