"""Window pools (max, the mean of avg, a sum) over run-time sizes, NCHW and NCW: the vector code
of ``pool.emit_direct`` with the interior / border split taken when the kernel runs.

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

``emit_run_time_bins`` sums adaptive bins whose bounds are run-time expressions
(``raise_pool.bins_tag``), each over its own range instead of the widest bin masked.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import substitute
from .common import dims_of, epilogue_value, parallel_for
from .pool import (
    DIRECT_MAX_STRIDE,
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


def supported(t) -> bool:
    """Does this schedule take symbolic window pool stage ``t`` (a window of at most
    ``pool.DIRECT_MAX_TAPS`` taps at a column stride of at most ``pool.DIRECT_MAX_STRIDE``)?"""
    a = t.op.attrs
    if "run_time_bins" in a:
        return True
    if "bins" in a or a.get("kind") not in ("max", "avg", "sum"):
        return False
    (kh, kw), (_, sw) = a["pool_size"], a["strides"]
    return kh * kw <= DIRECT_MAX_TAPS and 1 <= sw <= DIRECT_MAX_STRIDE


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
    clamps them), serially, instead of ``R`` masked taps per axis. Planes run in parallel."""
    a = t.op.attrs
    dims = dims_of(x)
    idt = next(d.dtype for d in dims if not isinstance(d, int))

    def c(v):
        if isinstance(v, int):
            return E.IntImm(idt, v)
        return v if v.dtype == idt else E.Cast(idt, v)

    nb, ch = dims[0], dims[1]
    h, w = (c(v) for v in _plane(x))
    oh, ow = (c(v) for v in _plane(t))
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
        ys, ye = bounds(0, oy)
        xs, xe = bounds(1, ox)
        tap = E.BufferLoad(xf, [p * h * w + E.Min(y, h - c(1)) * w + E.Min(xx, w - c(1))])
        total = S.For(y, ys, ye - ys, S.ForKind.SERIAL, S.For(
            xx, xs, xe - xs, S.ForKind.SERIAL, S.BufferStore(
                acc, combine(E.BufferLoad(acc, [c(0)]), tap), [c(0)])))
        v = E.BufferLoad(acc, [c(0)])
        if epi is not None:
            v = epilogue_value(epi, out, _at(out, b, ch_, oy, ox), v)
        cell = S.SeqStmt([S.BufferStore(acc, E.const(0, dt), [c(0)]), total,
                          S.BufferStore(of, v, [(p * oh + oy) * ow + ox])])
        body = S.For(oy, c(0), oh, S.ForKind.SERIAL, S.For(ox, c(0), ow, S.ForKind.SERIAL, cell))
        return S.Allocate(acc.data, dt, [1], True, S.DeclBuffer(acc, body))

    return parallel_for(ctx, c(nb) * c(ch), PLANE_OUTPUTS, plane, idt)


