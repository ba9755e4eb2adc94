"""Schedule of the CTC forward variables (tag ``ctc_alpha``, ``topi.ctc``): per sample (the
samples on the thread pool when the work is large enough), the table filled with ``-inf``, the
first frame's two entries, then for each later frame of the sample one pass over its extended
target ``blank, y_1, blank, ..., y_L, blank``:

    alpha[t, s] = log(e^alpha[t-1, s] + e^alpha[t-1, s-1] + e^alpha[t-1, s-2]) + lp[t, ext[s]]

the ``s - 2`` term only where ``ext[s]`` is a label unlike ``ext[s - 2]``; the log-sum-exp
shifted by its largest term. Every index is clamped into its buffer, so that out-of-range
lengths or labels never read outside it."""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.ctc import CTC_ALPHA_TAG
from .common import allocated, const_int, imm, parallel_for
from .lower import Rule, register_rule


def supported(t, options=None) -> bool:
    """Is ``t`` a CTC forward-variable stage (static or symbolic sizes)?"""
    return isinstance(t.op, ComputeOp) and t.op.tag == CTC_ALPHA_TAG


def _size(d):
    """A dim as an int (static) or an int32 expression (a symbolic size)."""
    c = const_int(d)
    if c is not None:
        return c
    return d if d.dtype == "int32" else E.Cast("int32", d)


def _e(v) -> E.PrimExpr:
    return imm(v) if isinstance(v, int) else v


def _for(ctx, start, stop, body_of, name: str) -> S.Stmt:
    v = ctx.fresh(name)
    start = imm(start) if isinstance(start, int) else start
    stop = imm(stop) if isinstance(stop, int) else stop
    return S.For(v, start, stop - start, S.ForKind.SERIAL, body_of(v))


def _clamp(v, low, high):
    """``v`` clamped into ``[low, high]`` (int32 expressions or ints)."""
    return tir_op.max(tir_op.min(v, imm(high) if isinstance(high, int) else high), imm(low))


def _int(load) -> E.PrimExpr:
    return load if load.dtype == "int32" else E.Cast("int32", load)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing CTC stage ``t`` into ``out`` (see the module)."""
    a = t.op.attrs
    lp_t, tg_t, il_t, tl_t = a["operands"]
    lp, tg, il, tl = (ctx.flat_view(ctx.buf[id(s)]) for s in a["operands"])
    y = ctx.flat_view(out)
    dt = t.dtype
    frames, batch, classes = (_size(d) for d in lp_t.shape)
    width = a["width"]
    concatenated = len(tg_t.shape) == 1
    per_sample = _size(tg_t.shape[-1])
    total = per_sample if concatenated else batch * per_sample
    neg_inf = E.FloatImm(dt, float("-inf"))
    if any(isinstance(d, int) and d == 0 for d in (batch, frames, width)):
        return S.Evaluate(imm(0))
    fw = frames * width  # (an int, or an expression of a symbolic frame count)
    # (a symbolic targets length is stated positive by ``topi.ctc``: one label to read)
    last = max(total - 1, 0) if isinstance(total, int) else total - imm(1)

    def sample(n):
        steps = ctx.fresh("steps")
        length, extended, base = ctx.fresh("length"), ctx.fresh("extended"), ctx.fresh("base")

        def at(time, s):
            return n * _e(fw) + time * imm(width) + s

        def label(s):
            """``ext[s]``: the blank at even ``s``, else the target's ``(s - 1) / 2``-th."""
            index = _clamp(base + E.FloorDiv(s - imm(1), imm(2)), 0, last)
            value = _int(E.BufferLoad(tg, [index])) if not isinstance(total, int) or total \
                else imm(a["blank"])
            return E.Select(E.EQ(E.FloorMod(s, imm(2)), imm(1)), value, imm(a["blank"]))

        def emission(time, s):
            cls = _clamp(label(s), 0, classes - 1)
            v = E.BufferLoad(lp, [(time * _e(batch) + n) * _e(classes) + cls])
            return v if v.dtype == dt else E.Cast(dt, v)

        def previous(time, s, back: int):
            return E.BufferLoad(y, [at(time - imm(1), tir_op.max(s - imm(back), imm(0)))])

        def step(time):
            def entry(s):
                stay, move = ctx.fresh("stay", dt), ctx.fresh("move", dt)
                skip, top = ctx.fresh("skip", dt), ctx.fresh("top", dt)
                can_skip = E.And(E.And(E.GE(s, imm(2)), E.EQ(E.FloorMod(s, imm(2)), imm(1))),
                                 E.NE(label(s), label(s - imm(2))))
                total_exp = tir_op.exp(stay - top) + tir_op.exp(move - top) + \
                    tir_op.exp(skip - top)
                lse = E.Select(E.EQ(top, neg_inf), neg_inf, top + tir_op.log(total_exp))
                body = S.BufferStore(y, lse + emission(time, s), [at(time, s)])
                body = S.LetStmt(top, tir_op.max(tir_op.max(stay, move), skip), body)
                body = S.LetStmt(skip, E.Select(can_skip, previous(time, s, 2), neg_inf), body)
                body = S.LetStmt(move, E.Select(E.GE(s, imm(1)), previous(time, s, 1), neg_inf),
                                 body)
                return S.LetStmt(stay, previous(time, s, 0), body)

            return _for(ctx, 0, extended, entry, "s")

        fill = _for(ctx, 0, fw, lambda i: S.BufferStore(y, neg_inf, [n * _e(fw) + i]), "i")
        first = [S.BufferStore(y, emission(imm(0), imm(0)), [at(imm(0), imm(0))])]
        if width > 1:
            first.append(S.IfThenElse(E.GT(extended, imm(1)), S.BufferStore(
                y, emission(imm(0), imm(1)), [at(imm(0), imm(1))])))
        run = S.IfThenElse(E.GT(steps, imm(0)), S.SeqStmt(
            [*first, _for(ctx, 1, steps, step, "t")]))
        body = S.SeqStmt([fill, run])
        body = S.LetStmt(extended, _clamp(length * imm(2) + imm(1), 0, width), body)
        body = S.LetStmt(length, _int(E.BufferLoad(tl, [n])), body)
        if concatenated:  # the sample's first label: the lengths before it summed
            acc = decl_buffer((1,), "int32", "ctc_offset")
            zero = [imm(0)]
            body = allocated(acc, S.SeqStmt([
                S.BufferStore(acc, imm(0), zero),
                _for(ctx, 0, n, lambda j: S.BufferStore(
                    acc, E.BufferLoad(acc, zero) + _int(E.BufferLoad(tl, [j])), zero), "j"),
                S.LetStmt(base, E.BufferLoad(acc, zero), body)]))
        else:
            body = S.LetStmt(base, n * _e(per_sample), body)
        return S.LetStmt(steps, _clamp(_int(E.BufferLoad(il, [n])), 0, frames), body)

    # (a symbolic frame count's work guessed as ``SYMBOLIC_FRAMES_GUESS`` frames')
    work = (frames if isinstance(frames, int) else SYMBOLIC_FRAMES_GUESS) * width * 8
    return parallel_for(ctx, _e(batch), work, sample)


SYMBOLIC_FRAMES_GUESS = 64

RULE = Rule("CTC forward variables: frame loops", "ctc", supported, emit, symbolic=True,
            materialize=True)
register_rule(CTC_ALPHA_TAG, RULE)
