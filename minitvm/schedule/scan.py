"""Schedule of prefix scans (tag ``scan``: Relay's ``cumsum`` / ``cumprod``): one pass per row.

A scan stage's compute reduces the whole axis under a ``k <= i`` mask (quadratic work). Here the
input is seen as ``[outer, n, inner]`` around the scanned axis (``[1, size, 1]`` when the axis is
None) and each output element is its predecessor combined with one input element, in the order
numpy's ``cumsum`` adds them (the same rounding):

- scanned axis innermost (``inner == 1``): ``ROWS`` rows advance together, each with its running
  value in a register, so their dependency chains overlap;
- otherwise: ``out[o, k, :] = out[o, k - 1, :] + x[o, k, :]`` as unit-stride vectors over the
  inner axes.

The rows (or row chunks) run on the thread pool when the work is large enough.

Extents may be symbolic (a dynamic batch or length: Relay's symbolic VM kernels): the loops
then run to bounds read at run time, the rows ``ROWS`` at a time while that many remain and one
at a time after, and an empty input writes nothing. Each element is combined in the same order
as with static extents, so both give the same bits.
"""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.broadcast import const_like
from ..topi.scan import SCAN_TAG
from .common import (
    PARALLEL_MIN_WORK,
    allocated,
    const_int,
    divisor_near,
    imm,
    is_static,
    prod_dims,
)
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner
from .lower import Rule, register_rule

ROWS = 8  # rows scanned together when the axis is innermost
CHUNK = 256  # inner elements per parallel task when the axis is not innermost


def supported(t, options=None) -> bool:
    """Is ``t`` a scan stage? (Its extents may be symbolic.)"""
    return isinstance(t.op, ComputeOp) and t.op.tag == SCAN_TAG


def _split(t) -> tuple:
    """``(outer, n, inner)``: the input around the scanned axis, ints where static, int64
    expressions where symbolic (``common.prod_dims``)."""
    (x,) = t.op.attrs["operands"]
    axis = t.op.attrs["axis"]
    if axis is None:
        return 1, _extent(x.shape), 1
    return _extent(x.shape[:axis]), _extent([x.shape[axis]]), _extent(x.shape[axis + 1:])


