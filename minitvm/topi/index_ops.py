"""Relay computes of the indexing and masking operators that ran as numpy kernels: one_hot,
scatter_nd, scatter_elements (on ``topi.transform_extra``'s te builders), trilu, sequence_mask,
slice_like, matrix_set_diag, invert_permutation and searchsorted."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from . import transform_extra as tx
from .manipulation import trilu as _trilu
from .utils import compute, fconst, ishape, out_tensor_types, static_shape
from .utils import i64 as _i64


def _out(out_type):
    t = out_tensor_types(out_type)[0]
    return list(static_shape(t)), str(t.dtype)


@compute("one_hot")
def _one_hot(attrs, inputs, out_type):
    _, dtype = _out(out_type)
    ind, on, off = inputs
    return [tx.one_hot(ind, on[()], off[()], int(attrs.depth), int(attrs.axis), dtype)]


# The te scatters compare every output position (its index prefix, for "update") with every
# update position: quadratic. Above this many comparisons numpy's scatter (the build's fallback
# kernel, which says so) is faster: scatter_nd "add" of 128 rows into (256, 64), 2.1M
# comparisons, ran 1551 us native against 312 us in numpy (benchmarks/bench_native_vs_fallback.py)
SCATTER_MAX_PAIRS = 1 << 18


def _bounded_scatter(positions, updates) -> None:
    """Refuse (NotImplementedError: the build falls back to numpy, loudly) a scatter of
    ``updates`` update positions compared at ``positions`` output positions, both static,
    whose te form would make more than ``SCATTER_MAX_PAIRS`` comparisons."""
    n, m = _static_count(positions), _static_count(updates)
    if n is not None and m is not None and n * m > SCATTER_MAX_PAIRS:
        raise NotImplementedError(
            f"{m} update positions compared at {n} output positions ({n * m} > "
            f"SCATTER_MAX_PAIRS = {SCATTER_MAX_PAIRS}): the te form is quadratic")


def _static_count(dims) -> int | None:
    total = 1
    for d in dims:
        v = getattr(d, "value", d)
        if not isinstance(v, int):
            return None
        total *= v
    return total


@compute("scatter_nd")
def _scatter_nd(attrs, inputs, out_type):
    """Relay puts the index tuple on the FIRST dim of ``indices`` (as its gather_nd);
    ``transform_extra.scatter_nd`` takes it on the last, so the indices are moved there."""
    data, ind, upd = inputs
    ins = ishape(ind)
    mode = str(attrs.mode)
    m = ins[0] if ins and isinstance(ins[0], int) else len(ishape(data))
    compared = ishape(data)[:m] if mode == "update" else ishape(data)
    _bounded_scatter(compared, ins[1:])
    if len(ins) == 1:  # one index tuple: a (1, M) list, updates gain the unit dim
        last = te.compute([1, ins[0]], lambda _, k: ind[k], name="scatter_nd_indices")
        upd = te.compute([1, *ishape(upd)], lambda _, *r: upd[r], name="scatter_nd_updates")
    else:
        last = te.compute([*ins[1:], ins[0]], lambda *i: ind[(i[-1], *i[:-1])],
                          name="scatter_nd_indices")
    return [tx.scatter_nd(data, last, upd, mode)]


@compute("scatter_elements")
def _scatter_elements(attrs, inputs, out_type):
    """With static shapes one stage tagged ``SCATTER_TAG`` (``schedule.scatter`` runs it in
    time linear in the updates, any size); else the te form, bounded."""
    data, ind, upd = inputs
    axis, reduction = int(attrs.axis), str(attrs.reduction)
    if _static_count(ishape(data)) is not None and _static_count(ishape(ind)) is not None:
        return [scatter_elements_stage(data, ind, upd, axis, reduction)]
    _bounded_scatter(ishape(data), ishape(ind))
    return [tx.scatter_elements(data, ind, upd, axis, reduction)]


SCATTER_TAG = "scatter_elements"


def scatter_elements_stage(x, indices, updates, axis: int, reduction: str):
    """``scatter_elements`` of static-shaped tensors as ONE stage tagged ``SCATTER_TAG`` with
    its operands and ``axis`` / ``reduction`` in attrs, for ``schedule.scatter``'s sequential
    loop (a copy of ``x``, then each update combined into its position in order).

    The stage's body is the same scatter as a reduction over a flat update position ``q``
    (quadratic: what a lowering without the rule would compute): ``q`` in ``[0, m]``, the
    extra position ``m`` contributing ``x[i]``; for ``update``, a nested max finds ``t``, one
    past the last matching position (0: none), and a sum over ``q`` keeps ``x[i]`` at
    ``q == 0`` or update ``q - 1``, whichever ``q == t`` selects (a reduction nested in
    another, which only the rule lowers, as ``topi.selection``'s top-k stage)."""
    nd = len(x.shape)
    axis %= nd
    if reduction not in ("update", "add", "mul", "min", "max"):
        raise ValueError(f"scatter_elements: unknown reduction {reduction!r}")
    ext = [int(getattr(d, "value", d)) for d in indices.shape]
    m = _static_count(ext)
    dt = x.dtype
    zero64 = E.IntImm("int64", 0)

    def unravel(q):
        q = E.Max(E.Min(q, E.IntImm("int64", m - 1)), zero64)
        ys = []
        for n in reversed(ext):
            ys.append(E.FloorMod(q, E.IntImm("int64", n)))
            q = E.FloorDiv(q, E.IntImm("int64", n))
        return ys[::-1]

    def hit(i, ys):
        j = indices[tuple(ys)]
        j = E.Cast("int64", j) if j.dtype != "int64" else j
        n = E.IntImm("int64", int(getattr(x.shape[axis], "value", x.shape[axis])))
        conds = [E.EQ(E.Select(j < zero64, j + n, j), _i64(i[axis]))]
        conds += [E.EQ(ys[d], _i64(i[d])) for d in range(nd) if d != axis]
        out = conds[0]
        for c in conds[1:]:
            out = E.And(out, c)
        return out

    def body(*i):
        q = te.reduce_axis((E.IntImm("int64", 0), E.IntImm("int64", m + 1)), name="q")
        at_x = E.EQ(q.var, E.IntImm("int64", m))
        if reduction == "update":  # t: 1 + the last matching position, 0 for none
            r = te.reduce_axis((E.IntImm("int64", 0), E.IntImm("int64", m)), name="r")
            t = te.max(E.Select(hit(i, unravel(r.var)), r.var + E.IntImm("int64", 1), zero64),
                       axis=r)
            first = E.EQ(q.var, zero64)
            val = E.Select(first, x[i], updates[tuple(unravel(q.var - E.IntImm("int64", 1)))])
            return te.sum(E.Select(E.EQ(q.var, t), val, fconst(0, dt)), axis=q)
        ident_v = {"add": lambda: fconst(0, dt), "mul": lambda: fconst(1, dt),
                   "min": lambda: tir_op.max_value(dt),
                   "max": lambda: tir_op.min_value(dt)}[reduction]()
        ys = unravel(q.var)
        val = E.Select(at_x, x[i], E.Select(hit(i, ys), updates[tuple(ys)], ident_v))
        if reduction == "mul":
            prod = te.comm_reducer(lambda a, b: a * b, lambda t: ident_v, name="prod")
            return prod(val, axis=q)
        return {"add": te.sum, "min": te.min, "max": te.max}[reduction](val, axis=q)

    attrs = {"operands": (x, indices, updates), "axis": axis, "reduction": reduction}
    return te.compute(list(x.shape), body, name="T_scatter_elements", tag=SCATTER_TAG,
                      attrs=attrs)


@compute("trilu")
def _trilu_compute(attrs, inputs, out_type):
    x, k = inputs
    return [_trilu(x, _i64(k[()]), bool(attrs.upper))]


@compute("sequence_mask")
def _sequence_mask(attrs, inputs, out_type):
    """Step ``t`` of sequence ``b`` (``(t, b)`` leads for axis 0, ``(b, t)`` for axis 1) keeps
    its value while ``t < valid_length[b]``."""
    shape, dtype = _out(out_type)
    data, lengths = inputs
    axis = int(attrs.axis)
    fill = fconst(float(attrs.mask_value), dtype)

    def body(*i):
        t, b = i[axis], i[1 - axis]
        n = lengths[b]
        if n.dtype.startswith("float"):  # a fractional length keeps the steps below it
            return E.Select(E.Cast(n.dtype, t) < n, data[i], fill)
        return E.Select(_i64(t) < _i64(n), data[i], fill)

    return [te.compute(shape, body, name="sequence_mask")]


@compute("slice_like")
def _slice_like(attrs, inputs, out_type):
    """Every sliced axis starts at 0, so the output reads ``data`` at its own index."""
    shape, _ = _out(out_type)
    data = inputs[0]
    return [te.compute(shape, lambda *i: data[i], name="slice_like")]


@compute("matrix_set_diag")
def _matrix_set_diag(attrs, inputs, out_type):
    """Element ``(r, c)`` on diagonal ``d = c - r`` in ``[k1, k2]`` takes the band's entry
    ``min(r, c)`` (with several bands: band ``k2 - d``, shifted by ``width - length`` where that
    side of the diagonals is right-aligned); other elements keep ``x``."""
    x, diag = inputs
    xs, ds = ishape(x), ishape(diag)
    k1, k2 = int(attrs.k1), int(attrs.k2)
    rows, cols = xs[-2], xs[-1]
    width = ds[-1]
    zero = E.IntImm("int64", 0)

    def body(*i):
        r, c = _i64(i[-2]), _i64(i[-1])
        d = c - r
        pos = E.Min(r, c)
        if k1 == k2:
            val = diag[(*i[:-2], E.Min(pos, _i64(width - 1)))]
        else:
            length = E.Min(_i64(rows) + E.Min(d, zero), _i64(cols) - E.Max(d, zero))
            right = E.Select(d > zero, E.IntImm("bool", int(bool(attrs.super_diag_right_align))),
                             E.IntImm("bool", int(bool(attrs.sub_diag_right_align))))
            pos = pos + E.Select(right, _i64(width) - length, zero)
            band = E.Max(E.Min(_i64(k2) - d, _i64(k2 - k1)), zero)
            val = diag[(*i[:-2], band, E.Max(E.Min(pos, _i64(width - 1)), zero))]
        on = E.And(d >= _i64(k1), d <= _i64(k2))
        return E.Select(on, val, x[i])

    return [te.compute(list(xs), body, name="matrix_set_diag")]


@compute("invert_permutation")
def _invert_permutation(attrs, inputs, out_type):
    """``out[k]``: the position ``j`` with ``p[j] == k`` (a sum over ``j``, one term matches in a
    permutation)."""
    shape, dtype = _out(out_type)
    p = inputs[0]
    n = shape[0]

    def body(k):
        j = te.reduce_axis((0, n), name="j")
        hit = E.EQ(_i64(p[j.var]), _i64(k))
        return te.sum(E.Select(hit, E.Cast(dtype, j.var), fconst(0, dtype)), axis=j)

    return [te.compute(shape, body, name="invert_permutation")]


@compute("searchsorted")
def _searchsorted(attrs, inputs, out_type):
    """The insertion index of ``v`` into a sorted row: how many entries are ``< v`` (left) or
    ``<= v`` (right). A 1-d sequence is shared by every value."""
    shape, dtype = _out(out_type)
    seq, vals = inputs
    ss = ishape(seq)
    right = bool(attrs.right)

    def body(*i):
        s = te.reduce_axis((0, ss[-1]), name="s")
        entry = seq[(s.var,)] if len(ss) == 1 else seq[(*i[:-1], s.var)]
        v = vals[i]
        below = entry <= v if right else entry < v
        return te.sum(E.Select(below, fconst(1, dtype), fconst(0, dtype)), axis=s)

    return [te.compute(shape, body, name="searchsorted")]
