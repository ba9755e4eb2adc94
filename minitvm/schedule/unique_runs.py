"""Native kernel of ``unique`` over consecutive runs (torch.unique_consecutive): one in-order
pass over the 1-D input marking where a run starts (the element ``!=`` the one before, so each
NaN is its own run and -0.0 joins 0.0, as torch's ``==``), writing each run's first index and
each element's run as it goes, then each run's length from where the next starts; no sort, no
key transform.
It writes the same [3 * N + 1] int32 table as ``schedule.unique_sort`` (first indices, inverse,
counts, then the number of runs; zero past the runs), so both dialects read it off unchanged; or
(``unique_runs_outputs_prim_func``) the four parts into buffers of their own, int64, which a
caller returns as they are (Relax's torch.unique_consecutive: no slice and cast of a table).
"""

from __future__ import annotations

from ..ir.op import OpPattern
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from .common import LowerCtx, allocated, const_int, imm

__all__ = ["emit_unique_runs", "emit_unique_runs_into", "unique_runs_outputs_prim_func",
           "unique_runs_prim_func"]


def _n(data):
    (dim,) = data.shape
    return imm(const_int(dim)) if const_int(dim) is not None else E.Cast("int32", dim)


def emit_unique_runs_into(ctx, data, first, inverse, counts, count, pad: bool = False) -> S.Stmt:
    """Statements writing the runs of the 1-D ``data``: each run's first index, each element's
    run, each run's length and the number of runs. Each output is ``(flat buffer, offset)``
    (the table's parts, or buffers of their own, of any integer type: values are cast on
    store); ``pad`` zeroes the first indices and lengths past the runs."""
    n = _n(data)
    x = ctx.flat_view(data)
    runs = decl_buffer((1,), "int32", "uq_runs", scope="local")
    last = E.BufferLoad(runs, [imm(0)])  # the current run's index (-1 before the first)
    s, z = ctx.fresh("s"), ctx.fresh("z")

    def store(place, value, at):
        buf, off = place
        v = value if buf.dtype == "int32" else E.Cast(buf.dtype, value)
        return S.BufferStore(buf, v, [at if off is None else off + at])

    def load(place, at):
        buf, off = place
        v = E.BufferLoad(buf, [at if off is None else off + at])
        return v if buf.dtype == "int32" else E.Cast("int32", v)

    starts = E.Or(E.EQ(s, imm(0)), E.NE(E.BufferLoad(x, [s]),
                                        E.BufferLoad(x, [E.Max(s - imm(1), imm(0))])))
    walk = S.For(s, imm(0), n, S.ForKind.SERIAL, S.SeqStmt([
        S.IfThenElse(starts, S.SeqStmt([S.BufferStore(runs, last + imm(1), [imm(0)]),
                                        store(first, s, last)])),
        store(inverse, last, s)]))
    # a run's length: where the next one starts (the last one's: the end) less its own start
    g = ctx.fresh("g")
    end = E.Select(E.EQ(g, last), n, load(first, E.Min(g + imm(1), n - imm(1))))
    lengths = S.For(g, imm(0), last + imm(1), S.ForKind.SERIAL,
                    store(counts, end - load(first, g), g))
    body = [S.BufferStore(runs, imm(-1), [imm(0)]), walk, lengths]
    if pad:
        body.append(S.For(z, last + imm(1), n - last - imm(1), S.ForKind.SERIAL, S.SeqStmt([
            store(first, imm(0), z), store(counts, imm(0), z)])))
    body.append(store(count, last + imm(1), imm(0)))
    return allocated(runs, S.SeqStmt(body))


def emit_unique_runs(ctx, data, table) -> S.Stmt:
    """Statements writing the run table (see the module) of the 1-D ``data`` into ``table``."""
    n = _n(data)
    out = ctx.flat_view(table)
    return emit_unique_runs_into(ctx, data, (out, None), (out, n), (out, n * imm(2)),
                                 (out, n * imm(3)), pad=True)


def _prim_func(params, emit) -> PrimFunc:
    ctx = LowerCtx(own_temps=True)
    body = emit(ctx)
    for view in reversed(ctx.ws_views):
        body = S.DeclBuffer(view, body)
    return PrimFunc(params, body,
                    attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})


def unique_runs_prim_func(n, dtype: str) -> PrimFunc:
    """``(data [n], table [3 n + 1] int32)``: the kernel as a PrimFunc (``n`` may be a Var)."""
    data = decl_buffer((n,), dtype, "data")
    table = decl_buffer((n * 3 + 1,), "int32", "table")
    return _prim_func([data, table], lambda ctx: emit_unique_runs(ctx, data, table))


def unique_runs_outputs_prim_func(n, dtype: str, index_dtype: str = "int64") -> PrimFunc:
    """``(data [n], first [n], inverse [n], counts [n], count [1])``, the indices
    ``index_dtype``: the runs written straight into the buffers a caller returns (``inverse``
    whole, leading slices of ``first`` and ``counts`` of ``count`` entries; past them the
    buffers are left as they were), so no slice or cast of a table copies them again."""
    data = decl_buffer((n,), dtype, "data")
    outs = [decl_buffer(shape, index_dtype, name) for shape, name in
            (((n,), "first"), ((n,), "inverse"), ((n,), "counts"), ((1,), "count"))]
    return _prim_func([data, *outs], lambda ctx: emit_unique_runs_into(
        ctx, data, *((b, None) for b in outs)))
