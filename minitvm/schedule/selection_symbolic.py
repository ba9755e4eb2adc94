"""Selections along an axis of a run-time length, for Relay VM kernels that serve every size
(tag ``topk``, ``topi.selection``): sorts of whole rows (``k`` the axis' symbolic extent:
argsort, sort, topk of every element) and the best ``min(k, n)`` of a fixed ``k``.

Each row's elements become the items of ``selection._Keyed`` / ``_Pairs`` (an order key and
the position: all distinct, ties by position, NaN last), so the positions are those of the
static kernels. A sort: runs of ``RUN`` items sorted by the static kernels' sorting network
(branch-free compare-exchanges in registers; the last run padded with items above all), then
bottom-up merge passes at a run-time width that go back and forth between the items and a
scratch row, two passes a turn (a last lone pass is copied back), each merging as the static
kernels do (``selection.merge_equal_runs``: equal pairs from both ends at once, branch-free
and unchecked; only a shorter last run with bounds checks): rows below 2**31 elements. A fixed
``k``: the static kernels' insertion chain or heap over the run-time row
(``selection.insertion_row`` / ``heap_row``), the heap's items sorted as a row is. Rows run one
after another (the code generator cannot allocate a buffer of a run-time size inside a
parallel loop's body).
"""

from __future__ import annotations

from ..codegen.build import NO_SLP_VECTORIZE
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.selection import MAX_K
from .common import allocated, const_int, imm, prod_dims
from .selection import (
    _bits,
    _Keyed,
    _outer_loops,
    _Pairs,
    copy_run,
    heap_row,
    insertion_row,
    merge_bounded_runs,
    merge_equal_runs,
    network,
)

__all__ = ["select_rows_symbolic", "sort_rows_symbolic"]

# items a sorting network orders before the merges, by form: LLVM's passes take most of the
# build on the network (float64 argsort: 16 items 2.5 s, 4 items 0.44 s; float32: 16 items
# 0.70 s, 8 items 0.47 s), and the merges do the rest at little cost
RUN = {"_Keyed": 8, "_Pairs": 4}
TURNS = 16  # merge turns (two passes each): runs of 4 * 4**16 items span any int32 row


def _i32(d) -> E.PrimExpr:
    c = const_int(d)
    if c is not None:
        return imm(c)
    return d if d.dtype == "int32" else E.Cast("int32", d)


def _row_geometry(src, axis: int) -> tuple:
    """(dtype, row length and inner stride as int32, the inner and outer extents, the item
    form) of the rows of ``src`` along ``axis``."""
    dt = src.dtype
    inner_dim = prod_dims(src.shape[axis + 1:], "int64")
    outer = prod_dims(src.shape[:axis], "int64")
    return (dt, _i32(src.shape[axis]), _i32(inner_dim), inner_dim, outer,
            _Keyed if _bits(dt) <= 32 else _Pairs)


def sort_rows_symbolic(ctx, x, y, src, axis: int, largest: bool) -> S.Stmt:
    """Statements writing into ``y`` the positions of each row of ``src`` along ``axis`` in
    the selection order (``x`` / ``y`` flat views; see the module)."""
    dt, n, inner, inner_dim, outer, form = _row_geometry(src, axis)

    def row(idx):
        o, i = idx
        items = form(dt, n, largest)
        tmp = form.scratch(n, "merge_tmp")
        run = RUN[form.__name__]
        net = form.scratch(run, "merge_net")
        at = decl_buffer((4,), "int32", "merge_at", scope="local")
        width = decl_buffer((1,), "int32", "merge_width", scope="local")
        base = o * (n * inner) + i
        maker = form(dt, run, largest)
        parts = [_runs(ctx, maker, items.bufs, net, n, run,
                       lambda j: maker.item(E.BufferLoad(x, [base + j * inner]), j))]
        parts += _merges(ctx, form, items.bufs, tmp, width, at, n, run)
        s = ctx.fresh("s")
        pos = form.position(tuple(E.BufferLoad(b, [s]) for b in items.bufs))
        parts.append(S.For(s, imm(0), n, S.ForKind.SERIAL, S.BufferStore(
            y, pos if y.dtype == "int32" else E.Cast(y.dtype, pos),
            [o * (n * inner) + s * inner + i])))
        stmt = S.SeqStmt(parts)
        for buf in [at, width, *net, *items.bufs, *tmp]:
            stmt = allocated(buf, stmt)
        return stmt

    return _outer_loops(ctx, [outer, inner_dim], False, row)


