"""TVM's ``topi`` data-movement and creation functions on te tensors with possibly symbolic
shapes: transpose, reshape, expand_dims, squeeze, concatenate, split, strided_slice, take,
repeat, where, full, arange, trilu, pad.

Stages are named as TVM's (``T_transpose``, ``T_reshape``, ``T_concat``...) over axes
``ax0, ax1``...; index arithmetic is simplified with the symbolic Analyzer, the loop ranges
known, so a reshape of ``(n, 128)`` to ``(n * 128,)`` reads ``x[i // 128, i % 128]``.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names, broadcast_load, const_like, is_one
from .utils import pick_piece

__all__ = [
    "transpose", "reshape", "expand_dims", "squeeze", "concatenate", "split",
    "strided_slice", "take", "repeat", "where", "full", "arange", "trilu", "pad",
    "flatten_index", "unravel_index",
]


def _i64(v) -> E.PrimExpr:
    return E._to_expr(v, "int64") if not isinstance(v, E.PrimExpr) else v


def _simplifier(axes, shape):
    """An Analyzer knowing ``0 <= axes[k] < shape[k]``."""
    from ..arith import Analyzer

    ana = Analyzer()
    for v, n in zip(axes, shape):
        ana.bind(v, E.Range.from_min_extent(E.IntImm(v.dtype, 0), n))
    return ana


def _compute(shape, body, name: str):
    shape = [_i64(s) for s in shape]
    if not shape:
        return te.compute((), lambda: body(), name=name)
    return te.compute(shape, body, name=name, varargs_names=ax_names(len(shape)))


def flatten_index(idx, shape) -> E.PrimExpr:
    """Row-major linear position of ``idx`` in ``shape``."""
    flat = None
    for i, n in zip(idx, shape):
        flat = i if flat is None else flat * n + i
    return flat if flat is not None else E.IntImm("int64", 0)


def unravel_index(flat, shape) -> list:
    """The index of row-major position ``flat`` in ``shape``."""
    out = []
    for k in range(len(shape) - 1, -1, -1):
        n = shape[k]
        if k == 0:
            out.append(flat)
        elif is_one(n):
            out.append(E.IntImm(flat.dtype, 0))
        else:
            out.append(E.FloorMod(flat, n))
            flat = E.FloorDiv(flat, n)
    return out[::-1]


def transpose(x, axes=None):
    """``topi.transpose``: ``out[i] = x[i permuted back]``; ``axes`` None reverses."""
    nd = len(x.shape)
    axes = list(range(nd))[::-1] if axes is None else [int(a) % nd if nd else 0 for a in axes]
    shape = [x.shape[a] for a in axes]

    def body(*i):
        idx = [None] * nd
        for k, a in enumerate(axes):
            idx[a] = i[k]
        return x[tuple(idx)]

    return _compute(shape, body, "T_transpose")


def reshape(x, newshape):
    """``topi.reshape`` to ``newshape`` (already resolved: no -1)."""
    newshape = [_i64(s) for s in newshape]
    xs = list(x.shape)

    def body(*i):
        if not xs:
            return x[()]
        if [repr(d) for d in xs] == [repr(d) for d in newshape]:
            return x[i]
        ana = _simplifier(i, newshape)
        src = unravel_index(flatten_index(i, newshape), xs)
        return x[tuple(ana.simplify(s) for s in src)]

    return _compute(newshape, body, "T_reshape")


def expand_dims(x, axes):
    """``x`` with new unit dims at ``axes`` (positions in the result)."""
    nd = len(x.shape) + len(axes)
    axes = sorted(int(a) % nd for a in axes)
    shape, src = [], []
    it = iter(range(len(x.shape)))
    for d in range(nd):
        if d in axes:
            shape.append(E.IntImm("int64", 1))
        else:
            k = next(it)
            shape.append(x.shape[k])
            src.append(d)
    return _compute(shape, lambda *i: x[tuple(i[d] for d in src)] if src else x[()],
                    "T_expand_dims")


def squeeze(x, axes=None):
    """``x`` without its unit dims ``axes`` (all unit dims when None)."""
    nd = len(x.shape)
    if axes is None:
        axes = [d for d in range(nd) if is_one(x.shape[d])]
    axes = {int(a) % nd for a in axes}
    keep = [d for d in range(nd) if d not in axes]
    shape = [x.shape[d] for d in keep]

    def body(*i):
        idx, it = [], iter(i)
        for d in range(nd):
            idx.append(E.IntImm("int64", 0) if d in axes else next(it))
        return x[tuple(idx)]

    return _compute(shape, body, "T_squeeze")


def concatenate(xs, axis: int = 0):
    """``topi.concatenate`` along ``axis`` (reads only the input each element comes from;
    a piece empty along ``axis`` is left out: its clamped load below would still read it)."""
    from ..arith import Analyzer

    nd = len(xs[0].shape)
    axis = axis % nd
    xs = [t for t in xs if not (isinstance(t.shape[axis], E.IntImm) and t.shape[axis].value == 0)
          ] or list(xs[:1])
    ana = Analyzer()
    offsets, acc = [], E.IntImm("int64", 0)
    for t in xs:  # (each offset simplified from the last: linear in the number of inputs)
        offsets.append(acc)
        acc = ana.simplify(acc + t.shape[axis]) if not (
            isinstance(acc, E.IntImm) and acc.value == 0) else ana.simplify(t.shape[axis])
    shape = [acc if d == axis else xs[0].shape[d] for d in range(nd)]

    def body(*i):
        def load(k):
            # the index clamped into the piece, so every load stays in bounds: with the axis
            # inside the vector loop the condition is a vector select, which evaluates every
            # piece's load, and a piece fused from a take would read its indices out of bounds
            off = offsets[k]
            j = i[axis] - off if not (isinstance(off, E.IntImm) and off.value == 0) else i[axis]
            j = E.Max(E.Min(j, ana.simplify(xs[k].shape[axis] - 1)), E.IntImm("int64", 0))
            return xs[k][tuple(j if d == axis else i[d] for d in range(nd))]

        return pick_piece(i[axis], offsets, load)

    return _compute(shape, body, "T_concat")


def split(x, indices, axis: int = 0, sizes=None):
    """``x`` cut along ``axis`` at the (already resolved) positions ``indices``. With
    ``sizes`` (one per piece), piece k > 0 starts at ``indices[k - 1]`` and has ``sizes[k]``
    elements: split indices that go back (Relax's [7, 2] on 6: pieces 0:6, 6:6 and 2:6)
    overlap, which cuts at ascending positions cannot express."""
    nd = len(x.shape)
    axis = axis % nd
    bounds = [E.IntImm("int64", 0)] + [_i64(v) for v in indices] + [x.shape[axis]]
    from ..arith import Analyzer

    ana = Analyzer()
    outs = []
    for k in range(len(bounds) - 1):
        start = bounds[k]
        size = ana.simplify(E.Max(bounds[k + 1] - start, E.IntImm("int64", 0))) \
            if sizes is None else _i64(sizes[k])
        shape = [size if d == axis else x.shape[d] for d in range(nd)]
        outs.append(_compute(shape, lambda *i, s=start: x[tuple(
            i[d] + s if d == axis and not (isinstance(s, E.IntImm) and s.value == 0) else i[d]
            for d in range(nd))], "T_split" if len(indices) else "T_split_sections"))
    return outs


def _canon_start(b, n, step):
    """The first index a slice ``b::step`` of a dim of size ``n`` reads (clamped)."""
    if isinstance(n, E.IntImm) and isinstance(b, int):
        return E.IntImm("int64", slice(b, None, step).indices(n.value)[0])
    b = _i64(b)
    if isinstance(b, E.IntImm) and b.value < 0:
        start = E.Max(n + b, E.IntImm("int64", 0 if step > 0 else -1))
    elif step > 0:
        start = E.Min(b, n)
    else:
        start = E.Min(b, n - 1)
    from ..arith import Analyzer

    return Analyzer().simplify(start)


def strided_slice(x, axes, begin, strides, out_shape):
    """``x[begin::stride]`` on ``axes``; ``out_shape`` is the inferred result shape."""
    nd = len(x.shape)
    start = [E.IntImm("int64", 0)] * nd
    step = [1] * nd
    for a, b, s in zip(axes, begin, strides):
        a = int(a) % nd
        s = int(s)
        step[a] = s
        start[a] = _canon_start(b if not isinstance(b, E.IntImm) else b.value, x.shape[a], s)

    def body(*i):
        idx = []
        for d in range(nd):
            v = i[d] if step[d] == 1 else i[d] * step[d]
            if not (isinstance(start[d], E.IntImm) and start[d].value == 0):
                v = v + start[d]
            idx.append(v)
        return x[tuple(idx)]

    return _compute(out_shape, body, "T_strided_slice_with_axes")


def take(x, indices, axis=None, mode: str = "fast"):
    """``topi.take``: elements of ``x`` at ``indices`` along ``axis`` (None: flattened)."""
    ins = list(indices.shape)
    if axis is None:
        n = None
        for d in x.shape:
            n = d if n is None else n * d
        shape = ins
        axis_n = n if n is not None else E.IntImm("int64", 1)
    else:
        axis = int(axis) % len(x.shape)
        shape = list(x.shape[:axis]) + ins + list(x.shape[axis + 1:])
        axis_n = x.shape[axis]

    def fix(j):
        j = j if j.dtype == "int64" else E.Cast("int64", j)
        if mode == "wrap":
            return E.FloorMod(j, axis_n)
        if mode == "clip":
            return E.Min(E.Max(j, E.IntImm("int64", 0)), axis_n - 1)
        return j

    if isinstance(axis_n, E.IntImm) and axis_n.value == 0:
        # an empty axis has no element for any index, whatever the mode (clip's and wrap's
        # index would be -1 / a division by zero): zeros, never a read outside the tensor. A
        # program may take from it in code whose result is not used (a loop of length 0)
        return _compute(shape, lambda *i: const_like(0, x.dtype), "T_take")

    def body(*i):
        if axis is None:
            j = fix(indices[tuple(i)] if ins else indices[()])
            return x[tuple(unravel_index(j, list(x.shape)))]
        j = fix(indices[tuple(i[axis:axis + len(ins)])] if ins else indices[()])
        return x[tuple(list(i[:axis]) + [j] + list(i[axis + len(ins):]))]

    return _compute(shape, body, "T_take")


def repeat(x, repeats: int, axis=None):
    """``topi.repeat``: every element ``repeats`` times along ``axis`` (None: flattened)."""
    if axis is None:
        n = None
        for d in x.shape:
            n = d if n is None else n * d
        shape = [(n if n is not None else E.IntImm("int64", 1)) * repeats]
        return _compute(shape, lambda i: x[tuple(unravel_index(E.FloorDiv(i, _i64(repeats)),
                                                               list(x.shape)))], "T_repeat")
    axis = int(axis) % len(x.shape)
    shape = [x.shape[d] * repeats if d == axis else x.shape[d] for d in range(len(x.shape))]
    from ..arith import Analyzer

    shape = [Analyzer().simplify(s) for s in shape]
    return _compute(shape, lambda *i: x[tuple(E.FloorDiv(i[d], _i64(repeats)) if d == axis
                                              else i[d] for d in range(len(i)))], "T_repeat")


def where(cond, a, b, out_shape):
    """``topi.where``: ``a`` where ``cond`` else ``b``, broadcast to ``out_shape``."""
    out_shape = [_i64(s) for s in out_shape]

    def body(*i):
        c = broadcast_load(cond, i, out_shape)
        if c.dtype != "bool":
            c = E.NE(c, const_like(0, c.dtype))
        return E.Select(c, broadcast_load(a, i, out_shape), broadcast_load(b, i, out_shape))

    return _compute(out_shape, body, "T_where")


def full(shape, dtype: str, fill_value):
    """``topi.full``: a tensor of ``shape`` filled with ``fill_value`` (a number, a scalar
    PrimExpr or a 0-d te tensor)."""
    def value():
        v = fill_value
        if isinstance(v, te.Tensor):
            v = v[()]
        elif not isinstance(v, E.PrimExpr):
            return const_like(v, dtype)
        return v if v.dtype == dtype else E.Cast(dtype, v)

    return _compute(shape, lambda *i: value(), "T_full")


def arange(start, stop, step, dtype: str, out_shape):
    """``topi.arange``: ``start + i * step`` for ``i`` in the (inferred) ``out_shape``."""
    def body(i):
        s, st = start, step
        v = (E.Cast(dtype, i) if i.dtype != dtype else i)
        s = s if s.dtype == dtype else E.Cast(dtype, s)
        st = st if st.dtype == dtype else E.Cast(dtype, st)
        return s + v * st

    _ = stop
    return _compute(out_shape, body, "T_arange")


def trilu(x, k, upper: bool):
    """``topi.trilu``: the upper (``triu``) or lower (``tril``) triangle of the last two dims,
    zero elsewhere, offset by diagonal ``k``."""
    def body(*i):
        r, c = i[-2], i[-1]
        keep = (c - r >= k) if upper else (c - r <= k)
        return E.Select(keep, x[i], const_like(0, x.dtype))

    return _compute(list(x.shape), body, "trilu")


def _int(v) -> int | None:
    return int(v.value) if isinstance(v, E.IntImm) else v if isinstance(v, int) else None


def _reflect_index(j, n, widest):
    """numpy's ``reflect`` source index of position ``j`` along an axis of ``n``: one mirror
    where the pads are known to fit in one reflection (``widest <= n - 1``), else the periodic
    form (period ``2 (n - 1)``, at least 1: a single element repeats) that numpy's wider
    pads and a run-time ``n`` need; the one mirror read out of bounds there."""
    size = _int(n)
    if size is not None and widest is not None and widest <= size - 1:
        return E.Select(j < 0, -j, E.Select(j >= n, (n - 1) * 2 - j, j))
    if size == 1:
        return E.IntImm(j.dtype, 0)
    period = E.Max((n - 1) * 2, E.IntImm(n.dtype, 1))
    t = E.FloorMod(j, period)
    return E.Select(t >= n, period - t, t)


def pad(x, pad_before, pad_after, pad_value=0.0, mode: str = "constant",
        name: str = "PadInput"):
    """``topi.nn.pad`` (stage ``PadInput``): constant, edge or reflect padding."""
    nd = len(x.shape)
    shape = [x.shape[d] + pad_before[d] + pad_after[d]
             if (pad_before[d] or pad_after[d]) else x.shape[d] for d in range(nd)]
    from ..arith import Analyzer

    shape = [Analyzer().simplify(_i64(s)) for s in shape]

    def body(*i):
        conds, idx = [], []
        for d in range(nd):
            b, n = pad_before[d], x.shape[d]
            j = i[d] - b if b else i[d]
            if b or pad_after[d]:
                if mode == "edge":
                    j = E.Min(E.Max(j, E.IntImm("int64", 0)), n - 1)
                elif mode == "reflect":
                    widths = (_int(b), _int(pad_after[d]))
                    j = _reflect_index(j, n, None if None in widths else max(widths))
                else:
                    conds.append(E.And(j >= 0, j < n))
            idx.append(j)
        v = x[tuple(idx)]
        if not conds:
            return v
        c = conds[0]
        for more in conds[1:]:
            c = E.And(c, more)
        pv = pad_value if isinstance(pad_value, E.PrimExpr) else const_like(pad_value, x.dtype)
        return tir_op.if_then_else(c, v, pv)

    return _compute(shape, body, name)
