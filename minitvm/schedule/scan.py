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
"""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.broadcast import const_like
from ..topi.scan import SCAN_TAG
from .common import PARALLEL_MIN_WORK, allocated, const_int, divisor_near, imm
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner
from .lower import Rule, register_rule

ROWS = 8  # rows scanned together when the axis is innermost
CHUNK = 256  # inner elements per parallel task when the axis is not innermost


def supported(t, options=None) -> bool:
    """Is ``t`` a scan stage with static shapes?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != SCAN_TAG:
        return False
    (x,) = t.op.attrs["operands"]
    return all(const_int(d) is not None for d in (*t.shape, *x.shape))


def _split(t) -> tuple[int, int, int]:
    """``(outer, n, inner)``: the input around the scanned axis."""
    (x,) = t.op.attrs["operands"]
    dims = [const_int(d) for d in x.shape]
    axis = t.op.attrs["axis"]
    if axis is None:
        size = 1
        for d in dims:
            size *= d
        return 1, size, 1
    outer = inner = 1
    for d in dims[:axis]:
        outer *= d
    for d in dims[axis + 1:]:
        inner *= d
    return outer, dims[axis], inner


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing scan stage ``t`` into ``out``."""
    a = t.op.attrs
    (src,) = a["operands"]
    x, y = ctx.flat_view(ctx.buf[id(src)]), ctx.flat_view(out)
    dt = t.dtype
    outer, n, inner = _split(t)
    if outer * n * inner == 0:
        return S.Evaluate(imm(0))
    ident = const_like(0 if a["scan"] == "sum" else 1, dt)

    def combine(acc, v):
        return acc + v if a["scan"] == "sum" else acc * v

    def load(idx):
        v = E.BufferLoad(x, [idx])
        return v if v.dtype == dt else E.Cast(dt, v)

    if inner == 1:
        return _rows(ctx, x, y, outer, n, dt, a["exclusive"], ident, combine, load)
    return _planes(ctx, y, outer, n, inner, dt, a["exclusive"], ident, combine, load)


def _rows(ctx, x, y, outer, n, dt, exclusive, ident, combine, load) -> S.Stmt:
    """Rows of ``n`` contiguous elements, ``ROWS`` at a time (the running values in a local
    array that LLVM keeps in registers: its indices are constants)."""

    def block(r0, rows: int) -> S.Stmt:
        acc = decl_buffer((rows,), dt, "scan_acc")
        first, step = [], []
        k = ctx.fresh("k")
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
        if n > 1:
            body.append(S.For(k, imm(1), imm(n - 1), S.ForKind.SERIAL, S.SeqStmt(step)))
        return allocated(acc, S.SeqStmt(body) if len(body) > 1 else body[0])

    rows = min(ROWS, outer)
    full, rest = divmod(outer, rows)
    parallel = full > 1 and outer * n >= PARALLEL_MIN_WORK
    parts = [_outer_loops(ctx, [full], parallel, lambda idx: block(idx[0] * rows, rows))]
    if rest:
        parts.append(block(imm(full * rows), rest))
    return S.SeqStmt(parts) if len(parts) > 1 else parts[0]


def _planes(ctx, y, outer, n, inner, dt, exclusive, ident, combine, load) -> S.Stmt:
    """Planes ``[n, inner]``: each row of the plane from the one before, vectorized along the
    inner axes; the plane's columns split into chunks so that few planes still run in
    parallel."""
    chunk = inner if inner <= CHUNK else (divisor_near(inner, CHUNK) or inner)
    nch = inner // chunk
    lanes = _lanes(dt)
    parallel = outer * nch > 1 and outer * n * inner >= PARALLEL_MIN_WORK

    def task(idx):
        o, c = idx
        base = o * (n * inner) + c * chunk
        if exclusive:
            first = _vector_inner(ctx, chunk, lanes, lambda j: S.BufferStore(
                y, ident, [base + j]))
        else:
            first = _vector_inner(ctx, chunk, lanes, lambda j: S.BufferStore(
                y, load(base + j), [base + j]))
        if n == 1:
            return first
        k = ctx.fresh("k")
        row, prev = base + k * inner, base + (k - 1) * inner
        src = prev if exclusive else row
        step = _vector_inner(ctx, chunk, lanes, lambda j: S.BufferStore(
            y, combine(E.BufferLoad(y, [prev + j]), load(src + j)), [row + j]))
        return S.SeqStmt([first, S.For(k, imm(1), imm(n - 1), S.ForKind.SERIAL, step)])

    return _outer_loops(ctx, [outer, nch], parallel, task)


register_rule(SCAN_TAG, Rule("scan rows", "scan", supported, emit, materialize=True))