def select_rows_symbolic(ctx, x, y, src, axis: int, k: int, largest: bool) -> S.Stmt:
    """Statements writing into ``y`` the positions of the best ``min(k, n)`` of each row of
    ``src`` along ``axis`` (``n`` its run-time length; ``x`` / ``y`` flat views): the static
    kernels' insertion chain (``k <= MAX_K``) or heap (``selection.insertion_row`` /
    ``heap_row``) over the run-time row, the heap's kept items sorted as ``sort_rows_symbolic``
    sorts a row."""
    dt, n, inner, inner_dim, outer, form = _row_geometry(src, axis)

    def row(idx):
        o, i = idx
        m = ctx.fresh("kept")
        base = o * (n * inner) + i

        def out_at(s):
            return o * (m * inner) + s * inner + i

        if k <= MAX_K:
            body = insertion_row(ctx, x, y, dt, k, largest, base, inner, n, out_at, kept=m)
        else:
            body = heap_row(ctx, x, y, form, k, largest, base, inner, n, out_at, kept=m,
                            sort_kept=_kept_sort(m))
        return S.LetStmt(m, E.Min(imm(k), n), body)

    return _outer_loops(ctx, [outer, inner_dim], False, row)


def _kept_sort(m):
    """The sort of a heap's run-time count ``m`` of kept items (``selection.heap_row``'s
    ``sort_kept``): network runs, then the merge turns, the result back in the heap's lanes."""

    def sort_kept(ctx, form, items, k: int, load) -> tuple:
        run = RUN[form.__name__]
        tmp = form.scratch(k, "heap_tmp")
        net = form.scratch(run, "merge_net")
        at = decl_buffer((4,), "int32", "merge_at", scope="local")
        width = decl_buffer((1,), "int32", "merge_width", scope="local")
        parts = [_runs(ctx, form(items.bufs[0].dtype, run, items.largest), items.bufs, net, m,
                       run, load)]
        parts += _merges(ctx, form, items.bufs, tmp, width, at, m, run)
        return parts, items.bufs, [*tmp, *net, at, width]

    return sort_kept


