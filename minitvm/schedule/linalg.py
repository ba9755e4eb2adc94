"""Schedule of the dense factorization stages (tag ``linalg_loops``, ``topi.linalg``): Cholesky,
LU with partial pivoting and the triangular solves as loops over the matrix order, so that the
code is the same size for any order (the importers' unrolled compositions grew with it).

Every inner loop runs along a row (unit stride, a scalar times a row subtracted from a row), and
the matrices of a batch run on the thread pool when the work is large enough:

- Cholesky (right-looking, on ``U = L^T`` in the upper triangle of the output): the row of the
  next pivot scaled by its root, then subtracted from the rows below; the factor is transposed
  into the lower triangle at the end. A pivot ``<= 0`` (or NaN) is stored as NaN, so every later
  column is NaN too (where LAPACK stops with ``info > 0``).
- LU (``getrf``'s partial pivoting: the first row of largest magnitude at or below the
  diagonal): exchange, then eliminate below the pivot; a zero pivot skips its elimination.
- Solves: the row exchanges replayed, a forward then a backward substitution along rows (one
  of them alone for a triangular matrix).
"""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.broadcast import const_like
from ..topi.linalg import LINALG_TAG
from .common import allocated, dim, imm, parallel_for
from .lower import Rule, register_rule


def supported(t, options=None) -> bool:
    """Is ``t`` a factorization stage (static or symbolic matrix sizes)?"""
    return isinstance(t.op, ComputeOp) and t.op.tag == LINALG_TAG


def _e(d) -> E.PrimExpr:
    """A dim as an int32 expression: a constant, or a symbolic size cast (the loops' type)."""
    if isinstance(d, int):
        return imm(d)
    return d if d.dtype == "int32" else E.Cast("int32", d)


def _for(ctx, start, stop, body_of, name: str = "i") -> S.Stmt:
    """``for v in [start, stop)`` (PrimExprs or ints), ``body_of(v)`` its body."""
    v = ctx.fresh(name)
    start, stop = _e(start), _e(stop)
    return S.For(v, start, stop - start, S.ForKind.SERIAL, body_of(v))


def _seq(*stmts) -> S.Stmt:
    return S.SeqStmt(list(stmts)) if len(stmts) > 1 else stmts[0]


class _Matrix:
    """Row-major matrix ``r`` of a flat buffer: element ``(i, j)`` at ``base + i * ld + j``."""

    __slots__ = ("buf", "base", "ld")

    def __init__(self, buf, base, ld):
        self.buf, self.base, self.ld = buf, base, _e(ld)

    def at(self, i, j) -> E.PrimExpr:
        return self.base + i * self.ld + j

    def load(self, i, j) -> E.PrimExpr:
        return E.BufferLoad(self.buf, [self.at(i, j)])

    def store(self, value, i, j) -> S.Stmt:
        return S.BufferStore(self.buf, value, [self.at(i, j)])


def _axpy(ctx, dst: _Matrix, i, src: _Matrix, k, scale, start, stop) -> S.Stmt:
    """``dst[i, c] -= scale * src[k, c]`` for ``c`` in ``[start, stop)``."""
    return _for(ctx, start, stop, lambda c: dst.store(
        dst.load(i, c) - scale * src.load(k, c), i, c), "c")


def _scale_row(ctx, m: _Matrix, i, divisor, start, stop) -> S.Stmt:
    return _for(ctx, start, stop, lambda c: m.store(m.load(i, c) / divisor, i, c), "c")


def _swap_rows(ctx, m: _Matrix, k, p, cols: int, dt: str) -> S.Stmt:
    def body(c):
        t = ctx.fresh("t", dt)
        return S.LetStmt(t, m.load(k, c), _seq(m.store(m.load(p, c), k, c),
                                                m.store(t, p, c)))

    return _for(ctx, 0, cols, body, "c")


def _cholesky(ctx, a: _Matrix, o: _Matrix, n: int, dt: str) -> S.Stmt:
    zero, nan = const_like(0, dt), E.FloatImm(dt, float("nan"))
    copy = _for(ctx, 0, n, lambda i: _for(ctx, i, n, lambda k: o.store(a.load(k, i), i, k),
                                          "k"))

    def step(j):
        d, r = ctx.fresh("d", dt), ctx.fresh("r", dt)

        def update(i):
            u = ctx.fresh("u", dt)
            return S.LetStmt(u, o.load(j, i), _axpy(ctx, o, i, o, j, u, i, _e(n)))

        body = _seq(o.store(r, j, j), _scale_row(ctx, o, j, r, j + 1, _e(n)),
                    _for(ctx, j + 1, _e(n), update))
        value = E.Select(E.GT(d, zero), tir_op.sqrt(d), nan)
        return S.LetStmt(d, o.load(j, j), S.LetStmt(r, value, body))

    def mirror(i):
        return _for(ctx, i + 1, _e(n), lambda j: _seq(o.store(o.load(i, j), j, i),
                                                       o.store(zero, i, j)), "j")

    return _seq(copy, _for(ctx, 0, n, step, "j"), _for(ctx, 0, n, mirror))


