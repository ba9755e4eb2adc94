"""Innermost loops split where an injective stage changes piece (``concatenate`` / ``stack`` along
the last axis, and so ``torch.roll``'s two slices joined back).

``topi.utils.pick_piece`` reads the piece holding position ``j`` through a tree of
``if_then_else(j < start, ...)``. With ``j`` the vectorized innermost axis, every lane evaluates
the tree and gathers its element (a roll of ``1x64x64x64`` by 3 along the last axis: 0.24 ms,
ONNX Runtime 0.09 ms). ``split_pieces`` cuts ``j``'s range at those starts; within a piece the
tree resolves to one branch, the loads become unit-stride vectors and the piece is copied with
whole vectors, the last one overlapping the one before instead of a scalar tail (a store of the
same value twice is harmless).

``lower.injective_nest`` calls ``split_pieces(ctx, t, buf, body, outer, lanes)`` for the
innermost axis of each outer position; None (no piece tree along that axis) keeps its vector
loop. One thread: the roll 0.24 -> 0.027 ms, a 3-way last-axis concatenate 64 -> 6 us.

A piece tree along an outer axis (a channel concatenate of NCHW planes: SqueezeNet's fire
modules, Inception, U-Net's skips) was tested per element as well, and its rows of 27 columns
were a vector and an 11-element scalar tail. ``split_planes`` emits one nest per piece of that
axis instead; a piece that reads each operand at the stored element's row-major position plus
an offset fixed by the axes before the cut (a copy, or an elementwise op of copies) is one flat
run of vectors over all its planes. One thread, two 128x27x27 planes: 76 -> 19 us (numpy's
copy 19, ONNX Runtime 30). A piece whose innermost axis reads across input rows (a gather per
lane) but whose own axis reads every operand with unit stride is vectorized along its own axis
instead (``_across_piece``): YOLO's three-scale decode, ``sigmoid`` of the heads written as
``[1, 4032, 25]``, 357 -> 77 us.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import expr_children, post_order, substitute, transform_expr, with_children
from .common import const_int, outer_loops, overlapping_vectors
from .flat_index import Canon, flat_offset, positioned_loads


def _cut_of(e, j, n: int | None = None) -> int | None:
    """The position of ``j`` (an axis of extent ``n``) where ``e`` changes piece: ``c`` when
    ``e`` is ``if_then_else(j < c, ...)`` with a constant ``c``, ``c * d`` when it tests
    ``j // d < c`` (a concatenate of rows of ``d`` read through a flattening reshape:
    ``_rows_of``), ``c - k`` when it tests ``j + k < c``, the offset clamped or not (a
    concatenate inside a piece of another, read at that piece's offset: PNA's four aggregators
    concatenated, then concatenated scaled three ways), else None."""
    if not (isinstance(e, E.Call) and e.op_name == "tir.if_then_else"):
        return None
    cond = e.args[0]
    if not isinstance(cond, E.LT):
        return None
    c = const_int(cond.b)
    if c is None:
        return None
    d = _rows_of(cond.a, j, n)
    if d is not None:
        return c * d
    clamped = _clamped_offset(cond.a, j)
    if clamped is None:
        return None
    k, low, high = clamped  # clamp(j + k, low, high) < c changes truth at j + k == c
    return c - k if low < c <= high else None


def _clamped_offset(e, j) -> tuple[int, float, float] | None:
    """``(k, low, high)`` when ``e`` is ``j + k`` clamped by constant ``min`` / ``max`` bounds
    (the clamps a piece tree's reads keep in bounds with: ``max(min(j - 48, 191), 0)``), any
    of them absent (an infinite bound), else None."""
    low, high = -float("inf"), float("inf")
    while isinstance(e, (E.Min, E.Max)):
        bound = const_int(e.b)
        if bound is None:
            return None
        if isinstance(e, E.Min):
            high = min(high, bound)
        else:
            low = max(low, bound)
        e = e.a
    k = _offset_of(e, j)
    return None if k is None else (k, low, high)


def _rows_of(a, j, n: int | None) -> int | None:
    """``d`` when index ``a`` is ``j`` (1) or ``j // d`` for a constant ``d >= 1``, under casts,
    also as ``(j // d) % m``, a reshape's unravelling, where ``j``'s axis of extent ``n`` holds
    at most ``m`` rows of ``d`` (``m * d >= n``: the ``% m`` never wraps), else None. (RetinaNet's five heads, each ``[1, A, H, W]`` permuted
    to ``[1, H*W*A/8, 8]``, concatenated and flattened: ``j // 8 % 3069 < 2880``.)"""
    a = a.value if isinstance(a, E.Cast) else a
    if isinstance(a, E.FloorMod):
        m = const_int(a.b)
        d = _rows_of(a.a, j, n) if m is not None and n is not None else None
        return d if d is not None and n <= m * d else None
    if isinstance(a, E.FloorDiv):
        d = const_int(a.b)
        inner = a.a.value if isinstance(a.a, E.Cast) else a.a
        return d if inner is j and d is not None and d >= 1 else None
    return 1 if a is j else None


# at most this many starts from bound tests (a pad's border: ``j - 1 >= 0 and j - 1 < 224``)
# cut an axis; more keep the per-element test (each start is a copy of the nest)
MAX_BOUND_CUTS = 4


def _offset_of(e, j) -> int | None:
    """``k`` when ``e`` is ``j + k`` for a constant ``k`` (``j``, ``j + c``, ``j - c``, under
    casts), else None."""
    e = e.value if isinstance(e, E.Cast) else e
    if e is j:
        return 0
    if isinstance(e, (E.Add, E.Sub)):
        a = e.a.value if isinstance(e.a, E.Cast) else e.a
        c = const_int(e.b)
        if a is j and c is not None:
            return c if isinstance(e, E.Add) else -c
    return None


def _bound_test(e, j):
    """``(t, below)`` when ``e`` compares ``j + k`` with a constant and so changes truth value
    at ``j == t`` (``below``: its value for ``j < t``), else None."""
    if not isinstance(e, (E.LT, E.LE, E.GT, E.GE)):
        return None
    k, c = _offset_of(e.a, j), const_int(e.b)
    if k is None or c is None:
        return None
    if isinstance(e, (E.LT, E.GE)):  # j + k < c  <=>  j < c - k
        return c - k, isinstance(e, E.LT)
    return c - k + 1, isinstance(e, E.LE)  # j + k <= c  <=>  j < c - k + 1


def cuts(body, j, n: int) -> list[int]:
    """The piece starts inside ``(0, n)`` that ``body`` tests axis var ``j`` against: the
    starts of a piece tree (``if_then_else(j < c)``) and, up to ``MAX_BOUND_CUTS`` of them, the
    thresholds of bound tests of ``j`` plus a constant (a pad's borders)."""
    found, bounds = set(), set()
    for e in post_order(body):
        found.add(_cut_of(e, j, n))
        test = _bound_test(e, j)
        if test is not None and 0 < test[0] < n:
            bounds.add(test[0])
    if len(bounds) <= MAX_BOUND_CUTS:
        found |= bounds
    return sorted(c for c in found if c is not None and 0 < c < n)


def _decided(e, j, lo: int, hi: int):
    """``e`` with what ``j`` in ``[lo, hi)`` decides folded: a bound test of ``j`` that is
    constant over the range, ``and`` / ``or`` of a known operand, an ``if_then_else`` or
    ``Select`` of a known condition; else ``e``."""
    test = _bound_test(e, j)
    if test is not None:
        t, below = test
        if hi <= t:
            return E.IntImm("bool", int(below))
        if lo >= t:
            return E.IntImm("bool", int(not below))
        return e
    if isinstance(e, (E.And, E.Or)):
        a, b = (const_int(x) if isinstance(x, E.IntImm) and x.dtype == "bool" else None
                for x in (e.a, e.b))
        absorbing = 0 if isinstance(e, E.And) else 1
        if absorbing in (a, b):
            return E.IntImm("bool", absorbing)
        if a is not None:
            return e.b
        if b is not None:
            return e.a
        return e
    if isinstance(e, E.Select) or (isinstance(e, E.Call) and e.op_name == "tir.if_then_else"):
        cond, yes, no = (e.condition, e.true_value, e.false_value) if isinstance(e, E.Select) \
            else e.args
        if isinstance(cond, E.IntImm) and cond.dtype == "bool":
            return yes if cond.value else no
    return e


def resolve(body, j, lo: int, hi: int, n: int | None = None):
    """``body`` for ``j`` in ``[lo, hi)`` (no cut inside): each ``if_then_else(j < c)`` is its
    taken branch, each ``min`` / ``max`` of indices that the range decides (the clamps that
    keep a piece's loads in bounds whichever piece a lane is in) its deciding operand, and each
    bound test the range decides its value (``_decided``).

    The walk goes down only the taken branch of a decided test: resolving each of ``k`` pieces
    of a tree that holds all ``k`` would otherwise rebuild (and bound every clamp of) the whole
    tree ``k`` times (crnn's LSTM steps: 2 s of a cold build). ``n``, the axis's extent, lets
    a tree tested through ``(j // d) % m`` resolve as ``cuts`` found it (``_rows_of``)."""
    ana = Analyzer()
    ana.bind(j, E.Range.from_min_extent(E.IntImm(j.dtype, lo), E.IntImm(j.dtype, hi - lo)))

    def taken(e):
        c = _cut_of(e, j, n)
        if c is None:
            return None
        return e.args[1] if hi <= c else e.args[2] if lo >= c else None

    def clamp(e):
        if not (isinstance(e, (E.Min, E.Max)) and e.dtype.startswith("int")):
            return e
        a, b = ana.const_int_bound(e.a), ana.const_int_bound(e.b)
        if a.max_value <= b.min_value:
            return e.a if isinstance(e, E.Min) else e.b
        if b.max_value <= a.min_value:
            return e.b if isinstance(e, E.Min) else e.a
        return e

    memo: dict[int, object] = {}
    stack = [(body, False)]
    while stack:  # post-order, iterative (deep bodies must not recurse)
        node, ready = stack.pop()
        if id(node) in memo:
            continue
        branch = taken(node)
        if ready:
            if branch is not None:
                memo[id(node)] = memo[id(branch)]
            else:
                kids = expr_children(node)
                new = with_children(node, [memo[id(k)] for k in kids]) if kids else node
                memo[id(node)] = _decided(clamp(new), j, lo, hi)
            continue
        stack.append((node, True))
        for kid in (branch,) if branch is not None else reversed(expr_children(node)):
            if id(kid) not in memo:
                stack.append((kid, False))
    return memo[id(body)]


def split_pieces(ctx, t, buf, body, outer: list, lanes: int) -> S.Stmt | None:
    """Store ``body`` (stage ``t``'s inlined expression, its axes bound to ``outer`` and the
    innermost position) into ``buf`` piece by piece along the innermost axis; None when the
    innermost extent is symbolic or the body has no piece tree along it."""
    n = const_int(t.shape[-1])
    j = t.op.axis[-1].var
    if n is None:
        return None
    points = cuts(body, j, n)
    if not points:
        return None
    axes = [iv.var for iv in t.op.axis]
    bounds = [0, *points, n]
    many = len(points) >= MAX_PLANE_PIECES
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        piece = resolve(body, j, lo, hi, n)

        def store(pos, piece=piece, last=None):
            """``piece`` at ``pos`` (read at ``min(pos, last)`` when ``last`` is given)."""
            idx = [*outer, pos]
            at = idx if last is None else [*outer, E.Min(pos, E.IntImm(pos.dtype, last))]
            vals = {a: (i if i.dtype == a.dtype else E.Cast(a.dtype, i))
                    for a, i in zip(axes, at)}
            return S.BufferStore(buf, substitute(piece, vals), idx)

        if many and hi - lo < NARROW_LANES and hi < n and lo + NARROW_LANES <= n:
            # a piece narrower than a vector, not the last: one vector of NARROW_LANES from
            # its start, the lanes past it repeating its last element into the next piece's
            # first places, which that piece stores after (pieces in order)
            v = ctx.fresh("vi")
            parts.append(S.For(v, E.IntImm(v.dtype, 0), E.IntImm(v.dtype, NARROW_LANES),
                               S.ForKind.VECTORIZED,
                               store(v + E.IntImm(v.dtype, lo), last=hi - 1)))
            continue
        parts += overlapping_vectors(ctx, lo, hi - lo, lanes, store)
    return S.SeqStmt(parts) if len(parts) > 1 else parts[0]


# with ``MAX_PLANE_PIECES`` pieces or more, a piece narrower than this along the innermost axis
# is stored with one vector of this many lanes (see split_pieces) instead of a scalar loop: a
# concatenate of 300 ``[2, 3]`` sigmoids along their last axis was 300 scalar loops, 10-12 CPU
# s in LLVM's O3 pipeline, now 1.0 (the kernel a vector one: the light pipeline), run time
# 2.6-3.0 -> 3.4-3.8 us for the graph (the clamped reads are gathers). Fewer pieces keep the
# scalar loops (O3 vectorizes them; the run time matters more than the compile there).
NARROW_LANES = 4


FLAT_CHUNK = 16384  # elements per task of a flat piece's copy (whole vectors; the pool's grain)
# at most this many pieces get a nest each (a stack of hundreds of slices keeps one nest with
# its tree: a nest per piece would make the kernel's code, and LLVM's time, grow with them)
MAX_PLANE_PIECES = 64


def split_planes(ctx, t, buf, body, lanes: int, parallel: bool) -> S.Stmt | None:
    """Stage ``t`` (static shape, inlined ``body``) stored piece by piece along the outermost
    non-innermost axis that ``body`` tests against piece starts; None when there is none."""
    shape = [const_int(d) for d in t.shape]
    if len(shape) < 2 or None in shape or buf.strides or \
            [const_int(d) for d in buf.shape] != shape:
        return None
    axes = [iv.var for iv in t.op.axis]
    for p in range(len(shape) - 1):
        points = cuts(body, axes[p], shape[p])
        if points:
            break
    else:
        return None
    if len(points) >= MAX_PLANE_PIECES:
        return None
    bounds = [0, *points, shape[p]]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        piece = resolve(body, axes[p], lo, hi, shape[p])
        stmt = _flat_piece(ctx, t, buf, piece, p, lo, hi, lanes, parallel)
        if stmt is None:
            stmt = _across_piece(ctx, t, buf, piece, p, lo, hi, lanes, parallel)
        parts.append(stmt if stmt is not None else
                     _nest_piece(ctx, t, buf, piece, p, lo, hi, lanes, parallel))
    return S.SeqStmt(parts) if len(parts) > 1 else parts[0]


def _bind(axes, idx) -> dict:
    return {a: (i if i.dtype == a.dtype else E.Cast(a.dtype, i)) for a, i in zip(axes, idx)}


def _nest_piece(ctx, t, buf, piece, p: int, lo: int, hi: int, lanes: int, parallel: bool):
    """Piece ``[lo, hi)`` of axis ``p`` as a loop nest over its positions, the innermost axis
    in vectors (split at its own pieces, if any)."""
    shape = [const_int(d) for d in t.shape]
    axes = [iv.var for iv in t.op.axis]
    dims = shape[:-1]
    dims[p] = hi - lo

    def store(outer):
        outer = list(outer)
        outer[p] = outer[p] + lo
        by_piece = split_pieces(ctx, t, buf, piece, outer, lanes)
        if by_piece is not None:
            return by_piece

        def at(j):
            idx = [*outer, j]
            return S.BufferStore(buf, substitute(piece, _bind(axes, idx)), idx)

        parts = overlapping_vectors(ctx, 0, shape[-1], lanes, at)
        return S.SeqStmt(parts) if len(parts) > 1 else parts[0]

    return outer_loops(ctx, dims, parallel, store)


def _uses(e, v) -> bool:
    return any(x is v for x in post_order(e))


def _shift_of(e, v) -> int | None:
    """``k`` when integer expression ``e`` is ``v + k`` (``v``, ``v - c``, ``v + c``, casts)."""
    k = 0
    while True:  # (a loop: a long chain of constant shifts must not recurse)
        if isinstance(e, E.Cast):
            e = e.value
        elif isinstance(e, (E.Add, E.Sub)) and isinstance(e.b, E.IntImm):
            k += e.b.value if isinstance(e, E.Add) else -e.b.value
            e = e.a
        else:
            return k if e is v else None


def _split_axis(body, v, lo: int, c: int, qo, qm):
    """``body`` with ``v = lo + qo * c + qm`` (``0 <= qm < c``): each ``(v + k) // d`` and
    ``(v + k) % d`` whose ``d`` is a multiple of ``c`` and ``lo + k`` a multiple of ``d``
    written in ``qo`` and ``qm``; None when some other division of ``v`` remains."""
    bad = []

    def fpost(e):
        if not isinstance(e, (E.FloorDiv, E.FloorMod)):
            return None
        k = _shift_of(e.a, v)
        d = const_int(e.b)
        if k is None:
            return None
        if d is None or d <= 0 or d % c or (lo + k) % d:
            bad.append(e)
            return None
        r = E.IntImm(qo.dtype, (lo + k) // d)
        if isinstance(e, E.FloorDiv):
            q = qo if d == c else E.FloorDiv(qo, E.IntImm(qo.dtype, d // c))
            val = q + r
        else:
            val = qm if d == c else E.FloorMod(qo, E.IntImm(qo.dtype, d // c)) * c + qm
        return val if val.dtype == e.dtype else E.Cast(e.dtype, val)

    out = transform_expr(body, fpost)
    if bad:
        return None
    pos = qo * c + qm + lo
    return substitute(out, {v: pos if pos.dtype == v.dtype else E.Cast(v.dtype, pos)})


MAX_LANE_STRIDE = 4  # the widest stride the code generator loads as vectors and shuffles


def _lane_stride(ana, buf, idx, qi) -> int | None:
    """The constant distance, 1 to ``MAX_LANE_STRIDE`` elements, between the elements that
    ``buf[idx]`` reads at consecutive ``qi`` (None for any other access)."""
    dims = [const_int(d) for d in buf.shape]
    if buf.strides or None in dims:
        return None
    flat, stride = E.IntImm(qi.dtype, 0), 1
    for i, d in zip(reversed(idx), reversed(dims)):
        i = i if i.dtype == qi.dtype else E.Cast(qi.dtype, i)
        flat = flat + i * E.IntImm(qi.dtype, stride)
        stride *= d
    at0 = substitute(flat, {qi: E.IntImm(qi.dtype, 0)})
    step = const_int(ana.simplify(substitute(flat, {qi: E.IntImm(qi.dtype, 1)}) - at0))
    if step is None or not 1 <= step <= MAX_LANE_STRIDE:
        return None
    rest = const_int(ana.simplify(flat - at0 - qi * E.IntImm(qi.dtype, step)))
    return step if rest == 0 else None


def _across_piece(ctx, t, buf, piece, p: int, lo: int, hi: int, lanes: int, parallel: bool):
    """Piece ``[lo, hi)`` of axis ``p`` vectorized along ``p`` rather than the innermost axis,
    when the innermost axis reads across input rows (a gather per lane) and ``p`` reads every
    operand with unit stride: YOLO's decode, ``sigmoid`` of the anchors' channels written
    transposed to ``[.., pixel, attribute]``. The loads and the math become whole vectors; only
    the stores are scattered (``shape[-1]`` apart). Axis ``p`` runs as ``qo * c + qm``, ``c``
    the divisor its index arithmetic uses (a merged plane's width), else one vector. None when
    that does not hold."""
    shape = [const_int(d) for d in t.shape]
    axes = [iv.var for iv in t.op.axis]
    last, v, n = axes[-1], axes[p], len(shape)
    if p == n - 1:
        return None
    loads = [e for e in post_order(piece) if isinstance(e, E.BufferLoad)]
    if not any(_uses(i, last) for e in loads for i in e.indices[:-1]):
        return None  # (vectorizing the innermost axis loads whole vectors already)
    divisors = {const_int(e.b) for e in post_order(piece)
                if isinstance(e, (E.FloorDiv, E.FloorMod)) and _shift_of(e.a, v) is not None}
    c = min(divisors) if divisors and None not in divisors else lanes
    if 4 <= c < lanes and lanes % c == 0:  # (narrow planes: vectors of one row)
        lanes = c
    if c < lanes or c % lanes or (hi - lo) % c:
        return None
    qo, qj, qi = ctx.fresh("qo"), ctx.fresh("qj"), ctx.fresh("qi")
    body = _split_axis(piece, v, lo, c, qo, qj * lanes + qi)
    if body is None:
        return None
    ana = Analyzer()
    for var, ext in ((qi, lanes), (qj, c // lanes), (qo, (hi - lo) // c)):
        ana.bind(var, E.Range.from_min_extent(E.IntImm("int32", 0), E.IntImm("int32", ext)))
    bad = []

    def fpost(e):
        if not isinstance(e, E.BufferLoad):
            return None
        idx = [ana.simplify(i) for i in e.indices]
        if any(_uses(i, qi) for i in idx) and _lane_stride(ana, e.buffer, idx, qi) is None:
            bad.append(e)
        return E.BufferLoad(e.buffer, idx)

    body = transform_expr(body, fpost)
    if bad:
        return None
    others = [k for k in range(n - 1) if k != p]
    tcuts = cuts(body, last, shape[-1])
    tbounds = [0, *tcuts, shape[-1]]
    parts_of = [(a, b, resolve(body, last, a, b, shape[-1]) if tcuts else body)
                for a, b in zip(tbounds[:-1], tbounds[1:])]

    def per_block(idx):
        q = idx[-1]
        vals = {axes[k]: x if x.dtype == axes[k].dtype else E.Cast(axes[k].dtype, x)
                for k, x in zip(others, idx[:-1])}
        vals[qo] = q
        full = [None] * n
        for k, x in zip(others, idx[:-1]):
            full[k] = x
        full[p] = q * c + qj * lanes + qi + lo
        parts = []
        for a, b, part in parts_of:
            tv = ctx.fresh("t")
            vals[last] = tv if tv.dtype == last.dtype else E.Cast(last.dtype, tv)
            full[-1] = tv
            lane = ctx.fresh("qi")  # (a loop variable of its own per loop)
            vals[qi] = lane
            vec = S.For(lane, 0, lanes, S.ForKind.VECTORIZED, S.BufferStore(
                buf, substitute(part, vals), [substitute(i, {qi: lane}) for i in full]))
            parts.append(S.For(tv, a, b - a, S.ForKind.SERIAL, vec) if b - a > 1 else
                         substitute(vec, {tv: E.IntImm(tv.dtype, a)}))
        inner = S.SeqStmt(parts) if len(parts) > 1 else parts[0]
        if c == lanes:
            return substitute(inner, {qj: E.IntImm(qj.dtype, 0)})
        return S.For(qj, 0, c // lanes, S.ForKind.SERIAL, inner)

    dims = [shape[k] for k in others] + [(hi - lo) // c]
    return outer_loops(ctx, dims, parallel, per_block)


def _poly_expr(poly: dict, canon: Canon, dtype: str):
    """The integer expression of a polynomial over variable atoms."""
    out = None
    for mono, c in sorted(poly.items()):
        term = E.IntImm(dtype, c)
        for a in mono:
            v = canon.atoms[a][1]
            term = term * (v if v.dtype == dtype else E.Cast(dtype, v))
        out = term if out is None else out + term
    return out if out is not None else E.IntImm(dtype, 0)


def _flat_piece(ctx, t, buf, piece, p: int, lo: int, hi: int, lanes: int, parallel: bool):
    """Piece ``[lo, hi)`` of axis ``p`` as flat runs of vectors, one run per position of the
    axes before ``p``, when every load that depends on the axes reads at the stored element's
    row-major position plus an offset of those outer axes alone; else None."""
    shape = [const_int(d) for d in t.shape]
    axes = [iv.var for iv in t.op.axis]
    outer_ids = {id(v) for v in axes[:p]}
    axis_ids = {id(v) for v in axes}
    canon = Canon()
    out_off = flat_offset(canon, buf, axes)
    inner = 1
    for d in shape[p + 1:]:
        inner *= d
    total = inner
    for d in shape[:p + 1]:
        total *= d
    for e in post_order(piece):  # (an operand may be larger than the output: a slice of it)
        if isinstance(e, E.BufferLoad):
            n = 1
            for d in e.buffer.shape:
                n *= const_int(d) if const_int(d) is not None else 1 << 62
            total = max(total, n)
    dt = "int64" if total >= 1 << 30 else "int32"
    deltas = {}
    for e, off in positioned_loads(canon, piece, axis_ids):
        if off is None:
            return None
        delta = dict(off)
        for m, c in out_off.items():
            v = delta.get(m, 0) - c
            if v:
                delta[m] = v
            else:
                delta.pop(m, None)
        if any(canon.atoms[a][0] != "var" or id(canon.atoms[a][1]) not in outer_ids
               for mono in delta for a in mono):
            return None
        deltas[id(e)] = (e, delta)
    if not deltas:
        return None
    f = E.Var("f", dt)

    def cast(v):
        return v if v.dtype == dt else E.Cast(dt, v)

    def run_body(outer):
        """(the piece's value at flat position ``f`` of the run, the run's first position)
        for the outer axes at ``outer``."""
        base = E.IntImm(dt, 0)
        for k in range(p):
            base = base * E.IntImm(dt, shape[k]) + cast(outer[k])
        base = base * E.IntImm(dt, shape[p] * inner) + E.IntImm(dt, lo * inner)
        vals = {a: (i if i.dtype == a.dtype else E.Cast(a.dtype, i))
                for a, i in zip(axes[:p], outer)}

        def fpost(e):
            hit = deltas.get(id(e))
            if hit is None:
                return None
            d = substitute(_poly_expr(hit[1], canon, dt), vals)
            return E.BufferLoad(ctx.flat_view(e.buffer), [f + base + d])

        return transform_expr(piece, fpost), base

    probe, _ = run_body([E.IntImm("int32", 0)] * p)
    if any(isinstance(x, E.Var) and id(x) in axis_ids for x in post_order(probe)):
        return None  # (an axis read as a value, not through a load)
    out = ctx.flat_view(buf)

    def store_run(outer, first: int, n: int, start=None):
        """Positions ``[first, first + n)`` of the run (after ``start``), in vectors."""
        new, base = run_body(outer)

        def at(j):
            pos = cast(j) if start is None else cast(j) + start
            return S.BufferStore(out, transform_expr(new, lambda x: pos if x is f else None),
                                 [pos + base])

        if start is not None:  # (a whole chunk: n is a multiple of lanes)
            vo, vi = ctx.fresh("vo"), ctx.fresh("vi")
            return S.For(vo, 0, n // lanes, S.ForKind.SERIAL,
                         S.For(vi, 0, lanes, S.ForKind.VECTORIZED, at(vo * lanes + vi)))
        seq = overlapping_vectors(ctx, first, n, lanes, at)
        return S.SeqStmt(seq) if len(seq) > 1 else seq[0]

    run = (hi - lo) * inner
    chunk = max(lanes, FLAT_CHUNK - FLAT_CHUNK % lanes)
    nchunk = run // chunk if parallel and run >= 2 * chunk else 0
    parts = []
    if nchunk:  # (whole chunks, tasks of the thread pool)
        parts.append(outer_loops(ctx, [*shape[:p], nchunk], True, lambda idx: store_run(
            idx[:-1], 0, chunk, cast(idx[-1]) * E.IntImm(dt, chunk))))
    if run > nchunk * chunk:
        parts.append(outer_loops(ctx, shape[:p], parallel and not nchunk, lambda idx: store_run(
            idx, nchunk * chunk, run - nchunk * chunk)))
    return S.SeqStmt(parts) if len(parts) > 1 else parts[0]
