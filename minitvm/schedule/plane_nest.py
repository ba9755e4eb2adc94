"""Elementwise stages over small planes, looped as whole planes of contiguous vectors.

An injective stage of a static shape is looped with its last axis innermost, in vectors of 16
lanes plus a scalar tail. Where that axis is short (an 8 x 8 feature map), the whole row is the
tail: the requantizing epilogue of a quantized conv (``round``, ``clip``, a cast to uint8 per
element) ran one element at a time, three times slower than the conv it follows (ResNet-18's
1x1 downsample at 8 x 8, quantized QDQ u8: 14 us in Relax against 4 us for Relay's build, which
leaves the uint8 cast to a kernel of its own).

The trailing axes merge into one loop where every load reads either at the stored element's
own position (an operand of the stage's shape: the conv's output, the residual), at a fixed
shift of it in flat memory (a part of a larger tensor whose trailing dims the merged axes walk
as the output's do: the halves of a ``split`` / ``chunk`` along the channels, as in a gated
activation ``tanh(a) * sigmoid(b)``) or an element that none of the merged axes moves (a
per-channel bias, a scale): the first two read a flat view at the flat offset (plus the shift),
the others read what they read for the row. PixelCNN's gate over 1x96x28x28 split in two went
as rows of 28 (one vector and a 12-element scalar tail of tanh and sigmoid): 195 -> 37 us.

A large stage keeps enough rows for its parallel loop: the merge stops at the first axis that
leaves ``PARALLEL_ROWS`` rows (a 1 x 256 x 56 x 56 stage loops its 256 planes, not one serial
run of 802,816 elements).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import post_order, substitute, transform_expr
from .common import (
    PARALLEL_MIN_WORK,
    at_own_position,
    const_int,
    imm,
    same_dims,
    unravel,
    vector_inner,
)
from .raise_patterns import affine

# rows a large stage keeps for its parallel loop (the merge stops at an axis leaving this many)
PARALLEL_ROWS = 16


def _axis_positions(load, pos: dict) -> set:
    """The positions of the stage's axes that ``load``'s indices use."""
    return {pos[id(x)] for i in load.indices for x in post_order(i)
            if isinstance(x, E.Var) and id(x) in pos}


def _row_major(dims: list[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= d
    return strides[::-1]


def _flat_shift(load, axes: list, start: int, out_strides: list[int]) -> E.PrimExpr | None:
    """The flat offset of ``load`` less the stored element's offset within the plane of axes
    ``axes[start:]`` (an expression of the outer axes), when the load walks those axes through
    its buffer's flat memory exactly as the store does (each merged axis moves both by the
    output's stride); else None."""
    dims = [const_int(d) for d in load.buffer.shape]
    if load.buffer.strides or None in dims or len(dims) != len(load.indices):
        return None
    merged = {id(a): k for k, a in enumerate(axes) if k >= start}
    coef = dict.fromkeys(range(start, len(axes)), 0)
    shift, terms = 0, []
    for idx, stride in zip(load.indices, _row_major(dims), strict=True):
        if not any(isinstance(x, E.Var) and id(x) in merged for x in post_order(idx)):
            c = const_int(idx)
            if c is not None:
                shift += c * stride
            else:
                terms.append(idx if idx.dtype == "int32" else E.Cast("int32", idx))
                terms[-1] = terms[-1] * imm(stride) if stride != 1 else terms[-1]
            continue
        aff = affine(idx)
        if aff is None:
            return None
        parts, const = aff
        shift += const * stride
        for var, c in parts.values():
            if id(var) in merged:
                coef[merged[id(var)]] += c * stride
            elif var.dtype != "int32":
                return None
            else:
                terms.append(var * imm(c * stride) if c * stride != 1 else var)
    if any(coef[k] != out_strides[k] for k in coef):
        return None
    expr = imm(shift) if shift or not terms else None
    for term in terms:
        expr = term if expr is None else expr + term
    return expr