def emit(ctx, t, out, x, combine, epi=None) -> S.Stmt:
    """Statements computing symbolic pool stage ``t`` (input buffer ``x``) into ``out``; with a
    fused epilogue ``epi`` (``common.emit_with_epilogue``'s) its value is what is stored."""
    a = t.op.attrs
    dims = dims_of(x)
    idt = next((d.dtype for d in (*dims, *dims_of(t)) if not isinstance(d, int)), "int32")

    def c(v):  # an index of the loops' type
        if isinstance(v, int):
            return E.IntImm(idt, v)
        return v if v.dtype == idt else E.Cast(idt, v)

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

    def let(name, value, body_fn):
        v = ctx.fresh(name, idt)
        return S.LetStmt(v, value, body_fn(v))

    def store(b, ch_, orow, rows, oy, j, ymask, xmask):
        """Output ``(oy, j)`` of the plane, ``rows`` each window row's ``(start in the flat
        input, in-bounds condition or None)``."""
        taps = []
        for rbase, rcond in rows:
            for kx in range(kw):
                ix = j * c(sw) + c(kx * dw - pl)
                cond = None if clamp_only else rcond
                if xmask:
                    xc = E.And(ix >= c(0), ix < w)
                    cond = None if clamp_only else xc if cond is None else E.And(cond, xc)
                    ix = E.Max(E.Min(ix, w - c(1)), c(0))
                v = E.BufferLoad(xf, [rbase + ix])
                taps.append(v if cond is None else E.Select(cond, v, pad))
        if clamp_only and (ymask or xmask):
            # a border max: a clamped tap repeats the edge, which the window holds (taps
            # contiguous, some inside), so only the padding's value joins; a window with no
            # tap inside is that value alone
            start_y, start_x = oy * c(sh) - c(pt), j * c(sw) - c(pl)
            inside = [E.And(start_y < h, start_y + c(kh - 1) >= c(0))] if ymask else []
            inside += [E.And(start_x < w, start_x + c(kw - 1) >= c(0))] if xmask else []
            any_in = inside[0] if len(inside) == 1 else E.And(inside[0], inside[1])
            v = E.Select(any_in, _max_tree([*taps, pad]), pad)
        else:
            v = _max_tree(taps) if is_max else _tree(taps, combine)
        if mean:
            cy = count(oy, h, kh, sh, dh, pt, pb) if ymask else c(kh)
            cx = count(j, w, kw, sw, dw, pl, pr) if xmask else c(kw)
            v = v / (E.FloatImm(dt, float(kh * kw)) if not (ymask or xmask)
                     else E.Cast(dt, cy * cx))
        if epi is not None:
            v = epilogue_value(epi, out, _at(out, b, ch_, oy, j), v)
        return S.BufferStore(of, v, [orow + j])

    def serial(lo, hi, fbody, name):
        v = ctx.fresh(name, idt)
        return S.For(v, lo, hi - lo, S.ForKind.SERIAL, fbody(v))

    def borders(lo, hi, end, fbody, name):
        """``fbody`` at ``[0, lo)`` and ``[hi, end)`` in one loop (one copy of the masked code:
        a loop per side doubled the code LLVM compiles)."""
        k = ctx.fresh(name, idt)
        pos = E.Select(k < lo, k, k + (hi - lo))
        return S.For(k, c(0), lo + (end - hi), S.ForKind.SERIAL, fbody(pos))

    def vectors(lo, hi, fbody):
        """``fbody(j)`` for ``j`` in ``[lo, hi)``: whole vectors, the last overlapping the one
        before; a serial loop where the range is shorter than a vector."""
        n, lanes = hi - lo, c(VECTOR_LANES)
        vo, vi, vl = ctx.fresh("vo", idt), ctx.fresh("vi", idt), ctx.fresh("vi", idt)
        main = S.For(vo, c(0), E.FloorDiv(n, lanes), S.ForKind.SERIAL, S.For(
            vi, c(0), lanes, S.ForKind.VECTORIZED, fbody(lo + vo * lanes + vi)))
        last = S.For(vl, c(0), lanes, S.ForKind.VECTORIZED, fbody(hi - lanes + vl))
        short = serial(lo, hi, fbody, "t")
        tail = S.IfThenElse(n >= lanes, S.IfThenElse(
            E.NE(E.FloorMod(n, lanes), c(0)), last, None), short)
        return S.SeqStmt([main, tail])

    def row(p, b, ch_, oy, ymask):
        def with_rows(ky, rows, body_fn):
            if ky == kh:
                return body_fn(rows)
            iy = oy * c(sh) + c(ky * dh - pt)
            cond = None
            if ymask:
                cond = E.And(iy >= c(0), iy < h)
                iy = E.Max(E.Min(iy, h - c(1)), c(0))
            return let("r", p * h * w + iy * w, lambda r: with_rows(
                ky + 1, [*rows, (r, cond)], body_fn))

        def body(rows):
            def put(mask):
                return lambda j: store(b, ch_, orow, rows, oy, j, ymask, mask)

            orow = ctx.fresh("orow", idt)
            return S.LetStmt(orow, (p * oh + oy) * ow, S.SeqStmt([
                borders(xlo, xhi, ow, put(True), "ox"), vectors(xlo, xhi, put(False))]))

        return with_rows(0, [], body)

    def plane(p):
        b, ch_ = E.FloorDiv(p, c(ch)), E.FloorMod(p, c(ch))

        def rows(mask):
            return lambda oy: row(p, b, ch_, oy, mask)

        return S.SeqStmt([borders(ylo, yhi, oh, rows(True), "oy"),
                          serial(ylo, yhi, rows(False), "oy")])

    return parallel_for(ctx, c(nb) * c(ch), PLANE_OUTPUTS * kh * kw, plane, idt)
