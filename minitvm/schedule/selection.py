"""Schedule of top-k selection stages (tag ``topk``, ``topi.selection``): one pass per row.

Each row (the input seen as ``[outer, n, inner]`` around the selected axis; rows in parallel when
the work is large) keeps its best ``k`` values and positions so far, sorted best first, in local
arrays with constant indices (LLVM keeps them in registers, as many as fit). An element that
beats the current ``k``-th is inserted from the bottom up, by an unrolled chain of branches:
each entry it beats moves down one slot, and it takes the slot below the first entry it does not
beat. The first ``k`` elements fill empty slots (position -1) that every element beats. On
random data almost every element costs one compare (about ``k ln(n / k)`` insertions per row,
each passing ``k / 2`` entries on average); rows sorted the wrong way round insert every
element at the top (``n k`` moves), which is why ``topi.selection.MAX_K`` is small.
"""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.selection import TOPK_TAG, better
from .common import PARALLEL_MIN_WORK, allocated, const_int, imm
from .common import outer_loops as _outer_loops
from .lower import Rule, register_rule


def supported(t, options=None) -> bool:
    """Is ``t`` a top-k selection stage with static shapes?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != TOPK_TAG:
        return False
    (x,) = t.op.attrs["operands"]
    return all(const_int(d) is not None for d in (*t.shape, *x.shape))


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements writing the positions of selection stage ``t`` into ``out``."""
    a = t.op.attrs
    (src,) = a["operands"]
    x, y = ctx.flat_view(ctx.buf[id(src)]), ctx.flat_view(out)
    dims = [const_int(d) for d in src.shape]
    axis, k, largest = a["axis"], a["k"], a["largest"]
    n = dims[axis]
    outer = inner = 1
    for d in dims[:axis]:
        outer *= d
    for d in dims[axis + 1:]:
        inner *= d
    if outer * inner == 0:
        return S.Evaluate(imm(0))
    dt, ity = src.dtype, "int32"

    def row(idx):
        o, i = idx
        vals = decl_buffer((k,), dt, "topk_vals")
        pos = decl_buffer((k,), ity, "topk_pos")
        base = o * (n * inner) + i

        def val(s):
            return E.BufferLoad(vals, [imm(s)])

        def at(s):
            return E.BufferLoad(pos, [imm(s)])

        def beats(v, s, filling):  # does v go before slot s?
            b = better(v, val(s), largest)
            return E.Or(E.LT(at(s), imm(0)), b) if filling else b

        def insert(v, p, filling):
            # v beats slot s: slot s moves down one, then v either beats slot s - 1 too or
            # takes slot s (a chain of branches as deep as the entries v passes)
            def passed(s):
                stmts = []
                if s + 1 < k:
                    stmts += [S.BufferStore(vals, val(s), [imm(s + 1)]),
                              S.BufferStore(pos, at(s), [imm(s + 1)])]
                take = S.SeqStmt([S.BufferStore(vals, v, [imm(s)]),
                                  S.BufferStore(pos, p, [imm(s)])])
                stmts.append(S.IfThenElse(beats(v, s - 1, filling), passed(s - 1), take)
                             if s else take)
                return S.SeqStmt(stmts) if len(stmts) > 1 else stmts[0]

            return passed(k - 1)

        def sweep(lo: int, extent: int, filling: bool) -> S.Stmt:
            p, v = ctx.fresh("p"), ctx.fresh("topk_v", dt)
            load = E.BufferLoad(x, [base + p * inner])
            step = S.IfThenElse(beats(v, k - 1, filling), insert(v, p, filling))
            return S.For(p, imm(lo), imm(extent), S.ForKind.SERIAL, S.LetStmt(v, load, step))

        init = []
        for s in range(k):  # empty slots (their values only need to be defined)
            init += [S.BufferStore(vals, E.BufferLoad(x, [base]), [imm(s)]),
                     S.BufferStore(pos, imm(-1), [imm(s)])]
        parts = [*init, sweep(0, k, True)]
        if n > k:
            parts.append(sweep(k, n - k, False))
        for s in range(k):
            p = at(s)
            parts.append(S.BufferStore(y, p if y.dtype == ity else E.Cast(y.dtype, p),
                                       [o * (k * inner) + s * inner + i]))
        return allocated(vals, allocated(pos, S.SeqStmt(parts)))

    work = n * (1 + k // 4)
    parallel = outer * inner > 1 and outer * inner * work >= PARALLEL_MIN_WORK
    return _outer_loops(ctx, [outer, inner], parallel, row)


register_rule(TOPK_TAG, Rule("top-k rows", "selection", supported, emit, materialize=True))
