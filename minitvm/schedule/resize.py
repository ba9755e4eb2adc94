"""Schedule of resize stages (tag ``resize``: ``image.resize1d/2d/3d``, ``nn.upsampling(3d)``)
whose innermost axis is resized (NCW, NCHW, NCDHW).

The generic injective lowering computes every output element's coordinates and gathers its
taps one lane at a time (nearest 2x of 64x64x64: 0.45 ms, ONNX Runtime 0.09 ms). Here the
resize is separable: the innermost axis's taps (index and weight per output column, from the
stage's ``ResizeSpec``, so the same integer arithmetic as its compute) go to tables once per
call; per output row (parallel over rows), the outer axes' taps combine their input rows into a
row temporary with unit-stride vectors (nearest-neighbour and integer-coordinate rows read the
input row itself), and the columns are produced from that row:

- at an exact 2x along the row (nearest or linear, asymmetric / half-pixel coordinates), the
  interior columns come in pairs ``2k, 2k + 1`` that read the row at ``k + d`` with constant
  weights: both are vectors over ``k`` from unit-stride loads, stored interleaved as one 64-bit
  vector per pair (the pair's two floats packed into one ``uint64``); the few edge columns read
  the tables;
- otherwise each output vector gathers its taps through the tables.

A fused elementwise epilogue (``Rule.epilogue``: ``add(resize(x), y)``) is applied in the store
(``common.emit_with_epilogue``).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import substitute, transform_expr
from ..topi.image_resize import RESIZE_TAG
from .common import PARALLEL_MIN_WORK, allocated, const_int, emit_with_epilogue, imm
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner

PAIR_LANES = 8  # column pairs per vector of the 2x form (16 output floats)
MIN_PAIRS = 8  # interior pairs a row needs for the 2x form


def _static_shape(t) -> list[int] | None:
    dims = [const_int(d) for d in t.shape]
    return None if any(d is None for d in dims) else dims


def supported(t, options=None) -> bool:
    """Is ``t`` a static float resize stage that resizes its innermost axis?"""
    if not isinstance(t.op, ComputeOp) or t.op.tag != RESIZE_TAG:
        return False
    spec = t.op.attrs.get("resize")
    (x,) = t.op.attrs["operands"]
    shape, xshape = _static_shape(t), _static_shape(x)
    if spec is None or shape is None or xshape is None or len(shape) != len(xshape):
        return False
    if t.dtype not in ("float32", "float64") or x.dtype != t.dtype:
        return False
    if len(shape) - 1 not in spec.axes:
        return False
    return all(m.mode != "tf_crop_and_resize" for m in spec.maps)


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing resize stage ``t`` (and its fused epilogue) into ``out``."""
    x = ctx.buf[id(t.op.attrs["operands"][0])]
    return emit_with_epilogue(ctx, t, out, bodies, lambda buf, epi: _emit(ctx, t, buf, x, epi),
                              _static_shape(t))


# ---------------------------------------------------------------------------------- the 2x form
def _py_taps(spec, k: int, o: int) -> list[tuple[int, np.float32 | None]]:
    """``spec.taps(k, o)`` evaluated in Python (nearest / linear on a rational map), with the
    weights rounded as the generated float32 code computes them."""
    m = spec.maps[k]
    a, b, q = m.rational
    fl, rem = divmod(a * o + b, q)

    def clamp(i):
        return min(max(i, 0), m.n_in - 1)

    if spec.method == "nearest_neighbor":
        rounding = spec.rounding or ("round" if m.mode == "align_corners" else "floor")
        up = {"floor": False, "ceil": rem > 0, "round_prefer_floor": 2 * rem > q,
              "round_prefer_ceil": 2 * rem >= q,
              "round": 2 * rem > q or (2 * rem == q and fl % 2 == 1)}[rounding]
        return [(clamp(fl + int(up)), None)]
    if q == 1:
        return [(clamp(fl), None)]
    w1 = np.float32(rem) / np.float32(q)
    return [(clamp(fl), np.float32(1.0) - w1), (clamp(fl + 1), w1)]


