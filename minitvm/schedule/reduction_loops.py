"""The loop nest of a reduction stage (``reduce_nest``): vectorized across output elements for
small windows, or with vector partial sums along a contiguous reduction."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute, transform_expr
from .common import (
    PARALLEL_MIN_WORK,
    SMALL_REDUCE,
    LoweringError,
    fold_lanes,
    vector_blocks,
)
from .common import const_int as _const_int
from .common import dims_of as _shape
from .common import imm as _i
from .common import index_dtype as _index_dtype
from .common import is_static as _is_static
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import prod_dims as _prod
from .common import static_part as _static_part
from .common import vector_inner as _vector_inner
from .injective_loops import _scalar_idx, _sub_axes

# vector accumulators of a reduction along its contiguous axis (power of two; 1 for fewer than
# twice as many vectors). Zen 4, one thread, amax over (2, 3) of (1, 256, 28, 28), us: one 26.1,
# two 19.0, four 16.3, eight 147 (the 128-lane partial sums spill); (1, 64, 56, 56): 27.7 with
# two, 18.0 with four (ONNX Runtime 17-21 and 28)
REDUCE_ACCUMULATORS = 4


def _reduce_parts(t, body):
    if not isinstance(body, E.Reduce) or len(body.source) != 1:
        raise LoweringError(f"stage {t.name!r}: unsupported reduction")
    if not S.is_true(body.condition):
        raise LoweringError(f"stage {t.name!r}: conditional reductions are not lowered")
    comb = body.combiner
    ident = body.init[0] if body.init else comb.identity_element[0]

    def combine(a, b):
        return substitute(comb.result[0], {comb.lhs[0]: a, comb.rhs[0]: b})

    return body.source[0], ident, combine


def _flat_trailing_reduction(ctx, src, raxes, rmin, rext):
    """``(source, axes, mins, extents)`` of the same reduction over one axis, or None: when
    every load in ``src`` that reads at the reduction axes is of a buffer whose trailing
    dimensions are the reduction axes, whole and in order (the other loads not reading at
    them), the reduction runs over those dimensions flattened (contiguous in memory), so it
    gets vector partial sums (a global average pool's 7x7 plane: 49 floats, not seven rows of
    7), at most one short scalar tail (28x28: 49 vectors, where rows of 28 left 12 of each 28
    floats to the scalar tail) and, rows of whole vectors too, the independent accumulators
    of ``REDUCE_ACCUMULATORS`` (32x32: 64 vectors in four chains, not rows of two in one). One
    thread, Zen 4, EfficientNet's global pools: 240 channels at 28x28 71 -> 17 us, 144 at 56x56
    76 -> 33 us (ONNX Runtime's 38-49 and 81-101 us). The source may be an expression of such
    loads: a variance's ``(x - mean)^2`` over a group norm's group (rows of 8 had left a
    1024-add scalar chain per group of 16x8x8). Sapphire Rapids, one thread, group norm with 8
    groups, the variance kernel, us, AVX-512 (AVX2 code, ``-mcpu=haswell``, on the same host):
    1x128x8x8 10.6 -> 1.3 (8.9 -> 1.0), 1x32x64x64 9.8 -> 4.5 (10.3 -> 6.4), 1x32x32x32
    2.8 -> 1.7 (3.0 -> 2.0), 1x64x16x16 1.8 -> 1.2 (1.8 -> 1.4)."""
    k = len(raxes)
    if k < 2 or not all(isinstance(v, int) for v in (*rmin, *rext)) or any(rmin):
        return None
    rvars = {id(iv.var) for iv in raxes}

    def reads_raxes(e) -> bool:
        return any(isinstance(n, E.Var) and id(n) in rvars for n in post_order(e))

    loads = [n for n in post_order(src) if isinstance(n, E.BufferLoad) and
             any(reads_raxes(i) for i in n.indices)]
    if not loads:
        return None
    for ld in loads:
        if len(ld.indices) < k:
            return None
        dims = [_const_int(d) for d in ld.buffer.shape]
        if any(d is None for d in dims) or dims[-k:] != rext or \
                any(i is not iv.var for i, iv in zip(ld.indices[-k:], raxes)) or \
                any(reads_raxes(i) for i in ld.indices[:-k]):
            return None
    total = _prod(rext)
    r = te.reduce_axis((0, total), name="rf")

    def flatten(n):
        dims = [_const_int(d) for d in n.buffer.shape]
        base = _i(0)
        for i, d in zip(n.indices[:-k], dims[:-k]):
            base = base * d + i
        return E.BufferLoad(ctx.flat_view(n.buffer), [base * total + r.var])

    # the axes read elsewhere too (an index as a value, another load's index): not flattened
    if reads_raxes(transform_expr(src, lambda n: None,
                                  {id(ld): E.FloatImm(ld.dtype, 0.0) for ld in loads})):
        return None
    # keyed on the original loads (their rebuilt parents then take the flat ones)
    memo = {id(ld): flatten(ld) for ld in loads}
    return transform_expr(src, lambda n: None, memo), [r], [0], [total]


def _contiguous_last_axis(src, raxes) -> bool:
    """Whether a one-axis reduction reads a contiguous run per output: every load of ``src``
    that reads the axis has it, bare, as its last index and nowhere else, and the axis is read
    nowhere outside loads (a layer norm's sum over 64 channels, NHWC). Such a run needs no
    flattening to take vector partial sums along it."""
    if len(raxes) != 1:
        return False
    rvar = raxes[0].var

    def reads_axis(e) -> bool:
        return any(n is rvar for n in post_order(e))

    loads = [n for n in post_order(src) if isinstance(n, E.BufferLoad) and
             any(reads_axis(i) for i in n.indices)]
    if not loads or any(ld.indices[-1] is not rvar or any(reads_axis(i) for i in
                                                             ld.indices[:-1]) for ld in loads):
        return False
    return not reads_axis(transform_expr(src, lambda n: None,
                                         {id(ld): E.FloatImm(ld.dtype, 0.0) for ld in loads}))


def _trailing_units(shape) -> int:
    """How many of ``shape``'s last dimensions are 1 (not all of them: one is left)."""
    units = 0
    while units < len(shape) - 1 and _const_int(shape[len(shape) - 1 - units]) == 1:
        units += 1
    return units


# A reduction over a flat run of two vectors or more (``_flat_trailing_reduction``: a 7x7
# global pool's 49 contiguous floats) takes vector partial sums along the run even when it is
# short enough (``SMALL_REDUCE``) for the window unrolled across the outputs: that window reads
# each tap as 16 lanes at the run's stride, a scalar load and insert per lane. Only while the
# run's scalar tail is no longer than its count of whole vectors: each tail float is a scalar
# step per output (a max's NaN-tested one about 7 cycles), and a max over 6x6 (two vectors and
# 4) ran 1.77x slower flat. Measured on a Zen 4 (one thread, A/B in one process): ResNet-50's
# 2048-channel 7x7 pool LLVM 0.155 -> 0.013 CPU s, 16.4 -> 7.8 us; MobileNet's 1024-channel
# one 0.157 -> 0.010 s, 8.8 -> 4.1 us; mean over 2048 x 4x8 11.1 -> 5.4 us, 8x8 22.2 -> 6.8;
# max over 1024 x 7x7 8.9 -> 6.1, 4x8 6.2 -> 4.5. A one-axis reduction along the last
# (contiguous) axis is such a run as it is (``_contiguous_last_axis``): ConvNeXt's NHWC layer
# norm over 64 channels at 56x56, LLVM 7.5 -> 0.13 CPU s, 187 -> 75 us.
FLAT_VECTORS = True


# A window along its loads' contiguous last axis (each tap reads its lanes at the row's stride,
# a scalar load and insert per lane) of at least this many taps, across a run-time count of
# outputs, is a loop over the taps around the vector of outputs, accumulating in a register,
# not every tap written out: such kernels take LLVM's loop passes (codegen.build
# .ir_pipeline_level), and from 16 taps on its LoopLoadElimination (the loop access analysis,
# mostly in ScalarEvolution) took seconds over the hundreds of loads. The stage lowering of a
# softmax over rows of 37 with a symbolic row count (tests/schedule/test_softmax_rows_relax.py):
# LLVM 4.4 -> 0.16 CPU s, run (2, 4096, 37) 4.4-5.1 -> 3.1-3.9 ms (Zen 3, one thread, A/B in
# alternating processes). Static kernels (the minimal pipeline, no loop analysis) keep the
# taps written out, and so do windows of whole vectors across their lanes (a sum over NCHW
# channels: a vector load per tap, cheap for LLVM; a loop over them ran slower).
TAP_LOOP_MIN = 16


def _window_point(r, rmin, rext) -> list:
    """The reduction indices of tap ``r`` (a loop variable over the flattened window)."""
    point = []
    stride = 1
    for mn, ext in zip(reversed(rmin), reversed(rext), strict=True):
        k = r if stride == 1 else E.FloorDiv(r, _i(stride))
        if stride * ext != _prod(rext):
            k = E.FloorMod(k, _i(ext))
        point.append(k + _i(mn) if mn else k)
        stride *= ext
    return point[::-1]


def _tap_loop(ctx, extent, lanes: int, dtype: str, taps: int, ident, combine, src, store):
    """``store(j, combine(...combine(ident, src(j, 0))..., src(j, taps - 1)))`` for ``j`` in
    ``[0, extent)``: vectors of ``lanes`` outputs, then a scalar tail, each with a loop over the
    taps that accumulates in a local buffer of its width (a register once LLVM's SROA ran)."""
    accs = [decl_buffer((lanes,), dtype, "wacc"), decl_buffer((1,), dtype, "wacc_t")]

    def one(j, width, lane, vectorized):
        acc = accs[0] if vectorized else accs[1]

        def each(fn):
            if not vectorized:
                return fn(j, lane)
            vi = ctx.fresh("wi", j.dtype)
            return S.For(vi, E.IntImm(j.dtype, 0), E.IntImm(j.dtype, width),
                         S.ForKind.VECTORIZED, fn(j + vi, vi))

        r = ctx.fresh("tap")
        return S.SeqStmt([
            each(lambda jj, ln: S.BufferStore(acc, ident, [ln])),
            S.For(r, _i(0), _i(taps), S.ForKind.SERIAL, each(
                lambda jj, ln: S.BufferStore(acc, combine(E.BufferLoad(acc, [ln]), src(jj, r)),
                                             [ln]))),
            each(lambda jj, ln: store(jj, E.BufferLoad(acc, [ln])))])

    dt = extent.dtype if _const_int(extent) is None else "int32"
    zero = E.IntImm(dt, 0)
    if _const_int(extent) is None:
        nvec = E.FloorDiv(extent, E.IntImm(dt, lanes))
        done = nvec * E.IntImm(dt, lanes)
    else:
        nvec = _const_int(extent) // lanes
        done = nvec * lanes
        nvec, done = E.IntImm(dt, nvec), E.IntImm(dt, done)
    vo, tl = ctx.fresh("vo", dt), ctx.fresh("t", dt)
    body = S.SeqStmt([
        S.For(vo, zero, nvec, S.ForKind.SERIAL,
              one(vo * E.IntImm(dt, lanes), lanes, None, True)),
        S.For(tl, done, extent - done if _const_int(extent) is None else
              E.IntImm(dt, _const_int(extent) - _const_int(done)), S.ForKind.SERIAL,
              one(tl, 1, _i(0), False))])
    for acc in reversed(accs):
        body = S.Allocate(acc.data, dtype, list(acc.shape), True, S.DeclBuffer(acc, body))
    return body


def reduce_nest(ctx, t, buf, body):
    """The loop nest of a reduction stage (see the module docstring for the strategies).

    Output and reduction extents may be symbolic: the loops then run over int64 indices, the
    vectorized partial sums get a run-time tail, and the outer loop goes parallel at run time
    when it has enough work.
    """
    src, ident, combine = _reduce_parts(t, body)
    shape = _shape(t)
    raxes = list(body.axis)
    rext = [_const_int(r.dom.extent) if _const_int(r.dom.extent) is not None else r.dom.extent
            for r in raxes]
    rmin = [_const_int(r.dom.min) if _const_int(r.dom.min) is not None else r.dom.min
            for r in raxes]
    flat = _flat_trailing_reduction(ctx, src, raxes, rmin, rext)
    if flat is not None:  # (a global pool over 7x7: one reduction over 49 contiguous floats)
        src, raxes, rmin, rext = flat
    contiguous = flat is not None or _contiguous_last_axis(src, raxes)
    static = _is_static(shape) and _is_static(rext)
    rtotal = _prod(rext) if _is_static(rext) else None
    lanes = _lanes(t.dtype)
    if static:
        parallel = _prod(shape) * rtotal >= PARALLEL_MIN_WORK
    else:
        parallel = True
    if not shape:
        shape = (1,)
        out_axes = []
    else:
        out_axes = list(t.op.axis)
    rdt = _index_dtype([*rext, *rmin]) if not _is_static([*rext, *rmin]) else "int32"

    def c(v, dt=rdt):
        return E.IntImm(dt, v) if isinstance(v, int) else v

    def src_at(idx, rvals):
        e = _sub_axes(src, out_axes, idx)
        return _sub_axes(e, raxes, rvals)

    def store_idx(idx):
        return idx if out_axes else _scalar_idx(buf)

    # trailing unit output axes (a reduction keeping its dims: argmax's max over classes,
    # [n, anchors, 1]) leave the vectors to the innermost axis before them
    units = _trailing_units(shape)
    vshape = shape[:len(shape) - units] if out_axes else shape
    if rtotal is not None and rtotal <= SMALL_REDUCE and out_axes and vshape and \
            (_const_int(vshape[-1]) is None or vshape[-1] >= 8) and _is_static(rmin) and \
            not (FLAT_VECTORS and contiguous and rtotal >= 2 * lanes
                 and rtotal % lanes <= rtotal // lanes):
        # unrolled window, vectorized across the innermost (non-unit) output axis
        points = [[]]
        for mn, ext in zip(rmin, rext):
            points = [p + [_i(mn + k)] for p in points for k in range(ext)]

        def store(outer):
            if contiguous and rtotal >= TAP_LOOP_MIN and _const_int(vshape[-1]) is None:
                return _tap_loop(ctx, vshape[-1], lanes, t.dtype, rtotal, ident, combine,
                                 lambda j, r: src_at(outer + [j] + [_i(0)] * units,
                                                     _window_point(r, rmin, rext)),
                                 lambda j, v: S.BufferStore(buf, v, outer + [j] +
                                                            [_i(0)] * units))

            def at(j):
                idx = outer + [j] + [_i(0)] * units
                stmts = [S.BufferStore(buf, ident, idx)]
                for p in points:
                    stmts.append(S.BufferStore(buf, combine(E.BufferLoad(buf, idx),
                                                            src_at(idx, p)), idx))
                return S.SeqStmt(stmts)

            return _vector_inner(ctx, vshape[-1], lanes, at)

        return _outer_loops(ctx, list(vshape[:-1]), parallel, store,
                            rtotal * _static_part(vshape[-1:]))

    def per_output(idx):
        sidx = store_idx(idx)
        cur = E.BufferLoad(buf, sidx)
        last = rext[-1]
        rvars = [ctx.fresh("r", rdt) for _ in raxes]

        def loops(inner_body, upto):
            s = inner_body
            for k in range(upto - 1, -1, -1):
                s = S.For(rvars[k], c(rmin[k]), c(rext[k]), S.ForKind.SERIAL, s)
            return s

        init = S.BufferStore(buf, ident, sidx)
        # a short innermost axis still gets vector partial sums when outer reduction axes
        # repeat it (a global mean over 16x16: 16 vector adds instead of a 256-add chain)
        if _const_int(last) is not None and (last < lanes or (last < 2 * lanes
                                                                and len(raxes) == 1)):
            upd = S.BufferStore(buf, combine(cur, src_at(idx, rvars)), sidx)
            return S.SeqStmt([init, loops(upd, len(raxes))])
        nvec = last // lanes if isinstance(last, int) else E.FloorDiv(last, c(lanes))
        # independent accumulators: one chain's latency (a float max with its NaN test, about
        # 7 cycles on Zen 4; an add, 3) would otherwise bound the loop, not the loads
        nacc = REDUCE_ACCUMULATORS if not isinstance(nvec, int) or \
            nvec >= 2 * REDUCE_ACCUMULATORS else 1
        width = nacc * lanes
        acc = decl_buffer((width,), t.dtype, "acc")
        vi = ctx.fresh("vi")
        acc_init = S.For(vi, 0, width, S.ForKind.VECTORIZED, S.BufferStore(acc, ident, [vi]))

        def update(j, lane):
            rv = [*rvars[:-1], c(rmin[-1]) + j]
            return S.BufferStore(acc, combine(E.BufferLoad(acc, [lane]), src_at(idx, rv)),
                                 [lane])

        passes = vector_blocks(ctx, nvec, lanes, nacc, update, rdt)
        vec_loop = loops(S.SeqStmt(passes) if len(passes) > 1 else passes[0], len(raxes) - 1)
        hsum = S.BufferStore(buf, combine(cur, E.BufferLoad(acc, [c(0)])), sidx)
        parts = [acc_init, vec_loop, *fold_lanes(ctx, acc, width, combine, rdt), init, hsum]
        tail = last - nvec * lanes if isinstance(last, int) else last - nvec * c(lanes)
        if not isinstance(tail, int) or tail:
            tv = ctx.fresh("tr", rdt)
            rt = [*rvars[:-1], tv]
            upd = S.BufferStore(buf, combine(cur, src_at(idx, rt)), sidx)
            start = rmin[-1] + nvec * lanes if isinstance(nvec, int) and \
                isinstance(rmin[-1], int) else c(rmin[-1]) + c(nvec) * c(lanes)
            parts.append(loops(S.For(tv, c(start), c(tail), S.ForKind.SERIAL, upd),
                               len(raxes) - 1))
        body_s = S.SeqStmt(parts)
        return S.Allocate(acc.data, t.dtype, [width], True, S.DeclBuffer(acc, body_s))

    work = _static_part(rext) if rtotal is None else rtotal
    return _outer_loops(ctx, list(shape if out_axes else ()), parallel, per_output, work)
