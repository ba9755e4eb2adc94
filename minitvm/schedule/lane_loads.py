"""Vector loads that gather lane by lane but read consecutive elements, made contiguous loads.

Composed reshapes and transposes reach the injective schedule with indices such as
``x[(o * 128 + v) // 384, (o * 128 + v) % 384]`` (``v`` the vectorized lane): the analyzer
cannot drop the divisions (it would need bounds on the other terms), so every lane divided and
the load was a gather. The head split / merge of attention and the q/k/v split of
``nn.MultiheadAttention`` (28 us for a 147 KB copy) were all of this kind.

With static loop extents, whether such a load reads consecutive elements across its lane is
decided exactly: its row-major offset is evaluated (numpy) at every point of the loop variables
its indices use, at most ``MAX_POINTS`` of them. When ``offset(v) - offset(v_min) == v - v_min``
holds at every point, the load becomes ``x_flat[offset(v_min) + (v - v_min)]``: a contiguous
vector load. Every other loop var that steps the offset by a constant is taken out the same way,
so the divisions left depend on the outer loops only and are computed once per row.

A transpose behind reshapes (BERT's K head split ``[S, H*D] -> [H, D, S]``) divides the same
way, but its lanes read a row apart: when they step the offset by a constant, the load becomes
``x_flat[offset(v_min) + stride * (v - v_min)]`` (still a gather, without per-lane division),
and ``strided_copy_axis`` names the output axis that reads the input contiguously, for
``lower.transpose_nest`` to tile (its indices hid it from ``lower.transposed_axis``): at
S=128, 12 x 64 the split went from 100 to 23 us (ONNX Runtime's Transpose: 37).
"""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import post_order, substitute, transform_expr, transform_stmt, walk_stmts

MAX_POINTS = 1 << 21  # loop points evaluated per load (compile time stays in milliseconds)

_BINARY = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.FloorDiv: np.floor_divide,
           E.FloorMod: np.mod, E.Min: np.minimum, E.Max: np.maximum}


def _domains(stmt) -> tuple[dict, set]:
    """``{id(loop var): (var, lo, hi)}`` over the loops of static extent under ``stmt`` (a var
    bound by several loops gets the union of their ranges) and the ids of vectorized loop vars;
    a var bound by a loop of symbolic bounds is left out."""
    doms: dict[int, tuple] = {}
    symbolic: set[int] = set()
    vectorized: set[int] = set()
    for s in walk_stmts(stmt):
        if not isinstance(s, S.For):
            continue
        v = s.loop_var
        if s.kind == S.ForKind.VECTORIZED:
            vectorized.add(id(v))
        if not (isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm)):
            symbolic.add(id(v))
            continue
        lo, hi = s.min.value, s.min.value + s.extent.value
        if id(v) in doms:
            _, lo0, hi0 = doms[id(v)]
            lo, hi = min(lo, lo0), max(hi, hi0)
        doms[id(v)] = (v, lo, hi)
    for k in symbolic:
        doms.pop(k, None)
    return doms, vectorized


def evaluate(expr, values: dict):
    """The integer ``expr`` at every point of ``values`` (``{id(var): numpy array}``, arrays that
    broadcast together), or None when it uses anything else than those vars, integer constants,
    ``+ - *``, floor division / modulo, min, max and integer casts."""
    memo: dict[int, object] = {}
    for e in post_order(expr):
        if isinstance(e, E.IntImm):
            memo[id(e)] = np.int64(e.value)
        elif isinstance(e, E.Var):
            if id(e) not in values:
                return None
            memo[id(e)] = values[id(e)]
        elif isinstance(e, E.Cast) and e.dtype.startswith("int") and \
                e.value.dtype.startswith("int"):
            memo[id(e)] = memo[id(e.value)]
        elif type(e) in _BINARY and e.dtype.startswith("int"):
            a, b = memo[id(e.a)], memo[id(e.b)]
            if type(e) in (E.FloorDiv, E.FloorMod) and np.any(b == 0):
                return None
            memo[id(e)] = _BINARY[type(e)](a, b)
        else:
            return None
    return memo[id(expr)]


def _row_major(buf, indices):
    """``buf[indices]``'s offset from its first element as an int64 expression."""
    off = None
    for d, i in zip(buf.shape, indices, strict=True):
        i = i if i.dtype == "int64" else E.Cast("int64", i)
        d = d if isinstance(d, int) else (d.value if isinstance(d, E.IntImm) else None)
        if d is None:
            return None
        off = i if off is None else off * E.IntImm("int64", d) + i
    return off


def _divides_lane(load, v) -> bool:
    """Is lane var ``v`` under a division, modulo, min or max in one of ``load``'s indices
    (computed lane by lane)?"""
    return any(isinstance(x, (E.FloorDiv, E.FloorMod, E.Min, E.Max)) and
               any(y is v for y in post_order(x)) for i in load.indices for x in post_order(i))


def _gathers(load, v) -> bool:
    """Does ``load`` use lane var ``v`` other than as ``... + v`` in its last index (the case
    the code generator already reads as a contiguous vector)?"""
    *lead, last = load.indices
    if any(x is v for i in lead for x in post_order(i)):
        return True
    return _divides_lane(load, v)