def merged_plane_nest(ctx, t, buf, body, lanes: int) -> S.Stmt | None:
    """Stage ``t`` (static shape, inlined ``body``) stored into ``buf`` with its trailing axes
    merged into one vectorized loop, when its last axis is not a whole number of vectors and at
    least two trailing axes can merge (see the module's note); else None."""
    shape = [const_int(d) for d in buf.shape]
    axes = [iv.var for iv in t.op.axis]
    if len(shape) < 2 or None in shape or len(axes) != len(shape) or buf.strides or \
            shape[-1] % lanes == 0:
        return None
    pos = {id(v): k for k, v in enumerate(axes)}
    own, others = {}, {}
    for e in post_order(body):
        if not isinstance(e, E.BufferLoad) or id(e) in own or id(e) in others:
            continue
        used = _axis_positions(e, pos)
        if not used:
            continue
        if not e.buffer.strides and same_dims(e.buffer.shape, buf.shape) and \
                at_own_position(e.indices, axes, shape):
            own[id(e)] = e
        else:
            others[id(e)] = (e, max(used))
    out_strides = _row_major(shape)
    # (a stage that picks its operand by position, a concatenate, is cut into pieces instead:
    # split_planes; merged, every element would test which piece it is in)
    shifted_ok = not _tests_position(body, pos)
    candidates = []  # (first merged axis, {load: its flat shift}) in order of first axis
    for start in range(1, len(shape) - 1):  # (one outer axis at least stays a loop)
        shifts = {}
        for key, (e, last_used) in others.items():
            if last_used < start:
                continue  # (the merged axes do not move it)
            shift = _flat_shift(e, axes, start, out_strides) if shifted_ok else None
            if shift is None:
                break
            shifts[key] = shift
        else:
            if _prod(shape[start:]) >= lanes:
                candidates.append((start, shifts))
    if _prod(shape) >= PARALLEL_MIN_WORK:  # (keep rows for the parallel loop: the first
        # start leaving PARALLEL_ROWS, else the one leaving the most)
        def few_rows(c):
            rows = _prod(shape[:c[0]])
            return (True, -rows) if rows < PARALLEL_ROWS else (False, c[0])

        candidates.sort(key=few_rows)
    for start, shifts in candidates:
        nest = _plane_nest(ctx, t, buf, body, own, shifts, start, lanes)
        if nest is not None:
            return nest
    return None


def _tests_position(body, pos: dict) -> bool:
    """Does ``body`` choose between values by a condition on the stage's axes?"""
    for e in post_order(body):
        cond = e.args[0] if isinstance(e, E.Call) and e.op_name == "tir.if_then_else" else \
            e.condition if isinstance(e, E.Select) else None
        if cond is not None and any(isinstance(x, E.Var) and id(x) in pos
                                    for x in post_order(cond)):
            return True
    return False


def _plane_nest(ctx, t, buf, body, own: dict, shifts: dict, start: int,
                lanes: int) -> S.Stmt | None:
    """The nest of rows over axes before ``start`` and one vector loop over the rest, or None
    when the body reads a merged axis as a value."""
    shape = [const_int(d) for d in buf.shape]
    axes = [iv.var for iv in t.op.axis]
    plane, lead = _prod(shape[start:]), shape[:start]
    rows = _prod(lead)
    out = ctx.flat_view(buf)
    v = ctx.fresh("o")

    vals = {a: i if i.dtype == a.dtype else E.Cast(a.dtype, i)
            for a, i in zip(axes[:start], unravel(v, lead))}
    suffix = {id(x) for x in axes[start:]}

    def at(j):
        f = v * plane + j

        def fpost(e):
            if isinstance(e, E.BufferLoad) and id(e) in own:
                return E.BufferLoad(ctx.flat_view(e.buffer), [f])
            if isinstance(e, E.BufferLoad) and id(e) in shifts:
                return E.BufferLoad(ctx.flat_view(e.buffer), [shifts[id(e)] + j])
            return None

        value = substitute(transform_expr(body, fpost), vals)
        if any(isinstance(x, E.Var) and id(x) in suffix for x in post_order(value)):
            return None
        return S.BufferStore(out, value, [f])

    probe = at(imm(0))
    if probe is None:  # (a merged axis read as a value, not through an own-position load)
        return None
    kind = S.ForKind.PARALLEL if rows > 1 and rows * plane >= PARALLEL_MIN_WORK else \
        S.ForKind.SERIAL
    return S.For(v, 0, rows, kind, vector_inner(ctx, plane, lanes, at))


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n