def _extent(dims):
    """The product of ``dims``: an int when static, else an int64 expression."""
    return prod_dims(dims, "int64") if not is_static(dims) else prod_dims(dims)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing scan stage ``t`` into ``out``."""
    a = t.op.attrs
    (src,) = a["operands"]
    x, y = ctx.flat_view(ctx.buf[id(src)]), ctx.flat_view(out)
    dt = t.dtype
    outer, n, inner = _split(t)
    static = all(isinstance(d, int) for d in (outer, n, inner))
    if static and outer * n * inner == 0:
        return S.Evaluate(imm(0))
    ident = const_like(0 if a["scan"] == "sum" else 1, dt)

    def combine(acc, v):
        return acc + v if a["scan"] == "sum" else acc * v

    def load(idx):
        v = E.BufferLoad(x, [idx])
        return v if v.dtype == dt else E.Cast(dt, v)

    if static:
        if inner == 1:
            return _rows(ctx, x, y, outer, n, dt, a["exclusive"], ident, combine, load)
        return _planes(ctx, y, outer, n, inner, dt, a["exclusive"], ident, combine, load)
    c = _i64
    outer, n, inner = (c(d) if isinstance(d, int) else d for d in (outer, n, inner))
    if const_int(inner) == 1:
        body = _rows_symbolic(ctx, x, y, outer, n, dt, a["exclusive"], ident, combine, load)
    else:
        body = _planes(ctx, y, outer, n, inner, dt, a["exclusive"], ident, combine, load)
    # (an empty input: nothing to write, and a row's first store would be out of bounds)
    return S.IfThenElse(E.GT(outer * n * inner, c(0)), body, None)


def _i64(v: int) -> E.IntImm:
    return E.IntImm("int64", v)


def _rows(ctx, x, y, outer, n, dt, exclusive, ident, combine, load) -> S.Stmt:
    """Rows of ``n`` contiguous elements, ``ROWS`` at a time (the running values in a local
    array that LLVM keeps in registers: its indices are constants)."""
    rows = min(ROWS, outer)
    full, rest = divmod(outer, rows)
    parallel = full > 1 and outer * n >= PARALLEL_MIN_WORK

    def block(r0, count: int) -> S.Stmt:
        return _row_block(ctx, x, y, r0, count, n, dt, exclusive, ident, combine, load)

    parts = [_outer_loops(ctx, [full], parallel, lambda idx: block(idx[0] * rows, rows))]
    if rest:
        parts.append(block(imm(full * rows), rest))
    return S.SeqStmt(parts) if len(parts) > 1 else parts[0]


def _rows_symbolic(ctx, x, y, outer, n, dt, exclusive, ident, combine, load) -> S.Stmt:
    """``_rows`` over a run-time row count and length (int64 expressions): blocks of ``ROWS``
    rows while that many remain (on the thread pool when there are enough at run time), then
    the last rows one by one."""
    c = _i64
    full = E.FloorDiv(outer, c(ROWS))
    work = ROWS * (const_int(n) or 1)

    def block(r0, count: int) -> S.Stmt:
        return _row_block(ctx, x, y, r0, count, n, dt, exclusive, ident, combine, load)

    blocks = _outer_loops(ctx, [full], True, lambda idx: block(idx[0] * c(ROWS), ROWS),
                          work_per_iter=work)
    r = ctx.fresh("r", "int64")
    done = full * c(ROWS)
    tail = S.For(r, done, outer - done, S.ForKind.SERIAL, block(r, 1))
    return S.SeqStmt([blocks, tail])


def _row_block(ctx, x, y, r0, rows: int, n, dt, exclusive, ident, combine, load) -> S.Stmt:
    """Rows ``r0 .. r0 + rows`` scanned together, each with its running value in ``acc``."""
    acc = decl_buffer((rows,), dt, "scan_acc")
    first, step = [], []
    k = ctx.fresh("k", "int32" if isinstance(n, int) else n.dtype)
    for r in range(rows):
        base = (r0 + r) * n
        if exclusive:  # out[0] = identity; out[k] = x[0] + ... + x[k - 1]
            first += [S.BufferStore(y, ident, [base]),
                      S.BufferStore(acc, load(base), [imm(r)])]
            step += [S.BufferStore(y, E.BufferLoad(acc, [imm(r)]), [base + k]),
                     S.BufferStore(acc, combine(E.BufferLoad(acc, [imm(r)]),
                                                load(base + k)), [imm(r)])]
        else:  # out[0] = x[0] as numpy has it (0 + -0.0 would be +0.0)
            first += [S.BufferStore(acc, load(base), [imm(r)]),
                      S.BufferStore(y, E.BufferLoad(acc, [imm(r)]), [base])]
            step += [S.BufferStore(acc, combine(E.BufferLoad(acc, [imm(r)]),
                                                load(base + k)), [imm(r)]),
                     S.BufferStore(y, E.BufferLoad(acc, [imm(r)]), [base + k])]
    body = list(first)
    if not isinstance(n, int):  # (a run-time length: the loop runs n - 1 >= 0 times)
        one = E.IntImm(n.dtype, 1)
        body.append(S.For(k, one, n - one, S.ForKind.SERIAL, S.SeqStmt(step)))
    elif n > 1:
        body.append(S.For(k, imm(1), imm(n - 1), S.ForKind.SERIAL, S.SeqStmt(step)))
    return allocated(acc, S.SeqStmt(body) if len(body) > 1 else body[0])


def _planes(ctx, y, outer, n, inner, dt, exclusive, ident, combine, load) -> S.Stmt:
    """Planes ``[n, inner]``: each row of the plane from the one before, vectorized along the
    inner axes; the plane's columns split into chunks so that few planes still run in
    parallel. Extents may be symbolic (int64 expressions: a run-time inner extent is one
    chunk)."""
    if isinstance(inner, int) or const_int(inner) is not None:
        ci = const_int(inner)
        chunk = ci if ci <= CHUNK else (divisor_near(ci, CHUNK) or ci)
        nch = ci // chunk
    else:
        chunk, nch = inner, 1
    lanes = _lanes(dt)
    static = all(isinstance(d, int) for d in (outer, n, inner))
    if static:
        parallel = outer * nch > 1 and outer * n * inner >= PARALLEL_MIN_WORK
        work = 1
    else:  # (run on the thread pool once there are enough tasks at run time)
        parallel, work = True, (const_int(n) or 1) * (const_int(chunk) or 1)

    def task(idx):
        o, c = idx
        base = o * (n * inner) + c * chunk
        if exclusive:
            first = _vector_inner(ctx, chunk, lanes, lambda j: S.BufferStore(
                y, ident, [base + j]))
        else:
            first = _vector_inner(ctx, chunk, lanes, lambda j: S.BufferStore(
                y, load(base + j), [base + j]))
        if isinstance(n, int) and n == 1:
            return first
        k = ctx.fresh("k", "int32" if isinstance(n, int) else n.dtype)
        one = imm(1) if isinstance(n, int) else E.IntImm(n.dtype, 1)
        row, prev = base + k * inner, base + (k - one) * inner
        src = prev if exclusive else row
        step = _vector_inner(ctx, chunk, lanes, lambda j: S.BufferStore(
            y, combine(E.BufferLoad(y, [prev + j]), load(src + j)), [row + j]))
        last = imm(n - 1) if isinstance(n, int) else n - one
        return S.SeqStmt([first, S.For(k, one, last, S.ForKind.SERIAL, step)])

    return _outer_loops(ctx, [outer, nch], parallel, task, work_per_iter=work)


register_rule(SCAN_TAG, Rule("scan rows", "scan", supported, emit, symbolic=True,
                             materialize=True))
