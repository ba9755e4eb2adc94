"""Schedule of top-k selection stages (tag ``topk``, ``topi.selection``): one pass per row.

Each row (the input seen as ``[outer, n, inner]`` around the selected axis; rows in parallel when
the work is large) keeps its best ``k`` elements so far.

``k <= MAX_K``: the best ``k`` values and positions sorted best first, in local arrays with
constant indices (LLVM keeps them in registers, as many as fit). An element that beats the
current ``k``-th is inserted from the bottom up, by an unrolled chain of branches: each entry it
beats moves down one slot, and it takes the slot below the first entry it does not beat. The
first ``k`` elements fill empty slots (position -1) that every element beats. On random data
almost every element costs one compare (about ``k ln(n / k)`` insertions per row, each passing
``k / 2`` entries on average); rows sorted the wrong way round insert every element at the top
(``n k`` moves), which is why this form stops at ``MAX_K``.

``k > MAX_K`` (``argsort`` and ``sort`` are ``k = n``): a binary heap of the ``k`` kept elements
with the worst at its root. The first ``k`` elements are heapified, every later one that beats
the root replaces it and sinks (``n log k`` at worst, ``n + k log k`` on random data). Elements
of at most 32 bits are held as one ``int64`` key each, their order as a signed 32-bit integer
above the position, so that one integer compare orders two elements, ties and NaN included;
64-bit elements as an ``int64`` order key (the same rules at 64 bits) and a position beside it,
compared key first, then position. The kept items are put best first by ``_sort_keys`` (not
a heapsort, whose sinking branches mispredict on every level): runs of ``RUN`` items by a
sorting network (branch-free compare-exchanges in registers), then bottom-up merge passes of
branch-free steps, equal runs merged from both ends at once; whole rows (``k = n``) skip the
heap. (64-bit keys took the heapsort until they had an order key: argsort of 10**6 int64 ran
650 ms against 76 ms now, ONNX Runtime's TopK 206 ms.)

Rows of a run-time length (a whole dynamic axis sorted: argsort, sort, topk of every element;
or its best ``min(k, n)`` for a fixed ``k``) are ``selection_symbolic``'s, on the same items,
merges and rows (``merge_equal_runs``, ``insertion_row``, ``heap_row``).

The insertion chains' and the networks' loops carry ``NO_SLP_VECTORIZE``: LLVM's SLP vectorizer
found nothing to vectorize in them and took most of the build (float32 top 64 of 24552: 4.7 ->
0.6 CPU s without it, benchmarks/bench_selection_compile.py).
"""

from __future__ import annotations

from ..codegen.build import NO_SLP_VECTORIZE
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..topi.selection import MAX_K, TOPK_TAG, better
from .common import PARALLEL_MIN_WORK, allocated, const_int, imm, prod_dims
from .common import outer_loops as _rows_loops
from .lower import Rule, register_rule