def _pair_form(spec, k: int):
    """``(phases, lo, hi)`` when output columns ``2j + r`` (``lo <= j < hi``) read the input
    at ``j + d`` with weights that depend on ``r`` only (``phases[r]``: ``[(d, w), ...]``),
    else None."""
    m = spec.maps[k]
    if spec.method not in ("nearest_neighbor", "linear") or m.rational is None or \
            m.n_out != 2 * m.n_in or spec.comp != "float32":
        return None
    n = m.n_in
    mid = n // 2
    phases = [[(i - mid, w) for i, w in _py_taps(spec, k, 2 * mid + r)] for r in (0, 1)]

    def fits(j):
        return all(_py_taps(spec, k, 2 * j + r) == [(j + d, w) for d, w in phases[r]]
                   for r in (0, 1))

    if not fits(mid):
        return None
    lo, hi = mid, mid + 1
    while lo > 0 and fits(lo - 1):
        lo -= 1
    while hi < n and fits(hi):
        hi += 1
    return (phases, lo, hi) if hi - lo >= MIN_PAIRS else None


def _pack(lo_val, hi_val):
    """Two float32 vectors as one uint64 vector: ``lo_val`` in the low halves."""
    u64 = "uint64"
    lo = E.Cast(u64, tir_op.reinterpret("uint32", lo_val))
    hi = E.Cast(u64, tir_op.reinterpret("uint32", hi_val))
    return tir_op.bitwise_or(lo, tir_op.shift_left(hi, E.IntImm(u64, 32)))