def _lu(ctx, a: _Matrix, o: _Matrix, n: int, dt: str) -> S.Stmt:
    zero = const_like(0, dt)
    copy = _for(ctx, 0, n, lambda i: _for(ctx, 0, n, lambda c: o.store(a.load(i, c), i, c),
                                          "c"))
    best = decl_buffer((1,), dt, "lu_best")
    where = decl_buffer((1,), "int32", "lu_row")

    def step(k):
        def scan(i):
            v = ctx.fresh("v", dt)
            better = E.GT(v, E.BufferLoad(best, [imm(0)]))
            return S.LetStmt(v, tir_op.abs(o.load(i, k)), S.IfThenElse(better, _seq(
                S.BufferStore(best, v, [imm(0)]), S.BufferStore(where, i, [imm(0)]))))

        p, d = ctx.fresh("p"), ctx.fresh("d", dt)

        def eliminate(i):
            m = ctx.fresh("m", dt)
            return S.LetStmt(m, o.load(i, k) / d, _seq(
                o.store(m, i, k), _axpy(ctx, o, i, o, k, m, k + 1, _e(n))))

        pivot = S.LetStmt(p, E.BufferLoad(where, [imm(0)]), _seq(
            o.store(E.Cast(dt, p), k, _e(n)), _swap_rows(ctx, o, k, p, n, dt),
            S.LetStmt(d, o.load(k, k), S.IfThenElse(
                E.NE(d, zero), _for(ctx, k + 1, _e(n), eliminate)))))
        return _seq(S.BufferStore(best, const_like(-1, dt), [imm(0)]),
                    S.BufferStore(where, k, [imm(0)]), _for(ctx, k, _e(n), scan), pivot)

    return allocated(best, allocated(where, _seq(copy, _for(ctx, 0, n, step, "k"))))


def _solve(ctx, f: _Matrix, b: _Matrix, x: _Matrix, n: int, m: int, kind: str,
           dt: str) -> S.Stmt:
    """``A X = B``: LU's row exchanges replayed, then a forward substitution on the lower
    factor and a backward one on the upper (Cholesky's is ``L^T``); a triangular ``A``
    ("lower" / "upper", "unit_" for a unit diagonal) takes only its own substitution."""
    copy = _for(ctx, 0, n, lambda i: _for(ctx, 0, m, lambda c: x.store(b.load(i, c), i, c),
                                          "c"))
    parts = [copy]
    if kind == "lu":
        parts.append(_for(ctx, 0, n, lambda k: _swap_rows(
            ctx, x, k, E.Cast("int32", f.load(k, _e(n))), m, dt), "k"))

    def forward(i):
        eliminate = _for(ctx, 0, i, lambda k: _axpy(ctx, x, i, x, k, f.load(i, k), 0, m), "k")
        if kind in ("lu", "unit_lower"):  # unit lower
            return eliminate
        return _seq(eliminate, _scale_row(ctx, x, i, f.load(i, i), 0, m))

    def backward(r):
        i = ctx.fresh("i")
        # U[i, k] for LU and an upper A, L[k, i] (L^T) for Cholesky
        coefficient = (lambda k: f.load(k, i)) if kind == "cholesky" else \
            (lambda k: f.load(i, k))
        eliminate = _for(ctx, i + 1, _e(n), lambda k: _axpy(ctx, x, i, x, k, coefficient(k),
                                                                0, m), "k")
        if kind != "unit_upper":
            eliminate = _seq(eliminate, _scale_row(ctx, x, i, f.load(i, i), 0, m))
        return S.LetStmt(i, _e(n) - imm(1) - r, eliminate)

    if kind in ("lu", "cholesky", "lower", "unit_lower"):
        parts.append(_for(ctx, 0, n, forward))
    if kind in ("lu", "cholesky", "upper", "unit_upper"):
        parts.append(_for(ctx, 0, n, backward, "r"))
    return _seq(*parts)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing factorization stage ``t`` into ``out`` (see the module)."""
    kind = t.op.attrs["kind"]
    operands = t.op.attrs["operands"]
    bufs = [ctx.flat_view(ctx.buf[id(s)]) for s in operands]
    y = ctx.flat_view(out)
    dt = t.dtype
    batch, n, cols = (dim(d) for d in t.shape)
    if kind == "lu":
        def body(v):
            return _lu(ctx, _Matrix(bufs[0], v * _e(n) * _e(n), n),
                       _Matrix(y, v * _e(n) * (_e(n) + imm(1)), n + 1), n, dt)
        work = _work(n, n, n)
    elif kind == "cholesky":
        def body(v):
            return _cholesky(ctx, _Matrix(bufs[0], v * _e(n) * _e(n), n),
                             _Matrix(y, v * _e(n) * _e(n), n), n, dt)
        work = _work(n, n, n) // 3
    else:
        ld = dim(operands[0].shape[2])

        def body(v):
            return _solve(ctx, _Matrix(bufs[0], v * _e(n) * _e(ld), ld),
                          _Matrix(bufs[1], v * _e(n) * _e(cols), cols),
                          _Matrix(y, v * _e(n) * _e(cols), cols), n, cols, kind[len("solve_"):],
                          dt)
        work = _work(n, n, cols)
    if any(isinstance(d, int) and d == 0 for d in (batch, n)):
        return S.Evaluate(imm(0))
    return parallel_for(ctx, _e(batch), max(work, 1), body, "int32")


def _work(*dims) -> int:
    """Multiply-adds per matrix for the thread pool's decision; a symbolic size counts as
    ``SYMBOLIC_ORDER_GUESS`` (an order-64 matrix's work is worth a thread)."""
    work = 1
    for d in dims:
        work *= d if isinstance(d, int) else SYMBOLIC_ORDER_GUESS
    return work


SYMBOLIC_ORDER_GUESS = 64


RULE = Rule("dense factorizations: row loops", "linalg", supported, emit, symbolic=True,
            materialize=True)
register_rule(LINALG_TAG, RULE)