def supported(t, options=None) -> bool:
    """Is ``t`` a top-k selection stage with static shapes but for the dimensions before its
    axis (a dynamic batch: the rows loop over them at run time), or a sort of a whole axis
    with symbolic extents, or a fixed ``k`` of one (``selection_symbolic``)?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != TOPK_TAG:
        return False
    (x,) = t.op.attrs["operands"]
    axis = t.op.attrs["axis"]
    if all(const_int(d) is not None for d in (*t.shape[axis:], *x.shape[axis:])):
        return True
    if t.op.attrs.get("k_max") is not None:  # (``topi.selection.topk_indices``: min(k, n))
        return True
    return t.op.attrs["k"] is x.shape[axis]  # (``topi.selection.topk_indices``: the whole axis)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements writing the positions of selection stage ``t`` into ``out``."""
    a = t.op.attrs
    (src,) = a["operands"]
    x, y = ctx.flat_view(ctx.buf[id(src)]), ctx.flat_view(out)
    axis, k, largest = a["axis"], a["k"], a["largest"]
    if any(const_int(d) is None for d in src.shape[axis:]):
        from .selection_symbolic import select_rows_symbolic, sort_rows_symbolic  # (on ours)

        if a.get("k_max") is not None:
            return select_rows_symbolic(ctx, x, y, src, axis, a["k_max"], largest)
        return sort_rows_symbolic(ctx, x, y, src, axis, largest)
    dims = [const_int(d) for d in src.shape[axis:]]
    n = dims[0]
    outer, inner = prod_dims(src.shape[:axis]), 1
    for d in dims[1:]:
        inner *= d
    if outer == 0 or inner == 0:
        return S.Evaluate(imm(0))
    dt = src.dtype
    if ranked(n, k):
        return _rank_rows(ctx, x, y, dt, outer, n, inner, k, largest)
    if k > MAX_K:
        return _heap_rows(ctx, x, y, dt, outer, n, inner, k, largest)

    def row(idx):
        o, i = idx
        return insertion_row(ctx, x, y, dt, k, largest, o * (n * inner) + i, inner, n,
                             lambda s: o * (k * inner) + s * inner + i)

    work = n * (1 + k // 4)
    return _outer_loops(ctx, [outer, inner], _parallel(outer, inner, work), row, work)


def _expr(v) -> E.PrimExpr:
    return imm(v) if isinstance(v, int) else v


def insertion_row(ctx, x, y, dt, k: int, largest: bool, base, inner, n, out_at,
                  kept=None) -> S.Stmt:
    """The best ``k`` (at most ``MAX_K``) of the row of ``x`` at ``base`` (stride ``inner``,
    ``n`` elements) by the insertion chain of the module's doc, their positions written to
    ``y`` at ``out_at(slot)``. ``n``: an int, or a run-time length (``selection_symbolic``;
    ``kept`` then the run-time count ``min(k, n)``: the slots past it are not written)."""
    ity = "int32"
    vals = decl_buffer((k,), dt, "topk_vals")
    pos = decl_buffer((k,), ity, "topk_pos")

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

    def sweep(lo, extent, filling: bool) -> S.Stmt:
        p, v = ctx.fresh("p"), ctx.fresh("topk_v", dt)
        load = E.BufferLoad(x, [base + p * inner])
        step = S.IfThenElse(beats(v, k - 1, filling), insert(v, p, filling))
        return S.For(p, _expr(lo), _expr(extent), S.ForKind.SERIAL, S.LetStmt(v, load, step),
                     annotations={NO_SLP_VECTORIZE: True})  # (a chain of compare-moves)

    # empty slots (their values only need to be defined: a run-time row may have none)
    first = E.BufferLoad(x, [base]) if kept is None else \
        (E.FloatImm(dt, 0.0) if dt.startswith("float") else E.IntImm(dt, 0))
    init = []
    for s in range(k):
        init += [S.BufferStore(vals, first, [imm(s)]), S.BufferStore(pos, imm(-1), [imm(s)])]
    parts = [*init, sweep(0, k if kept is None else kept, True)]
    if kept is not None:  # (no turn when n <= k)
        parts.append(sweep(k, n - imm(k), False))
    elif n > k:
        parts.append(sweep(k, n - k, False))
    for s in range(k):
        p = at(s)
        put = S.BufferStore(y, p if y.dtype == ity else E.Cast(y.dtype, p), [out_at(s)])
        parts.append(put if kept is None else S.IfThenElse(E.LT(imm(s), kept), put))
    return allocated(vals, allocated(pos, S.SeqStmt(parts)))


def _parallel(outer, inner: int, work: int) -> bool:
    """Do the rows go to the thread pool (a symbolic ``outer``: decided at run time)?"""
    if not isinstance(outer, int):
        return True
    return outer * inner > 1 and outer * inner * work >= PARALLEL_MIN_WORK


def _outer_loops(ctx, dims, parallel: bool, body_fn, work: int = 1) -> S.Stmt:
    """The rows' loop over ``dims`` (``[outer, inner]``; ``outer`` may be symbolic: a dynamic
    batch, parallel at run time once it has enough rows of ``work``), ``body_fn`` given int32
    indices (a row's offsets fit them)."""
    static = all(isinstance(d, int) for d in dims)

    def body(idx):
        return body_fn([i if static or i.dtype == "int32" else E.Cast("int32", i) for i in idx])

    return _rows_loops(ctx, dims, parallel, body, work)


# ------------------------------------------------------------------------------------ ranks
# Rows of at most RANK_MAX_N elements with k of at least RANK_MIN_K (and, past 64 elements, at
# least n / RANK_N_PER_K) take ``_rank_rows``: every element's rank, the number of elements
# ordered before it, counted in vectors of order keys (n * n / lanes compare-adds, no branch),
# and the elements of rank below k written at their rank. The insertion chain instead passes
# about k / 2 kept entries for each of its k + k ln(n / k) insertions, each chain ending in a
# mispredicted branch, and with k past the registers its entries live on the stack. Zen 4, one
# thread, kernel alone (us, insertion -> ranks): a detector's top 50 of 192 anchors 12.3 -> see
# the commit message for the measured set.
RANK_MAX_N = 512
RANK_MIN_K = 8
RANK_N_PER_K = 8
RANK_LANES = 16


def ranked(n: int, k: int) -> bool:
    """Does a selection of ``k`` of ``n`` elements a row take the rank form (``RANK_*``)?"""
    return k >= RANK_MIN_K and n <= RANK_MAX_N and (n <= 64 or k * RANK_N_PER_K >= n)


RANK_UNROLL = 8  # elements q compared per turn of the count loop (one accumulator update)


def _rank_rows(ctx, x, y, dt, outer, n, inner, k, largest) -> S.Stmt:
    """Rows selected by rank: each element's order key (``_key32`` / ``_key64``) into a row of
    keys padded to whole vectors, then, for a vector of elements ``p`` at a time, the count of
    elements ``q`` ordered before each (``key[q] <= key[p]`` for ``q < p``, ``<`` for the rest:
    ties go by position), ``RANK_UNROLL`` broadcast keys a turn; an element of rank below ``k``
    writes its position at its rank."""
    wide = _bits(dt) > 32
    kdt = "int64" if wide else "int32"
    lanes = RANK_LANES // 2 if wide else RANK_LANES
    padded = -(-n // lanes) * lanes
    unroll = max(u for u in range(1, RANK_UNROLL + 1) if n % u == 0)

    def row(idx):
        o, i = idx
        base = o * (n * inner) + i
        keys = decl_buffer((padded,), kdt, "rank_keys")
        cnt = decl_buffer((lanes,), "int32", "rank_cnt", scope="local")
        key_of = _key64 if wide else _key32
        q = ctx.fresh("q")
        parts = [S.For(q, imm(0), imm(n), S.ForKind.SERIAL, S.BufferStore(
            keys, key_of(E.BufferLoad(x, [base + q * imm(inner)]), largest), [q]))]
        if padded > n:  # (the padding lanes' counts are never stored)
            t = ctx.fresh("q")
            parts.append(S.For(t, imm(n), imm(padded - n), S.ForKind.SERIAL,
                               S.BufferStore(keys, E.IntImm(kdt, 0), [t])))
        pb, z, ll, qo = ctx.fresh("pb"), ctx.fresh("l"), ctx.fresh("l"), ctx.fresh("qo")
        pv = pb * imm(lanes) + ll
        kp = E.BufferLoad(keys, [pv])
        total = E.BufferLoad(cnt, [ll])
        for u in range(unroll):
            qu = qo * imm(unroll) + imm(u)
            kq = E.BufferLoad(keys, [qu])
            total = total + E.Cast("int32", E.Select(E.LT(qu, pv), E.LE(kq, kp), E.LT(kq, kp)))
        count = S.For(qo, imm(0), imm(n // unroll), S.ForKind.SERIAL, S.For(
            ll, imm(0), imm(lanes), S.ForKind.VECTORIZED, S.BufferStore(cnt, total, [ll])))
        zero = S.For(z, imm(0), imm(lanes), S.ForKind.VECTORIZED,
                     S.BufferStore(cnt, imm(0), [z]))
        sl, r = ctx.fresh("l"), ctx.fresh("rank", "int32")
        p = pb * imm(lanes) + sl
        put = S.LetStmt(r, E.BufferLoad(cnt, [sl]), S.IfThenElse(
            E.And(E.LT(p, imm(n)), E.LT(r, imm(k))), S.BufferStore(
                y, p if y.dtype == "int32" else E.Cast(y.dtype, p),
                [o * (k * inner) + r * imm(inner) + i])))
        scatter = S.For(sl, imm(0), imm(lanes), S.ForKind.SERIAL, put)
        parts.append(S.For(pb, imm(0), imm(padded // lanes), S.ForKind.SERIAL,
                           S.SeqStmt([zero, count, scatter])))
        return allocated(keys, allocated(cnt, S.SeqStmt(parts)))

    work = n * n // lanes * 2
    return _outer_loops(ctx, [outer, inner], _parallel(outer, inner, work), row, work)


# ------------------------------------------------------------------------------------ heap
def _bits(dtype: str) -> int:
    return int("".join(c for c in dtype if c.isdigit()))


_INT32_MAX = 0x7FFFFFFF


def _key32(v, largest: bool):
    """An ``int32`` whose signed order is ``v``'s place in the selection order (NaN last,
    ``-0.0`` tied with ``0.0``), for elements of at most 32 bits."""
    dt = v.dtype
    if dt.startswith("float"):
        f = v if dt == "float32" else E.Cast("float32", v)
        b = tir_op.reinterpret("int32", f)
        b = E.Select(E.EQ(f, E.FloatImm("float32", 0.0)), imm(0), b)  # -0.0 ties 0.0
        # negative floats: every bit but the sign flipped, so larger magnitudes order lower
        o = tir_op.bitwise_xor(b, tir_op.bitwise_and(tir_op.shift_right(b, imm(31)),
                                                     imm(_INT32_MAX)))
        o = o if not largest else tir_op.bitwise_not(o)
        return E.Select(E.NE(f, f), imm(_INT32_MAX), o)  # NaN after every number
    if dt == "uint32":
        o = tir_op.bitwise_xor(E.Cast("int32", v), imm(-(1 << 31)))
    else:  # (u)int8 / 16 and int32 are exact in int32
        o = v if dt == "int32" else E.Cast("int32", v)
    return tir_op.bitwise_not(o) if largest else o


_INT64_MAX = (1 << 63) - 1


def _key64(v, largest: bool):
    """An ``int64`` whose signed order is ``v``'s place in the selection order (NaN last,
    ``-0.0`` tied with ``0.0``), for 64-bit elements (``_key32``'s rules at 64 bits)."""
    dt = v.dtype

    def i64(c):
        return E.IntImm("int64", c)

    if dt == "float64":
        b = tir_op.reinterpret("int64", v)
        b = E.Select(E.EQ(v, E.FloatImm(dt, 0.0)), i64(0), b)  # -0.0 ties 0.0
        o = tir_op.bitwise_xor(b, tir_op.bitwise_and(tir_op.shift_right(b, i64(63)),
                                                     i64(_INT64_MAX)))
        o = o if not largest else tir_op.bitwise_not(o)
        # (no number's key is INT64_MAX: that and its complement are NaN bit patterns)
        return E.Select(E.NE(v, v), i64(_INT64_MAX), o)  # NaN after every number
    o = v if dt == "int64" else E.Cast("int64", v)
    if dt == "uint64":  # the sign bit flipped: unsigned order as signed
        o = tir_op.bitwise_xor(o, i64(-(1 << 63)))
    return tir_op.bitwise_not(o) if largest else o


class _Keyed:
    """Elements of at most 32 bits as one int64 key: order (high half) and position (low)."""

    def __init__(self, dt: str, k: int, largest: bool):
        self.bufs = [decl_buffer((k,), "int64", "topk_keys")]
        self.largest = largest

    def item(self, v, p):
        hi = tir_op.shift_left(E.Cast("int64", _key32(v, self.largest)),
                               E.IntImm("int64", 32))
        return (tir_op.bitwise_or(hi, E.Cast("int64", p)),)

    @staticmethod
    def before(a, b):
        return E.LT(a[0], b[0])

    @staticmethod
    def position(a):
        return E.Cast("int32", a[0])  # the low half

    @staticmethod
    def scratch(n: int, name: str) -> list:
        return [decl_buffer((n,), "int64", name)]

    TOP = (_INT64_MAX,)  # above every key (a key's low half is a position below 2**31)


class _Pairs:
    """64-bit elements as an int64 order key (``_key64``) and a position, ordered by key, then
    position."""

    def __init__(self, dt: str, k: int, largest: bool):
        self.bufs = [decl_buffer((k,), "int64", "topk_keys"),
                     decl_buffer((k,), "int32", "topk_pos")]
        self.largest = largest

    def item(self, v, p):
        return (_key64(v, self.largest), p)

    @staticmethod
    def before(a, b):
        """Key first, then position: ``ka < kb or (ka <= kb and pa < pb)``, the same order as
        ``ka == kb`` in the second test; with ``==`` LLVM's InstCombine, simplifying the arms of
        every select under an equality, took 0.93 of 1.39 CPU s on an argsort of rows of 1000
        float64 (0.23 with ``<=``; argsort builds 1.2-1.8 -> 0.45-1.0 s, run no slower: Zen 3,
        A/B in alternating processes)."""
        return E.Or(E.LT(a[0], b[0]), E.And(E.LE(a[0], b[0]), E.LT(a[1], b[1])))

    @staticmethod
    def position(a):
        return a[1]

    @staticmethod
    def scratch(n: int, name: str) -> list:
        return [decl_buffer((n,), "int64", name), decl_buffer((n,), "int32", name + "_pos")]

    TOP = (_INT64_MAX, _INT32_MAX)  # above every item (positions are below 2**31 - 1)


RUN = 16  # keys sorted by a sorting network before the merge passes


def network(size: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sort on ``size`` (a power of two) slots: the compare-exchange
    pairs ``(i, j)``, ``i < j``, in order (after them slot ``i`` holds the smaller)."""
    pairs = []
    p = 1
    while p < size:  # sorted blocks of p merged into blocks of 2p
        d = p
        while d >= 1:  # compare at distance d, within a block of 2p
            for j in range(d % p, size - d, 2 * d):
                for i in range(min(d, size - j - d)):
                    if (i + j) // (2 * p) == (i + j + d) // (2 * p):
                        pairs.append((i + j, i + j + d))
            d //= 2
        p *= 2
    return pairs


def _sort_keys(ctx, form, bufs, net, at, off: int, m: int, key_of):
    """Statements sorting ``m`` items of ``form`` (``_Keyed``: one int64 key; ``_Pairs``: a
    key and a position, lanes of parallel buffers), ``key_of(j)`` the ``j``-th (a tuple of
    expressions), into slots ``off .. off + m - 1`` of the lanes ``bufs[0]`` or ``bufs[1]``:
    runs of ``net``'s length by a sorting network of branch-free compare-exchanges (local slots
    LLVM keeps in registers), then bottom-up merge passes between the two. Two runs of equal
    length merge from both ends at once (the front takes the smaller half, the back the larger:
    two independent chains of branch-free steps, and neither run can run out); a shorter last
    run merges from the front with bounds checks; a lone last run is copied. Items are all
    distinct (the position decides ties). Returns the statements and the index of the lanes
    holding the result."""
    run = int(net[0].shape[0])
    pairs = network(run)
    before = form.before

    def slot(j):
        return tuple(E.BufferLoad(b, [imm(j)]) for b in net)

    def stores(lanes, item, idx):
        return [S.BufferStore(b, v, [idx]) for b, v in zip(lanes, item, strict=True)]

    def fresh(item, name):
        return tuple(ctx.fresh(name, e.dtype) for e in item)

    def let(vs, item, body):
        """``body`` with the variables ``vs`` bound to ``item``'s values."""
        for v, e in reversed(list(zip(vs, item, strict=True))):
            body = S.LetStmt(v, e, body)
        return body

    def pick(cond, a, b):
        return tuple(E.Select(cond, x, y) for x, y in zip(a, b, strict=True))

    def sorted_run(lo, size):  # keys lo .. lo + size - 1 (slots past size: above all)
        st = []
        top = tuple(E.IntImm(b.dtype, v) for b, v in zip(net, form.TOP, strict=True))
        for j in range(run):
            st += stores(net, key_of(lo + imm(j)) if j < size else top, imm(j))
        for a, b in pairs:
            if a >= size:
                continue  # both above all: in order already
            if len(net) == 1:  # one key: min and max
                va, vb = ctx.fresh("net_a", "int64"), ctx.fresh("net_b", "int64")
                st.append(S.LetStmt(va, slot(a)[0], S.LetStmt(vb, slot(b)[0], S.SeqStmt([
                    S.BufferStore(net[0], E.Min(va, vb), [imm(a)]),
                    S.BufferStore(net[0], E.Max(va, vb), [imm(b)])]))))
                continue
            swap = ctx.fresh("swap", "bool")
            va, vb = fresh(slot(a), "net_a"), fresh(slot(b), "net_b")
            body = S.LetStmt(swap, before(vb, va), S.SeqStmt(
                stores(net, pick(swap, vb, va), imm(a)) + stores(net, pick(swap, va, vb), imm(b))))
            st.append(let(va, slot(a), let(vb, slot(b), body)))
        st += [s for j in range(size) for s in stores(bufs[0], slot(j), imm(off) + lo + imm(j))]
        return S.SeqStmt(st)

    parts = []
    if m // run:  # (LLVM's SLP vectorizer only costs time on networks: see NO_SLP_VECTORIZE)
        t = ctx.fresh("t")
        parts.append(S.For(t, imm(0), imm(m // run), S.ForKind.SERIAL,
                           sorted_run(t * imm(run), run), annotations={NO_SLP_VECTORIZE: True}))
    if m % run:
        parts.append(sorted_run(imm(m - m % run), m % run))

    src, w = 0, run
    while w < m:
        a, b = bufs[src], bufs[1 - src]
        full = m // (2 * w)
        if full:  # equal runs [lo, lo + w), [lo + w, lo + 2w): both ends at once
            t = ctx.fresh("t")
            parts.append(S.For(t, imm(0), imm(full), S.ForKind.SERIAL, merge_equal_runs(
                ctx, form, a, b, at, imm(off) + t * imm(2 * w), w)))
        lo, rest = off + full * 2 * w, m - full * 2 * w
        if rest > w:  # a full run and a shorter one: from the front, bounds checked
            parts += merge_bounded_runs(ctx, form, a, b, at, imm(lo), imm(lo + w), imm(off + m),
                                        imm(rest))
        elif rest:  # a lone run: copied
            parts.append(copy_run(ctx, a, b, imm(lo), imm(rest)))
        src, w = 1 - src, w * 2
    return parts, src


def _span(w, k: int, c: int) -> E.PrimExpr:
    """``k * w + c``, folded to a constant when the run width ``w`` is one (an int or an
    ``IntImm``: the static kernels), else an expression of the run-time width."""
    v = w if isinstance(w, int) else const_int(w)
    if v is not None:
        return imm(k * v + c)
    e = w if k == 1 else w * imm(k)
    return e + imm(c) if c > 0 else e - imm(-c) if c < 0 else e


def _lanes_at(lanes, j) -> tuple:
    return tuple(E.BufferLoad(b, [j]) for b in lanes)


def _lanes_put(lanes, item, idx) -> list:
    return [S.BufferStore(b, v, [idx]) for b, v in zip(lanes, item, strict=True)]


def _pick(cond, a, b) -> tuple:
    return tuple(E.Select(cond, x, y) for x, y in zip(a, b, strict=True))


def _bound(ctx, item, name, body_fn) -> S.Stmt:
    """``body_fn`` of variables named ``name`` bound to ``item``'s values."""
    vs = tuple(ctx.fresh(name, e.dtype) for e in item)
    body = body_fn(vs)
    for v, e in reversed(list(zip(vs, item, strict=True))):
        body = S.LetStmt(v, e, body)
    return body


def merge_equal_runs(ctx, form, a, b, at, lo, w) -> S.Stmt:
    """The runs ``[lo, lo + w)`` and ``[lo + w, lo + 2w)`` of the lanes ``a`` merged into
    ``b`` from both ends at once (cursors in ``at[0..3]``): the front takes the smaller half,
    the back the larger, two independent chains of branch-free steps, and neither run can run
    out. ``w``: an int, or the run-time width of ``selection_symbolic``'s passes."""
    before = form.before

    def get(j):
        return E.BufferLoad(at, [imm(j)])

    def put(j, v):
        return S.BufferStore(at, v, [imm(j)])

    one, zero = imm(1), imm(0)
    r = ctx.fresh("r")
    tf, tb = ctx.fresh("take", "bool"), ctx.fresh("take", "bool")

    def front_step(fl):
        return _bound(ctx, _lanes_at(a, get(1)), "fr", lambda fr: S.LetStmt(
            tf, before(fr, fl), S.SeqStmt([  # the right one is smaller
                *_lanes_put(b, _pick(tf, fr, fl), lo + r),
                put(0, get(0) + E.Select(tf, zero, one)),
                put(1, get(1) + E.Select(tf, one, zero))])))

    def back_step(bl):
        return _bound(ctx, _lanes_at(a, get(3)), "br", lambda br: S.LetStmt(
            tb, before(br, bl), S.SeqStmt([  # the left one is larger
                *_lanes_put(b, _pick(tb, bl, br), lo + _span(w, 2, -1) - r),
                put(2, get(2) - E.Select(tb, one, zero)),
                put(3, get(3) - E.Select(tb, zero, one))])))

    front = _bound(ctx, _lanes_at(a, get(0)), "fl", front_step)
    back = _bound(ctx, _lanes_at(a, get(2)), "bl", back_step)
    return S.SeqStmt([put(0, lo), put(1, lo + _span(w, 1, 0)), put(2, lo + _span(w, 1, -1)),
                      put(3, lo + _span(w, 2, -1)),
                      S.For(r, imm(0), _span(w, 1, 0), S.ForKind.SERIAL,
                            S.SeqStmt([front, back]))])


def merge_bounded_runs(ctx, form, a, b, at, lo, mid, hi, rest) -> list:
    """The run ``[lo, mid)`` and a shorter one ``[mid, hi)`` (``rest = hi - lo`` items) of the
    lanes ``a`` merged into ``b`` from the front, each read clamped to its run (cursors in
    ``at[0..1]``)."""
    r = ctx.fresh("r")
    ia, ib = E.BufferLoad(at, [imm(0)]), E.BufferLoad(at, [imm(1)])
    take = ctx.fresh("take", "bool")
    lv, rv = _lanes_at(a, E.Min(ia, mid - imm(1))), _lanes_at(a, E.Min(ib, hi - imm(1)))
    one, zero = imm(1), imm(0)
    step = _bound(ctx, lv, "ml", lambda left: _bound(ctx, rv, "mr", lambda right: S.LetStmt(
        take, E.Or(E.GE(ia, mid), E.And(E.LT(ib, hi), form.before(right, left))),
        S.SeqStmt([*_lanes_put(b, _pick(take, right, left), lo + r),
                   S.BufferStore(at, ia + E.Select(take, zero, one), [imm(0)]),
                   S.BufferStore(at, ib + E.Select(take, one, zero), [imm(1)])]))))
    return [S.BufferStore(at, lo, [imm(0)]), S.BufferStore(at, mid, [imm(1)]),
            S.For(r, imm(0), rest, S.ForKind.SERIAL, step)]


def copy_run(ctx, a, b, lo, rest) -> S.Stmt:
    """The ``rest`` items of the lanes ``a`` from ``lo`` copied into ``b``."""
    r = ctx.fresh("r")
    return S.For(r, lo, rest, S.ForKind.SERIAL, S.SeqStmt(_lanes_put(b, _lanes_at(a, r), r)))


def _sort_scratch(form, n: int):
    """The network's slots (one per lane of ``form``) and the merge cursors for sorting ``n``
    items."""
    run = min(RUN, 1 << max(n - 1, 1).bit_length())
    return form.scratch(run, "merge_net"), decl_buffer((4,), "int32", "merge_at")


def _merge_rows(ctx, form, x, y, outer, n, inner, largest) -> S.Stmt:
    """Whole rows sorted as items of ``form`` (all distinct: the position decides ties) by
    ``_sort_keys``, the items made as the networks read them."""

    def row(idx):
        o, i = idx
        items = form(x.dtype, n, largest)
        bufs = [items.bufs, form.scratch(n, "merge_tmp")]
        net, at = _sort_scratch(form, n)
        base = o * (n * inner) + i
        parts, src = _sort_keys(ctx, form, bufs, net, at, 0, n, lambda j: items.item(
            E.BufferLoad(x, [base + j * imm(inner)]), j))
        s = ctx.fresh("s")
        pos = form.position(tuple(E.BufferLoad(b, [s]) for b in bufs[src]))
        parts.append(S.For(s, imm(0), imm(n), S.ForKind.SERIAL, S.BufferStore(
            y, pos if y.dtype == "int32" else E.Cast(y.dtype, pos),
            [o * (n * inner) + s * imm(inner) + i])))
        stmt = S.SeqStmt(parts)
        for buf in [at, *net, *bufs[0], *bufs[1]]:
            stmt = allocated(buf, stmt)
        return stmt

    work = n * max(n.bit_length(), 1) * 4
    return _outer_loops(ctx, [outer, inner], _parallel(outer, inner, work), row, work)


# the scan past the first k elements compares each with the heap root's value (kept in a
# variable, updated as the root changes) and computes the order key of only those not strictly
# worse: on random data almost every element is, and its key (a bit cast, sign fixes, the
# position) was most of the scan. Rocket Lake, one thread, float32 top-100 of 24552 (RetinaNet's
# scores), us: 57 -> (ONNX Runtime 42)
ROOT_VALUE_FILTER = True


def _heap_rows(ctx, x, y, dt, outer, n, inner, k, largest) -> S.Stmt:
    """Rows selected through a heap of their ``k`` best elements (see the module's doc)."""
    form = (_Keyed if _bits(dt) <= 32 else _Pairs)
    if k == n:
        return _merge_rows(ctx, form, x, y, outer, n, inner, largest)
    depth = k.bit_length() - 1  # levels an element sinks at most

    def row(idx):
        o, i = idx
        return heap_row(ctx, x, y, form, k, largest, o * (n * inner) + i, inner, n,
                        lambda s: o * (k * inner) + s * imm(inner) + i)

    work = n * 4 + k * max(depth, 1) * 4
    return _outer_loops(ctx, [outer, inner], _parallel(outer, inner, work), row, work)


def _sort_kept(ctx, form, items, k: int, load) -> tuple:
    """``(statements, lanes holding the result, scratch buffers)``: the ``k`` kept items
    sorted by ``_sort_keys`` (no branch to mispredict)."""
    tmp = form.scratch(k, "heap_tmp")
    net, at = _sort_scratch(form, k)
    srt, src = _sort_keys(ctx, form, [items.bufs, tmp], net, at, 0, k, load)
    return srt, [items.bufs, tmp][src], [*tmp, *net, at]


def heap_row(ctx, x, y, form, k: int, largest: bool, base, inner, n, out_at, kept=None,
             sort_kept=None) -> S.Stmt:
    """The best ``k`` of the row of ``x`` at ``base`` (stride ``inner``, ``n`` elements)
    through a heap of items of ``form`` (see the module's doc), their positions written to
    ``y`` at ``out_at(rank)``. ``n``: an int, or a run-time length (``selection_symbolic``;
    ``kept`` then the run-time count ``min(k, n)`` of heap items, and ``sort_kept`` the
    sort of that many, as ``_sort_kept``)."""
    dt = x.dtype
    depth = k.bit_length() - 1  # levels an element sinks at most
    items = form(dt, k, largest)
    cur = decl_buffer((1,), "int32", "heap_at")
    m = imm(k) if kept is None else kept

    def load(s):
        return tuple(E.BufferLoad(b, [s]) for b in items.bufs)

    def store(s, item):
        return [S.BufferStore(b, v, [s]) for b, v in zip(items.bufs, item)]

    def bind(item, body_fn):
        """``body_fn`` of ``item``'s values held in variables (read before any store)."""
        vs = [ctx.fresh("heap_v", e.dtype) for e in item]
        body = body_fn(tuple(vs))
        for v, e in reversed(list(zip(vs, item))):
            body = S.LetStmt(v, e, body)
        return body

    def sink(start, size, item):
        """``item`` into the hole at ``start`` of the heap's first ``size`` slots: the worse
        child moves up while it is worse than ``item`` (a level that stops leaves the hole
        where it is, and so do the levels after it)."""
        stmts = [S.BufferStore(cur, start, [imm(0)])]
        if depth:
            h, c, w = ctx.fresh("h"), ctx.fresh("c"), ctx.fresh("w")
            last = size - imm(1)
            worse = E.Select(items.before(load(c), load(E.Min(c + imm(1), last))),
                             E.Min(c + imm(1), last), c)
            move = S.IfThenElse(items.before(item, load(w)), S.SeqStmt(
                [*store(h, load(w)), S.BufferStore(cur, w, [imm(0)])]))
            level = S.LetStmt(h, E.BufferLoad(cur, [imm(0)]), S.LetStmt(
                c, h * imm(2) + imm(1), S.IfThenElse(
                    E.LT(c, size), S.LetStmt(w, worse, move))))
            stmts.append(S.For(ctx.fresh("lvl"), imm(0), imm(depth), S.ForKind.SERIAL,
                               level))
        stmts += store(E.BufferLoad(cur, [imm(0)]), item)
        return S.SeqStmt(stmts)

    def element(p):
        v = E.BufferLoad(x, [base + p * _expr(inner)])
        return items.item(v, p)

    parts, extra = [], []
    p = ctx.fresh("p")  # the first k elements, then heapified from the last parent
    parts.append(S.For(p, imm(0), m, S.ForKind.SERIAL, S.SeqStmt(store(p, element(p)))))
    if k > 1:
        t = ctx.fresh("t")
        if kept is None:
            half, s0 = imm(k // 2), imm(k // 2 - 1) - t
        else:
            half = E.FloorDiv(m, imm(2))
            s0 = half - imm(1) - t
        parts.append(S.For(t, imm(0), half, S.ForKind.SERIAL,
                           bind(load(s0), lambda it: sink(s0, m, it))))
    if kept is not None or n > k:  # later elements that beat the root replace it
        p = ctx.fresh("p")
        later = []
        step = bind(element(p), lambda it: S.IfThenElse(
            items.before(it, load(imm(0))), sink(imm(0), imm(k), it)))
        if ROOT_VALUE_FILTER:
            # the root's own value at hand: an element strictly worse than it (a number,
            # compared as the element type) is passed over without its key
            worst = decl_buffer((1,), dt, "heap_worst")
            root = E.BufferLoad(x, [base + items.position(load(imm(0))) * _expr(inner)])
            keep = S.BufferStore(worst, root, [imm(0)])
            v = E.BufferLoad(x, [base + p * _expr(inner)])
            w = E.BufferLoad(worst, [imm(0)])
            step = S.IfThenElse(E.Not(E.LT(v, w) if largest else E.GT(v, w)), bind(
                element(p), lambda it: S.IfThenElse(items.before(it, load(imm(0))),
                                                    S.SeqStmt([sink(imm(0), imm(k), it),
                                                               keep]))))
            later.append(keep)
            extra.append(worst)
        extent = imm(n - k) if kept is None else n - imm(k)
        later.append(S.For(p, imm(k), extent, S.ForKind.SERIAL, step))
        # (a run-time row: only past k elements, where the root read is one of them)
        parts += later if kept is None else [S.IfThenElse(E.GT(n, imm(k)), S.SeqStmt(later))]
    srt, done, scratch = (sort_kept or _sort_kept)(ctx, form, items, k, load)
    parts += srt

    def final(j):
        return tuple(E.BufferLoad(b, [j]) for b in done)

    s = ctx.fresh("s")
    pos = items.position(final(s))
    parts.append(S.For(s, imm(0), m, S.ForKind.SERIAL, S.BufferStore(
        y, pos if y.dtype == "int32" else E.Cast(y.dtype, pos), [out_at(s)])))
    stmt = S.SeqStmt(parts)
    for b in [cur, *items.bufs, *scratch, *extra]:
        stmt = allocated(b, stmt)
    return stmt


register_rule(TOPK_TAG, Rule("top-k rows", "selection", supported, emit, materialize=True,
                             symbolic=True))