# ---------------------------------------------------------------------------------- the kernel
def _emit(ctx, t, out, x, epi) -> S.Stmt:
    spec = t.op.attrs["resize"]
    shape, xshape = _static_shape(t), _static_shape(x)
    nd = len(shape)
    ow, iw = shape[-1], xshape[-1]
    kx = spec.axes.index(nd - 1)
    comp, dt = spec.comp, t.dtype
    lanes = _lanes(dt)
    outer = [(spec.axes.index(a), a) for a in range(nd - 1) if a in spec.axes]

    def finish(v):
        return v if v.dtype == dt else E.Cast(dt, v)

    def apply(idx, v):  # the epilogue at output position idx, the resize's value v
        v = finish(v)
        if epi is None:
            return v
        body, axes = epi
        e = substitute(body, dict(zip(axes, idx)))
        return transform_expr(e, lambda n: v if isinstance(n, E.BufferLoad) and
                              n.buffer is out else None)

    # per-column tables: the input column and weight of each tap
    xv = ctx.fresh("x")
    xtaps = spec.taps(kx, xv)
    tables, fills = [], []
    for j, (ix, w) in enumerate(xtaps):
        ib = decl_buffer((ow,), "int32", f"resize_ix{j}")
        wb = decl_buffer((ow,), comp, f"resize_wx{j}") if w is not None else None
        tables.append((ib, wb))
        fills.append(S.BufferStore(ib, ix if ix.dtype == "int32" else E.Cast("int32", ix),
                                   [xv]))
        if wb is not None:
            fills.append(S.BufferStore(wb, w, [xv]))
    fill = S.For(xv, 0, ow, S.ForKind.SERIAL, S.SeqStmt(fills) if len(fills) > 1 else fills[0])
    pairs = _pair_form(spec, kx) if dt == "float32" and const_int(out.elem_offset) is not None \
        and const_int(out.elem_offset) % 2 == 0 else None
    view = None
    if pairs is not None:
        total = int(np.prod(shape))
        view = decl_buffer((total // 2,), "uint64", out.name + "_pairs", data=out.data,
                           elem_offset=const_int(out.elem_offset) // 2)

    def row(idx):
        # the outer axes' taps: the input rows this output row combines, with their weights
        per_axis = [spec.taps(k, idx[a]) for k, a in outer]
        combos = []
        for combo in itertools.product(*per_axis):
            src, w = list(idx), None
            for (_, a), (i, wt) in zip(outer, combo):
                src[a] = i
                if wt is not None:
                    w = wt if w is None else w * wt
            combos.append((src, w))
        parts, vrow = [], None
        if len(combos) == 1 and combos[0][1] is None:
            src_idx = combos[0][0]

            def load(c):
                return E.BufferLoad(x, [*src_idx, c])
        else:
            vrow = decl_buffer((iw,), comp, "resize_row")

            def vsum(c):
                v = None
                for src, w in combos:
                    e = E.BufferLoad(x, [*src, c])
                    e = e if e.dtype == comp else E.Cast(comp, e)
                    e = e if w is None else e * w
                    v = e if v is None else v + e
                return v

            parts.append(_vector_inner(ctx, iw, lanes, lambda c: S.BufferStore(
                vrow, vsum(c), [c])))

            def load(c):
                return E.BufferLoad(vrow, [c])

        def gathered(c):
            v = None
            for ib, wb in tables:
                e = load(E.BufferLoad(ib, [c]))
                e = e if e.dtype == comp else E.Cast(comp, e)
                e = e if wb is None else e * E.BufferLoad(wb, [c])
                v = e if v is None else v + e
            return v

        def put(c):
            pos = [*idx, c]
            return S.BufferStore(out, apply(pos, gathered(c)), pos)

        if pairs is None:
            parts.append(_vector_inner(ctx, ow, lanes, put))
        else:
            phases, lo, hi = pairs
            flat = imm(0)
            for i, d in zip(idx, shape[:-1]):
                flat = flat * imm(d) + i

            def phase(r, k):
                v = None
                for d, w in phases[r]:
                    e = load(k + imm(d))
                    e = e if w is None else e * E.FloatImm(comp, float(w))
                    v = e if v is None else v + e
                return apply([*idx, k * imm(2) + imm(r)], v)

            def pair(k):
                return S.BufferStore(view, _pack(phase(0, k), phase(1, k)),
                                     [flat * imm(ow // 2) + k])

            if lo:
                parts.append(_scalar_cols(ctx, 0, 2 * lo, put))
            kv, ki = ctx.fresh("k"), ctx.fresh("ki")
            nvec = (hi - lo) // PAIR_LANES
            parts.append(S.For(kv, 0, nvec, S.ForKind.SERIAL, S.For(
                ki, 0, PAIR_LANES, S.ForKind.VECTORIZED,
                pair(kv * imm(PAIR_LANES) + ki + imm(lo)))))
            if (hi - lo) % PAIR_LANES:  # the last vector overlaps the one before it
                ki = ctx.fresh("ki")
                parts.append(S.For(ki, 0, PAIR_LANES, S.ForKind.VECTORIZED,
                                   pair(ki + imm(hi - PAIR_LANES))))
            if 2 * hi < ow:
                parts.append(_scalar_cols(ctx, 2 * hi, ow - 2 * hi, put))
        body = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
        return allocated(vrow, body) if vrow is not None else body

    work = int(np.prod(shape)) * len(xtaps)
    loops = _outer_loops(ctx, shape[:-1], work >= PARALLEL_MIN_WORK, row, ow)
    body = S.SeqStmt([fill, loops])
    if view is not None:
        body = S.DeclBuffer(view, body)
    for ib, wb in reversed(tables):
        body = allocated(ib, body)
        if wb is not None:
            body = allocated(wb, body)
    return body


def _scalar_cols(ctx, first: int, n: int, put) -> S.Stmt:
    """``put(c)`` for the columns ``[first, first + n)``, one at a time."""
    c = ctx.fresh("c")
    return S.For(c, first, n, S.ForKind.SERIAL, put(c))
