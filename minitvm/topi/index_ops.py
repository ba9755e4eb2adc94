"""Relay computes of the indexing and masking operators that ran as numpy kernels: one_hot,
scatter_nd, scatter_elements (``topi.scatter_linear``'s choice of the one-pass stage or
``topi.transform_extra``'s te form), trilu, sequence_mask,
slice_like, matrix_set_diag, invert_permutation and searchsorted."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from . import transform_extra as tx
from .manipulation import trilu as _trilu
from .scatter_linear import scatter_elements_stage, scatter_nd_stage
from .utils import compute, dims, fconst, out_dims, out_tensor_types
from .utils import i64 as _i64


def _out(out_type):
    t = out_tensor_types(out_type)[0]
    return list(out_dims(t)), str(t.dtype)


@compute("one_hot")
def _one_hot(attrs, inputs, out_type):
    _, dtype = _out(out_type)
    ind, on, off = inputs
    return [tx.one_hot(ind, on[()], off[()], int(attrs.depth), int(attrs.axis), dtype)]


@compute("scatter_nd")
def _scatter_nd(attrs, inputs, out_type):
    """Relay puts the index tuple on the FIRST dim of ``indices`` (as its gather_nd);
    ``transform_extra.scatter_nd`` takes it on the last, so the indices are moved there."""
    data, ind, upd = inputs
    ins = list(dims(ind))
    if ins and not isinstance(ins[0], int):  # (a symbolic kernel's: the rule's rank, checked)
        ins[0] = len(ins) - 1 + len(dims(data)) - len(dims(upd))
    mode = str(attrs.mode)
    if len(ins) == 1:  # one index tuple: a (1, M) list, updates gain the unit dim
        last = te.compute([1, ins[0]], lambda _, k: ind[k], name="scatter_nd_indices")
        upd = te.compute([1, *dims(upd)], lambda _, *r: upd[r], name="scatter_nd_updates")
    else:
        last = te.compute([*ins[1:], ins[0]], lambda *i: ind[(i[-1], *i[:-1])],
                          name="scatter_nd_indices")
    return [scatter_nd_stage(data, last, upd, mode)]


@compute("scatter_elements")
def _scatter_elements(attrs, inputs, out_type):
    data, ind, upd = inputs
    return [scatter_elements_stage(data, ind, upd, int(attrs.axis), str(attrs.reduction))]


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
    xs, ds = dims(x), dims(diag)
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
    ss = dims(seq)
    right = bool(attrs.right)

    def body(*i):
        s = te.reduce_axis((0, ss[-1]), name="s")
        entry = seq[(s.var,)] if len(ss) == 1 else seq[(*i[:-1], s.var)]
        v = vals[i]
        below = entry <= v if right else entry < v
        return te.sum(E.Select(below, fconst(1, dtype), fconst(0, dtype)), axis=s)

    return [te.compute(shape, body, name="searchsorted")]
