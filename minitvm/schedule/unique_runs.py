"""Native kernel of ``unique`` over consecutive runs (torch.unique_consecutive): one in-order
pass over the 1-D input marking where a run starts (the element ``!=`` the one before, so each
NaN is its own run and -0.0 joins 0.0, as torch's ``==``), writing each run's first index and
each element's run as it goes, then each run's length from where the next starts; no sort, no
key transform.
It writes the same [3 * N + 1] int32 table as ``schedule.unique_sort`` (first indices, inverse,
counts, then the number of runs; zero past the runs), so both dialects read it off unchanged.
"""

from __future__ import annotations

from ..ir.op import OpPattern
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from .common import LowerCtx, allocated, const_int, imm

__all__ = ["emit_unique_runs", "unique_runs_prim_func"]


def emit_unique_runs(ctx, data, table) -> S.Stmt:
    """Statements writing the run table (see the module) of the 1-D ``data`` into ``table``."""
    (dim,) = data.shape
    n = imm(const_int(dim)) if const_int(dim) is not None else E.Cast("int32", dim)
    x, out = ctx.flat_view(data), ctx.flat_view(table)
    runs = decl_buffer((1,), "int32", "uq_runs", scope="local")
    last = E.BufferLoad(runs, [imm(0)])  # the current run's index (-1 before the first)
    s, z = ctx.fresh("s"), ctx.fresh("z")
    starts = E.Or(E.EQ(s, imm(0)), E.NE(E.BufferLoad(x, [s]),
                                        E.BufferLoad(x, [E.Max(s - imm(1), imm(0))])))
    counts = n * imm(2)
    walk = S.For(s, imm(0), n, S.ForKind.SERIAL, S.SeqStmt([
        S.IfThenElse(starts, S.SeqStmt([S.BufferStore(runs, last + imm(1), [imm(0)]),
                                        S.BufferStore(out, s, [last])])),
        S.BufferStore(out, last, [n + s])]))
    # a run's length: where the next one starts (the last one's: the end) less its own start
    g = ctx.fresh("g")
    end = E.Select(E.EQ(g, last), n, E.BufferLoad(out, [E.Min(g + imm(1), n - imm(1))]))
    lengths = S.For(g, imm(0), last + imm(1), S.ForKind.SERIAL, S.BufferStore(
        out, end - E.BufferLoad(out, [g]), [counts + g]))
    pad = S.For(z, last + imm(1), n - last - imm(1), S.ForKind.SERIAL, S.SeqStmt([
        S.BufferStore(out, imm(0), [z]), S.BufferStore(out, imm(0), [counts + z])]))
    body = S.SeqStmt([S.BufferStore(runs, imm(-1), [imm(0)]), walk, lengths, pad,
                      S.BufferStore(out, last + imm(1), [n * imm(3)])])
    return allocated(runs, body)


def unique_runs_prim_func(n, dtype: str) -> PrimFunc:
    """``(data [n], table [3 n + 1] int32)``: the kernel as a PrimFunc (``n`` may be a Var)."""
    data = decl_buffer((n,), dtype, "data")
    table = decl_buffer((n * 3 + 1,), "int32", "table")
    ctx = LowerCtx(own_temps=True)
    body = emit_unique_runs(ctx, data, table)
    for view in reversed(ctx.ws_views):
        body = S.DeclBuffer(view, body)
    return PrimFunc([data, table], body,
                    attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})
