"""Window pools (max, the mean of avg, a sum) over run-time sizes, NCHW and NCW: the vector code
of ``pool.emit_direct`` with the interior / border split taken when the kernel runs; and static
pools of windows too large for ``pool.emit_direct`` (``takes_static``), the same code over
constant sizes.

A symbolic kernel (Relay VM's ``Any`` dims, Relax's symbolic shapes) serves every size, so which
output rows and columns have their whole window inside the input is known only at run time.
Per (image, channel) plane the output rows split into the top border ``[0, ylo)``, the interior
``[ylo, yhi)`` and the bottom border ``[yhi, OH)``; each row's columns the same way. ``ylo`` is
``ceil(pad_top / stride)`` (a constant, clipped to OH), ``yhi`` the first row whose window
crosses the input's bottom, both computed from the run-time sizes. Interior columns combine
their ``kh * kw`` taps as vector loads of ``VECTOR_LANES`` outputs, unmasked, the last vector
overlapping the one before (a serial loop where fewer than a vector remain); border rows and
columns read each tap at a clamped index and mask it (``Select``) with the value the compute
gives an outside tap (the dtype's lowest value for a max, 0 for a sum), so every output equals
the compute's. A mean divides each window's sum by its tap count: ``kh * kw`` inside, counted
per position on the border (with ``count_include_pad``, taps inside the padded input). Each
window row is addressed from its start in a flat view of the input (bound once per output
row), planes by the parallel loop's index: with the 4-d run-time strides recomputed at every
tap the symbolic kernel had stayed 1.3-2.2x the static one.

The generic reduction this replaces masked and clamped every tap of every output in scalar
code: 7-9x the static kernel's time (benchmarks/bench_relay_vm_symbolic_pools.py).

A window of more than ``pool.DIRECT_MAX_TAPS`` taps is not written out. Where its columns
overlap enough (``sw * kh + kw < kh * kw``, both sides at most ``DIRECT_MAX_TAPS``; at column
stride 1 from ``ROWS_FIRST_MIN_TAPS`` taps on: ``_rows_first``) each output row first combines
its window rows into a row temporary of the input's width (one per plane, vectors over the
columns, rows clamped or masked as the taps are), then its outputs combine ``kw`` taps of that
row: ``kh + kw`` taps an output at stride 1 instead of ``kh * kw``. Otherwise (a larger window)
each vector of outputs keeps an accumulator (a ``VECTOR_LANES`` buffer per plane),
combined with one window row per iteration of a loop over the rows (the row's taps written
out; past ``DIRECT_MAX_TAPS`` columns a loop over them too), then divided / stored as above.
Column strides past 4 load each tap's lanes one by one (the code generator's gather). YOLO's
SPP max pools (9x9, 13x13 at stride 1) went from 28-90x the static kernel's time (the generic
reduction) to 0.05-0.33x (the accumulators alone: 0.2-1.8x), a 3x3 / 5 max pool from 1-2.2x
to 0.2-0.5x, a 7x7 / 7 mean from 2.4-3.3x to 0.8-0.9x.

A static pool of more than ``pool.DIRECT_MAX_TAPS`` taps, or one rows-first at column stride 1,
takes the same forms (``STATIC``, ``takes_static``; sizes as constants, which the code generator
folds) instead of ``pool.emit_rows`` (a read-modify-write pass over a row temporary per window
row and output row, behind a bounds test) or ``pool.emit_direct``'s ``kh * kw`` taps. Measured
at one thread, ms, before -> after (benchmarks/bench_static_pools.py; ONNX Runtime's MaxPool
in brackets): 8x32x28x28 max 13x13 / 1 13.1 -> 0.85 (5.96), 9x9 / 1 8.07 -> 0.47 (1.02),
5x5 / 1 0.40 -> 0.21 (0.37), 4x4 / 1 0.24 -> 0.15 (0.20), 7x7 / 2 1.79 -> 0.15 (0.19); mean
9x9 / 1 0.98 -> 0.62 (1.12). The symbolic 5x5 / 1 max pool of 1x64x56x56: 0.41 -> 0.17.

``emit_run_time_bins`` sums adaptive bins whose bounds are run-time expressions
(``raise_pool.bins_tag``; 1-, 2- and 3-D), each over its own range instead of the widest bin
masked.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import substitute
from .common import const_int, dims_of, epilogue_value, parallel_for
from .pool import (
    DIRECT_MAX_TAPS,
    _is_max,
    _is_mean,
    _max_tree,
    _tree,
)

VECTOR_LANES = 8  # output columns per vector (``pool.DIRECT_LANES``)
# work per (image, channel) plane assumed when deciding, at run time, to use the thread pool:
# taps of a 28x28 output plane (``common.parallel_for``: enough planes of it to be worth it)
PLANE_OUTPUTS = 28 * 28
# static pools of more than ``pool.DIRECT_MAX_TAPS`` taps take this schedule's forms (off: the
# row form, ``pool.emit_rows``)
STATIC = True
ROWS_FIRST_MIN_TAPS = 16  # (see ``_rows_first``)


def takes_static(t) -> bool:
    """Does static pool stage ``t`` take this schedule (a window too large for the direct form:
    its rows combined first or accumulated) rather than ``pool.emit``?"""
    a = t.op.attrs
    if not STATIC or "bins" in a or a.get("kind") not in ("max", "avg", "sum"):
        return False
    (kh, kw), sw = a["pool_size"], a["strides"][1]
    return kh * kw > DIRECT_MAX_TAPS or _rows_first(kh, kw, sw)


def _rows_first(kh: int, kw: int, sw: int) -> bool:
    """Does a window combine each output row's window rows into a row temporary first (``kh``
    row taps per column, then ``kw`` column taps per output: ``sw * kh + kw`` an output where
    its columns overlap, not ``kh * kw``)? Windows of more than ``pool.DIRECT_MAX_TAPS`` taps
    where that costs fewer taps, and at column stride 1 those of ``ROWS_FIRST_MIN_TAPS`` or
    more (at a stride ``pool.emit_direct``'s own row temporary does as well: 5x5 / 2)."""
    taps = kh * kw
    if not (1 < kh <= DIRECT_MAX_TAPS and kw <= DIRECT_MAX_TAPS and sw * kh + kw < taps):
        return False
    return taps > DIRECT_MAX_TAPS or (sw == 1 and taps >= ROWS_FIRST_MIN_TAPS)


def supported(t) -> bool:
    """Does this schedule take symbolic window pool stage ``t`` (a max, mean or sum over a
    window of any size, stride and dilation, or adaptive bins of run-time bounds)?"""
    a = t.op.attrs
    if "run_time_bins" in a:
        return True
    return "bins" not in a and a.get("kind") in ("max", "avg", "sum")


def _plane(t) -> tuple:
    """The (H, W) of an NCHW tensor, (1, W) of an NCW one, ints or PrimExprs."""
    d = dims_of(t)
    return (d[2], d[3]) if len(d) == 4 else (1, d[2])


def _at(buf, b, c, y, j) -> list:
    return [b, c, y, j] if len(buf.shape) == 4 else [b, c, j]


def emit_run_time_bins(ctx, t, out, x, combine, epi=None) -> S.Stmt:
    """Sum stage ``t`` over bins of run-time bounds (``raise_pool.bins_tag``: per axis
    ``(start, end, R)`` of the output position) into ``out``: each output sums the input over
    ``[start, min(end, start + R))`` per axis (indices clamped to the input as the stage
    clamps them), serially, instead of ``R`` masked taps per axis. NCW, NCHW or NCDHW (a depth
    axis: one more loop around the plane's); planes run in parallel."""
    a = t.op.attrs
    dims = dims_of(x)
    idt = next(d.dtype for d in dims if not isinstance(d, int))

    def c(v):
        return E.as_index(v, idt)

    nb, ch = dims[0], dims[1]
    deep = len(dims) == 5  # (NCDHW: the depth bins around each (H, W) plane's)
    h, w = (c(v) for v in (dims[3:] if deep else _plane(x)))
    oh, ow = (c(v) for v in (dims_of(t)[3:] if deep else _plane(t)))
    bins, axes = a["run_time_bins"], a["bin_axes"]
    if len(bins) == 1:  # (NCW: a unit H, one row)
        bins = ((c(0), c(1), c(1)), *bins)
        axes = (None, *axes)
    dt = t.dtype
    xf, of = ctx.flat_view(x), ctx.flat_view(out)
    acc = decl_buffer((1,), dt, "bin_acc")

    def bounds(q, o):
        start, end, r = bins[q]
        if axes[q] is not None:
            start, end = (substitute(e, {axes[q]: o}) for e in (start, end))
        start, end, r = c(start), c(end), c(r)
        return start, E.Min(end, start + r)

    def plane(p):
        b, ch_ = E.FloorDiv(p, c(ch)), E.FloorMod(p, c(ch))
        oy, ox = ctx.fresh("oy", idt), ctx.fresh("ox", idt)
        y, xx = ctx.fresh("y", idt), ctx.fresh("x", idt)
        q = int(deep)  # (the H axis' bins)
        ys, ye = bounds(q, oy)
        xs, xe = bounds(q + 1, ox)
        if deep:  # the input plane at depth z, the output plane at oz
            d, od = c(dims[2]), c(dims_of(t)[2])
            oz, z = ctx.fresh("oz", idt), ctx.fresh("z", idt)
            zs, ze = bounds(0, oz)
            ibase, obase = (p * d + E.Min(z, d - c(1))) * h * w, p * od + oz
            at = [b, ch_, oz, oy, ox]
        else:
            ibase, obase, at = p * h * w, p, _at(out, b, ch_, oy, ox)
        tap = E.BufferLoad(xf, [ibase + E.Min(y, h - c(1)) * w + E.Min(xx, w - c(1))])
        total = S.For(y, ys, ye - ys, S.ForKind.SERIAL, S.For(
            xx, xs, xe - xs, S.ForKind.SERIAL, S.BufferStore(
                acc, combine(E.BufferLoad(acc, [c(0)]), tap), [c(0)])))
        if deep:
            total = S.For(z, zs, ze - zs, S.ForKind.SERIAL, total)
        v = E.BufferLoad(acc, [c(0)])
        if epi is not None:
            v = epilogue_value(epi, out, at, v)
        cell = S.SeqStmt([S.BufferStore(acc, E.const(0, dt), [c(0)]), total,
                          S.BufferStore(of, v, [(obase * oh + oy) * ow + ox])])
        body = S.For(oy, c(0), oh, S.ForKind.SERIAL, S.For(ox, c(0), ow, S.ForKind.SERIAL, cell))
        if deep:
            body = S.For(oz, c(0), od, S.ForKind.SERIAL, body)
        return S.Allocate(acc.data, dt, [1], True, S.DeclBuffer(acc, body))

    return parallel_for(ctx, c(nb) * c(ch), PLANE_OUTPUTS, plane, idt)


def emit(ctx, t, out, x, combine, epi=None) -> S.Stmt:
    """Statements computing symbolic pool stage ``t`` (input buffer ``x``) into ``out``; with a
    fused epilogue ``epi`` (``common.emit_with_epilogue``'s) its value is what is stored."""
    a = t.op.attrs
    dims = dims_of(x)
    idt = next((d.dtype for d in (*dims, *dims_of(t)) if not isinstance(d, int)), "int32")

    def c(v):  # an index of the loops' type
        return E.as_index(v, idt)

    nb, ch = dims[0], dims[1]
    h, w = (c(v) for v in _plane(x))
    oh, ow = (c(v) for v in _plane(t))
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    pt, pl, pb, pr = a["padding"]
    include = bool(a.get("count_include_pad", False))
    dt = t.dtype
    is_max, mean = _is_max(t), _is_mean(t)
    pad = tir_op.min_value(dt) if is_max else E.const(0, dt)

    def interior(n, o, k, s, d, p):
        """``[lo, hi)``: the output positions whose whole window lies inside ``n`` inputs."""
        lo = E.Min(c(-(-p // s)), o)
        hi = E.FloorDiv(n - c(1 + (k - 1) * d - p), c(s)) + c(1)
        return lo, E.Max(lo, E.Min(hi, o))

    ylo, yhi = interior(h, oh, kh, sh, dh, pt)
    xlo, xhi = interior(w, ow, kw, sw, dw, pl)

    def count(o, n, k, s, d, p, pa):
        """The taps of the window at output position ``o`` a mean divides by (1 at least)."""
        lo, hi = (c(-p), n + c(pa)) if include else (c(0), n)
        start = o * c(s) - c(p)
        first, last = lo + c(d - 1) - start, hi - c(1) - start
        if d != 1:
            first, last = E.FloorDiv(first, c(d)), E.FloorDiv(last, c(d))
        return E.Max(E.Min(last, c(k - 1)) - E.Max(first, c(0)) + c(1), c(1))

    xf, of = ctx.flat_view(x), ctx.flat_view(out)
    # a max over contiguous taps reads the border clamped, unmasked (see ``store``)
    clamp_only = is_max and dh == 1 and dw == 1
    # a window of more taps than the unrolled form writes out: its rows in a loop, each
    # output's value in an accumulator (one vector of them per plane)
    looped = kh * kw > DIRECT_MAX_TAPS
    acc = decl_buffer((VECTOR_LANES,), dt, "pool_acc")
    # ... or, where that costs fewer taps (overlapping columns), rows then columns: each output
    # row's window rows combined into a row of the input's width, then its columns from that
    rowwise = _rows_first(kh, kw, sw)
    rowt = decl_buffer((w,), dt, "pool_row")

    def let(name, value, body_fn):
        v = ctx.fresh(name, idt)
        return S.LetStmt(v, value, body_fn(v))

    def clamped(i, n):
        """``(i in [0, n), i clamped into [0, n))``: a masked tap's condition and index."""
        return E.And(i >= c(0), i < n), E.Max(E.Min(i, n - c(1)), c(0))

    def row_taps(rbase, rcond, j, xmask, kxs, src=xf) -> list:
        """The taps of one window row (its start in the flat input ``rbase``, in-bounds
        condition ``rcond`` or None) at window columns ``kxs`` (ints, or one loop var) for
        output column ``j``; ``src`` the row temporary where the rows are combined first."""
        taps = []
        for kx in kxs:
            ix = j * c(sw) + (c(kx * dw - pl) if isinstance(kx, int) else kx * c(dw) - c(pl))
            cond = None if clamp_only else rcond
            if xmask:
                xc, ix = clamped(ix, w)
                cond = None if clamp_only else xc if cond is None else E.And(cond, xc)
            v = E.BufferLoad(src, [rbase + ix] if src is xf else [ix])
            taps.append(v if cond is None else E.Select(cond, v, pad))
        return taps

    def finish(b, ch_, orow, vals, oy, j, ymask, xmask):
        """Store output ``(oy, j)`` of the plane: ``vals`` combined (the window's taps, or its
        accumulated value alone), a mean divided by its count, the epilogue applied."""
        if clamp_only and (ymask or xmask):
            # a border max: a clamped tap repeats the edge, which the window holds (taps
            # contiguous, some inside), so only the padding's value joins; a window with no
            # tap inside is that value alone
            start_y, start_x = oy * c(sh) - c(pt), j * c(sw) - c(pl)
            inside = [E.And(start_y < h, start_y + c(kh - 1) >= c(0))] if ymask else []
            inside += [E.And(start_x < w, start_x + c(kw - 1) >= c(0))] if xmask else []
            any_in = inside[0] if len(inside) == 1 else E.And(inside[0], inside[1])
            v = E.Select(any_in, _max_tree([*vals, pad]), pad)
        elif len(vals) == 1:
            v = vals[0]
        else:
            v = _max_tree(vals) if is_max else _tree(vals, combine)
        if mean:
            cy = count(oy, h, kh, sh, dh, pt, pb) if ymask else c(kh)
            cx = count(j, w, kw, sw, dw, pl, pr) if xmask else c(kw)
            v = v / (E.FloatImm(dt, float(kh * kw)) if not (ymask or xmask)
                     else E.Cast(dt, cy * cx))
        if epi is not None:
            v = epilogue_value(epi, out, _at(out, b, ch_, oy, j), v)
        return S.BufferStore(of, v, [orow + j])

    def unrolled(rows, b, ch_, orow, oy, ymask, xmask, span, j_of, src=xf):
        """Outputs ``j_of(i)`` for ``i`` in ``span`` (``(start, extent, loop kind)``: the lanes
        of one vector where vectorized; None: the one output ``j_of(None)``), each window's taps
        written out, ``rows`` each window row's ``(start in the flat input, in-bounds condition
        or None)``."""
        def one(i):
            j = j_of(i)
            taps = [v for rbase, rcond in rows
                    for v in row_taps(rbase, rcond, j, xmask, range(kw), src)]
            return finish(b, ch_, orow, taps, oy, j, ymask, xmask)

        if span is None:
            return one(None)
        start, n, kind = span
        i = ctx.fresh("vi" if kind == S.ForKind.VECTORIZED else "t", idt)
        return S.For(i, start, n, kind, one(i))

    def accumulated(p, b, ch_, orow, oy, ymask, xmask, span, j_of):
        """``unrolled``'s outputs for a window of more than ``pool.DIRECT_MAX_TAPS`` taps: an
        accumulator per output combined with each window row in a loop (the row's taps written
        out, or, past ``pool.DIRECT_MAX_TAPS`` columns, a loop of their own), then stored."""
        def lanes(body_fn):  # (the accumulator's element i: output j_of(start + i))
            if span is None:
                return body_fn(c(0))
            start, n, kind = span
            i = ctx.fresh("l", idt)
            return S.For(i, c(0), n, kind, body_fn(i))

        def j_at(i):
            if span is None:
                return j_of(None)
            return j_of(i) if const_int(span[0]) == 0 else j_of(i + span[0])

        ky = ctx.fresh("ky", idt)
        iy = oy * c(sh) + ky * c(dh) - c(pt)
        cond, iy = clamped(iy, h) if ymask else (None, iy)
        kx = ctx.fresh("kx", idt) if kw > DIRECT_MAX_TAPS else None

        def update(r):
            def one(i):
                taps = row_taps(r, cond, j_at(i), xmask, range(kw) if kx is None else [kx])
                old = E.BufferLoad(acc, [i])
                new = _max_tree([old, *taps]) if is_max else _tree([old, *taps], combine)
                return S.BufferStore(acc, new, [i])

            body = lanes(one)
            return body if kx is None else S.For(kx, c(0), c(kw), S.ForKind.SERIAL, body)

        return S.SeqStmt([
            lanes(lambda i: S.BufferStore(acc, pad, [i])),
            S.For(ky, c(0), c(kh), S.ForKind.SERIAL, let("r", p * h * w + iy * w, update)),
            lanes(lambda i: finish(b, ch_, orow, [E.BufferLoad(acc, [i])], oy, j_at(i), ymask,
                                   xmask))])

    def serial(lo, hi, fbody, name):
        v = ctx.fresh(name, idt)
        return S.For(v, lo, hi - lo, S.ForKind.SERIAL, fbody(v))

    def borders(lo, hi, end, fbody, name):
        """``fbody`` at ``[0, lo)`` and ``[hi, end)`` in one loop (one copy of the masked code:
        a loop per side doubled the code LLVM compiles)."""
        k = ctx.fresh(name, idt)
        pos = E.Select(k < lo, k, k + (hi - lo))
        return S.For(k, c(0), lo + (end - hi), S.ForKind.SERIAL, fbody(pos))

    def vectors(lo, hi, cells):
        """``cells(span, j_of)`` over ``j`` in ``[lo, hi)``: whole vectors, the last
        overlapping the one before; a serial loop where the range is shorter than a vector."""
        n, lanes = hi - lo, c(VECTOR_LANES)
        vec = S.ForKind.VECTORIZED
        vo = ctx.fresh("vo", idt)
        main = S.For(vo, c(0), E.FloorDiv(n, lanes), S.ForKind.SERIAL, cells(
            (c(0), lanes, vec), lambda vi: lo + vo * lanes + vi))
        last = cells((c(0), lanes, vec), lambda vl: hi - lanes + vl)
        short = cells((lo, hi - lo, S.ForKind.SERIAL), lambda t: t)
        tail = S.IfThenElse(n >= lanes, S.IfThenElse(
            E.NE(E.FloorMod(n, lanes), c(0)), last, None), short)
        return S.SeqStmt([main, tail])

    def row(p, b, ch_, oy, ymask):
        def with_rows(ky, rows, body_fn):
            if ky == kh:
                return body_fn(rows)
            iy = oy * c(sh) + c(ky * dh - pt)
            cond, iy = clamped(iy, h) if ymask else (None, iy)
            return let("r", p * h * w + iy * w, lambda r: with_rows(
                ky + 1, [*rows, (r, cond)], body_fn))

        def columns(rows):
            """The row temporary: each input column's window rows combined (clamped, or
            masked with the padding's value, as the taps are), then the outputs from it."""
            def fill(span, j_of):
                i = ctx.fresh("vi" if span[2] == S.ForKind.VECTORIZED else "t", idt)
                x_ = j_of(i)
                taps = [E.BufferLoad(xf, [r + x_]) for r, _ in rows]
                if not clamp_only:
                    taps = [v if cond is None else E.Select(cond, v, pad)
                            for v, (_, cond) in zip(taps, rows, strict=True)]
                v = _max_tree(taps) if is_max else _tree(taps, combine)
                return S.For(i, span[0], span[1], span[2], S.BufferStore(rowt, v, [x_]))

            return S.SeqStmt([vectors(c(0), w, fill), body([(c(0), None)], rowt)])

        def body(rows, src=xf):
            def cells(mask):
                if src is not xf:
                    return lambda span, j_of: unrolled(rows, b, ch_, orow, oy, ymask, mask,
                                                       span, j_of, src)
                if rows is None:
                    return lambda span, j_of: accumulated(p, b, ch_, orow, oy, ymask, mask,
                                                          span, j_of)
                return lambda span, j_of: unrolled(rows, b, ch_, orow, oy, ymask, mask, span,
                                                   j_of)

            orow = ctx.fresh("orow", idt)
            edge = cells(True)
            return S.LetStmt(orow, (p * oh + oy) * ow, S.SeqStmt([
                borders(xlo, xhi, ow, lambda j: edge(None, lambda _: j), "ox"),
                vectors(xlo, xhi, cells(False))]))

        if rowwise:
            return with_rows(0, [], columns)
        return body(None) if looped else with_rows(0, [], body)

    def plane(p):
        b, ch_ = E.FloorDiv(p, c(ch)), E.FloorMod(p, c(ch))

        def rows(mask):
            return lambda oy: row(p, b, ch_, oy, mask)

        nest = S.SeqStmt([borders(ylo, yhi, oh, rows(True), "oy"),
                          serial(ylo, yhi, rows(False), "oy")])
        if rowwise:
            return S.Allocate(rowt.data, dt, [w], True, S.DeclBuffer(rowt, nest))
        if not looped:
            return nest
        return S.Allocate(acc.data, dt, [VECTOR_LANES], True, S.DeclBuffer(acc, nest))

    return parallel_for(ctx, c(nb) * c(ch), PLANE_OUTPUTS * kh * kw, plane, idt)