def _runs(ctx, maker, bufs, net, n, run: int, item_at) -> S.Stmt:
    """Each run of ``run`` of the ``n`` items ``item_at(j)`` sorted into ``bufs`` (which may
    hold them: a run is read whole before it is written) by the sorting network in ``net``;
    the last run's missing items are above all."""
    t, j = ctx.fresh("t"), ctx.fresh("j")
    lo = t * imm(run)
    top = tuple(E.IntImm(b.dtype, v) for b, v in zip(net, maker.TOP, strict=True))

    def slot(k):
        return tuple(E.BufferLoad(b, [imm(k)]) for b in net)

    def stores(lanes, item, at):
        return [S.BufferStore(b, v, [at]) for b, v in zip(lanes, item, strict=True)]

    here = lo + j
    item = item_at(E.Min(here, n - imm(1)))
    load = S.For(j, imm(0), imm(run), S.ForKind.SERIAL, S.SeqStmt(stores(
        net, tuple(E.Select(E.LT(here, n), v, c) for v, c in zip(item, top, strict=True)),
        j)))
    st = [load]
    for a, b in network(run):
        if len(net) == 1:  # one key: min and max
            va, vb = ctx.fresh("net_a", "int64"), ctx.fresh("net_b", "int64")
            st.append(S.LetStmt(va, slot(a)[0], S.LetStmt(vb, slot(b)[0], S.SeqStmt([
                S.BufferStore(net[0], E.Min(va, vb), [imm(a)]),
                S.BufferStore(net[0], E.Max(va, vb), [imm(b)])]))))
            continue
        va = tuple(ctx.fresh("net_a", e.dtype) for e in slot(a))
        vb = tuple(ctx.fresh("net_b", e.dtype) for e in slot(b))
        swap = ctx.fresh("swap", "bool")
        lo_item = tuple(E.Select(swap, q, p) for p, q in zip(va, vb, strict=True))
        hi_item = tuple(E.Select(swap, p, q) for p, q in zip(va, vb, strict=True))
        body = S.LetStmt(swap, maker.before(vb, va), S.SeqStmt(
            stores(net, lo_item, imm(a)) + stores(net, hi_item, imm(b))))
        for v, e in reversed(list(zip((*va, *vb), (*slot(a), *slot(b)), strict=True))):
            body = S.LetStmt(v, e, body)
        st.append(body)
    k = ctx.fresh("k")
    st.append(S.For(k, imm(0), imm(run), S.ForKind.SERIAL, S.IfThenElse(
        E.LT(lo + k, n), S.SeqStmt(stores(bufs, slot_at(net, k), lo + k)))))
    return S.For(t, imm(0), E.FloorDiv(n + imm(run - 1), imm(run)), S.ForKind.SERIAL,
                 S.SeqStmt(st), annotations={NO_SLP_VECTORIZE: True})


def slot_at(net, k) -> tuple:
    return tuple(E.BufferLoad(b, [k]) for b in net)


def _merge_pass(ctx, form, src, dst, at, width, n) -> S.Stmt:
    """Runs of the width ``width[0]`` in ``src`` merged pairwise into ``dst``, as the static
    kernels' passes (``selection._sort_keys``): the equal pairs from both ends at once, then a
    shorter last run merged from the front with bounds checks, or a lone one copied."""
    w, full, lo, rest = (ctx.fresh(name) for name in ("w", "full", "lo", "rest"))
    t = ctx.fresh("t")
    pairs = S.For(t, imm(0), full, S.ForKind.SERIAL,
                  merge_equal_runs(ctx, form, src, dst, at, t * w * imm(2), w))
    tail = S.IfThenElse(E.GT(rest, w), S.SeqStmt(merge_bounded_runs(
        ctx, form, src, dst, at, lo, lo + w, n, rest)), S.IfThenElse(
        E.GT(rest, imm(0)), copy_run(ctx, src, dst, lo, rest)))
    # (n // w // 2: w * 2 may pass int32's range on rows above 2**30 items)
    return S.LetStmt(w, E.BufferLoad(width, [imm(0)]), S.LetStmt(
        full, E.FloorDiv(E.FloorDiv(n, w), imm(2)), S.LetStmt(
            lo, full * w * imm(2), S.LetStmt(rest, n - lo, S.SeqStmt([pairs, tail])))))


def _merges(ctx, form, items, tmp, width, at, n, run: int) -> list:
    """The merge turns: ``items`` -> ``tmp`` at the width, then back at twice it (or, when one
    run already spans the row, copied back), while the width is below the row's length."""
    w = E.BufferLoad(width, [imm(0)])

    def doubled():  # (at least n once 2w would be: no int32 overflow)
        return S.BufferStore(width, E.Select(E.LT(w, n - w), w * imm(2), n), [imm(0)])

    back = S.IfThenElse(E.LT(w, n), _merge_pass(ctx, form, tmp, items, at, width, n),
                        copy_run(ctx, tmp, items, imm(0), n))
    turn = S.IfThenElse(E.LT(w, n), S.SeqStmt([
        _merge_pass(ctx, form, items, tmp, at, width, n), doubled(), back, doubled()]))
    return [S.BufferStore(width, imm(run), [imm(0)]),
            S.For(ctx.fresh("turn"), imm(0), imm(TURNS), S.ForKind.SERIAL, turn)]
