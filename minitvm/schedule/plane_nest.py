"""Elementwise stages over small planes, looped as whole planes of contiguous vectors.

An injective stage of a static shape is looped with its last axis innermost, in vectors of 16
lanes plus a scalar tail. Where that axis is short (an 8 x 8 feature map), the whole row is the
tail: the requantizing epilogue of a quantized conv (``round``, ``clip``, a cast to uint8 per
element) ran one element at a time, three times slower than the conv it follows (ResNet-18's
1x1 downsample at 8 x 8, quantized QDQ u8: 14 us in Relax against 4 us for Relay's build, which
leaves the uint8 cast to a kernel of its own).

The trailing axes merge into one loop where every load reads either at the stored element's
own position (an operand of the stage's shape: the conv's output, the residual) or an element
that none of the merged axes moves (a per-channel bias, a scale): the own-position loads read a
flat view at the flat offset, and the others read what they read for the row.
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


def _axis_positions(load, pos: dict) -> set:
    """The positions of the stage's axes that ``load``'s indices use."""
    return {pos[id(x)] for i in load.indices for x in post_order(i)
            if isinstance(x, E.Var) and id(x) in pos}


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
    own, start = {}, 1  # (the first merged axis: one outer axis at least stays a loop)
    for e in post_order(body):
        if not isinstance(e, E.BufferLoad) or id(e) in own:
            continue
        used = _axis_positions(e, pos)
        if not used:
            continue
        if not e.buffer.strides and same_dims(e.buffer.shape, buf.shape) and \
                at_own_position(e.indices, axes, shape):
            own[id(e)] = e
        else:
            start = max(start, max(used) + 1)
    if len(shape) - start < 2:
        return None
    plane = 1
    for d in shape[start:]:
        plane *= d
    if plane < lanes:
        return None
    lead = shape[:start]
    rows = 1
    for d in lead:
        rows *= d
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