def _strides(load, v, doms: dict) -> dict | None:
    """``{id(var): stride}`` for each loop var whose step moves ``load``'s row-major offset by
    a constant at every point of its loops, when lane ``v`` is among them with a nonzero
    stride; else None (``v``'s lanes are not evenly spaced, or the offset cannot be
    evaluated)."""
    used = {id(x): x for i in load.indices for x in post_order(i) if isinstance(x, E.Var)}
    if any(k not in doms for k in used):
        return None
    order = list(used)
    extents = [doms[k][2] - doms[k][1] for k in order]
    if int(np.prod(extents, dtype=np.int64)) > MAX_POINTS:
        return None
    values = {}
    for axis, k in enumerate(order):
        shape = [1] * len(order)
        shape[axis] = extents[axis]
        values[k] = np.arange(doms[k][1], doms[k][2], dtype=np.int64).reshape(shape)
    off = _row_major(load.buffer, load.indices)
    got = evaluate(off, values) if off is not None else None
    if got is None:
        return None
    got = np.broadcast_to(got, extents)
    out = {}
    for axis, k in enumerate(order):
        step = np.diff(got, axis=axis)
        if step.size == 0:
            continue
        c = int(step.flat[0])
        if np.all(step == c):
            out[k] = c
    return out if out.get(id(v), 0) != 0 else None


def _rewritable(load, v, doms: dict) -> dict | None:
    """``load``'s strides (``_strides``) when it is worth reading through a flat view: its
    lanes read consecutive elements but the code generator would gather them, or they read
    evenly spaced elements through a per-lane division (a transpose behind a reshape: the lanes
    still gather, without dividing). Else None."""
    if not _gathers(load, v):
        return None
    strides = _strides(load, v, doms)
    if strides is None or (strides[id(v)] != 1 and not _divides_lane(load, v)):
        return None
    return strides


def contiguous_lane_loads(ctx, stmt):
    """``stmt`` with every gathering load that reads consecutive elements across its vectorized
    lane read through ``ctx.flat_view`` as one contiguous vector, and every load whose lanes
    divide to read evenly spaced elements read at ``base + stride * lane`` (``stmt`` itself
    when none)."""
    doms, vectorized = _domains(stmt)
    if not vectorized:
        return stmt
    changed = []

    def fexpr(root):
        def fpost(e):
            if not isinstance(e, E.BufferLoad) or e.buffer.strides:
                return None
            lanes = {id(x) for i in e.indices for x in post_order(i)
                     if isinstance(x, E.Var) and id(x) in vectorized}
            if len(lanes) != 1:
                return None
            v = doms[next(iter(lanes))][0] if next(iter(lanes)) in doms else None
            strides = _rewritable(e, v, doms) if v is not None else None
            if strides is None:
                return None
            # the vars the offset steps by a constant leave the divisions: only the others are
            # divided, once per value (loop-invariant code for the inner loops)
            offset = substitute(_row_major(e.buffer, e.indices),
                                {doms[k][0]: E.IntImm(doms[k][0].dtype, doms[k][1])
                                 for k in strides})
            for k, c in strides.items():
                x, lo = doms[k][0], doms[k][1]
                x = x if x.dtype == "int64" else E.Cast("int64", x)
                step = x if lo == 0 else x - E.IntImm("int64", lo)
                offset = offset + (step if c == 1 else step * E.IntImm("int64", c))
            changed.append(e)
            return E.BufferLoad(ctx.flat_view(e.buffer), [offset])

        return transform_expr(root, fpost)

    new = transform_stmt(stmt, fexpr)
    return new if changed else stmt


def copy_strides(t, body, shape) -> list | None:
    """The constant steps of ``body``'s row-major input offset along each output axis of stage
    ``t`` (static ``shape``), when ``body`` is one load that gathers across the innermost axis
    (a transpose, seen through reshapes: ``x[(s * 768 + h * 64 + d) // 768, ...]``) and every
    axis steps it by a constant at every output point; else None (a row-contiguous copy, a
    data-dependent offset, not a plain load, or over ``MAX_POINTS`` points)."""
    if not isinstance(body, E.BufferLoad) or body.buffer.strides or \
            not _gathers(body, t.op.axis[-1].var):
        return None
    if int(np.prod(shape, dtype=np.int64)) > MAX_POINTS or any(d < 1 for d in shape):
        return None
    off = _row_major(body.buffer, body.indices)
    n = len(shape)
    values = {}
    for k, iv in enumerate(t.op.axis):
        at = [1] * n
        at[k] = shape[k]
        values[id(iv.var)] = np.arange(shape[k], dtype=np.int64).reshape(at)
    got = evaluate(off, values) if off is not None else None
    if got is None:
        return None
    got = np.broadcast_to(got, shape)
    strides = []
    for k in range(n):
        step = np.diff(got, axis=k)
        c = int(step.flat[0]) if step.size else 0
        if not np.all(step == c):
            return None
        strides.append(c)
    return strides


def strided_copy_axis(t, body, shape) -> int | None:
    """The output axis (not the innermost) that reads the input contiguously, when stage ``t``
    copies with a stride along its innermost axis (``copy_strides``), or None: the transposed
    axis ``lower.transpose_nest`` tiles, found where the index expressions hide it."""
    strides = copy_strides(t, body, shape)
    if strides is None or strides[-1] in (0, 1):
        return None
    cands = [k for k in range(len(shape) - 1) if strides[k] == 1 and shape[k] != 1]
    return cands[-1] if cands else None
