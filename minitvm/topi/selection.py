"""Relay's ``topk`` as a selection stage: the positions of the ``k`` best elements of each row,
then their values gathered from the input.

The positions are one stage tagged ``TOPK_TAG`` (attrs: ``operands``, ``k``, ``axis``,
``largest``). Its body states the result as a nested reduction (the position whose rank is
``j``, the rank counting the elements ordered before it), which no generic schedule lowers:
``minitvm.schedule.selection`` computes it in one pass per row, keeping the best ``k`` so far
sorted. So the compute refuses what that rule does not take (symbolic shapes, ``k`` above
``MAX_K``, other dtypes); such a ``topk`` runs on its numpy reference.

Order: the best first (largest, or smallest when ascending); equal values keep their input
order; NaN ranks after every number in both directions (as the numpy reference).
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .utils import compute

__all__ = ["TOPK_TAG", "MAX_K", "topk_indices"]

TOPK_TAG = "topk"
MAX_K = 64  # the most elements the selection keeps per row (its insertion chain is unrolled)


def better(a, b, largest: bool):
    """Is value ``a`` ordered strictly before value ``b`` (NaN after every number)?"""
    first = E.GT(a, b) if largest else E.LT(a, b)
    if not a.dtype.startswith(("float", "bfloat")):
        return first
    return E.Or(first, E.And(E.NE(b, b), E.EQ(a, a)))


def _same(a, b):
    if not a.dtype.startswith(("float", "bfloat")):
        return E.EQ(a, b)
    return E.Or(E.EQ(a, b), E.And(E.NE(a, a), E.NE(b, b)))


def _static(dims) -> list[int]:
    out = []
    for d in dims:
        if not isinstance(d, E.IntImm):
            raise ValueError(f"topk: the selection kernel needs static shapes, got {d}")
        out.append(d.value)
    return out


def topk_indices(x, k: int, axis: int, largest: bool = True, dtype: str = "int32"):
    """Positions along ``axis`` of the ``k`` best elements of ``x``, best first (a stage for
    ``schedule.selection``; ``x`` has a static shape and ``1 <= k <= x.shape[axis]``)."""
    dims = _static(x.shape)
    axis %= len(dims)
    n = dims[axis]
    if not 1 <= k <= n:
        raise ValueError(f"topk: k={k} must be in [1, {n}]")
    shape = [E.IntImm(x.shape[d].dtype, k) if d == axis else x.shape[d]
             for d in range(len(dims))]
    ity = x.shape[axis].dtype

    def body(*i):
        p = te.reduce_axis((E.IntImm(ity, 0), E.IntImm(ity, n)), name="p")
        q = te.reduce_axis((E.IntImm(ity, 0), E.IntImm(ity, n)), name="q")
        xp = x[tuple(p.var if d == axis else i[d] for d in range(len(dims)))]
        xq = x[tuple(q.var if d == axis else i[d] for d in range(len(dims)))]
        before = E.Or(better(xq, xp, largest), E.And(_same(xq, xp), E.LT(q.var, p.var)))
        rank = te.sum(E.Select(before, E.IntImm(ity, 1), E.IntImm(ity, 0)), axis=q)
        pos = p.var if dtype == ity else E.Cast(dtype, p.var)
        return te.sum(E.Select(E.EQ(rank, i[axis]), pos, E.IntImm(dtype, 0)), axis=p)

    attrs = {"operands": (x,), "k": k, "axis": axis, "largest": bool(largest)}
    return te.compute(shape, body, name="T_topk_indices", tag=TOPK_TAG, attrs=attrs)


_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64")


@compute("topk")
def _topk(attrs, inputs, out_type):
    x = inputs[0]
    dims = _static(x.shape)
    axis = int(attrs.axis) % len(dims) if dims else 0
    if not dims or dims[axis] == 0:
        raise ValueError("topk: the selection kernel needs a non-empty axis")
    n = dims[axis]
    k = n if int(attrs.k) < 1 else min(int(attrs.k), n)
    if k > MAX_K:
        raise ValueError(f"topk: k={k} is above the selection kernel's {MAX_K}")
    if x.dtype not in _DTYPES:
        raise ValueError(f"topk: the selection kernel does not take {x.dtype}")
    idx = topk_indices(x, k, axis, not attrs.is_ascend, attrs.dtype)

    def gather(*i):
        j = idx[i]
        j = j if j.dtype == i[axis].dtype else E.Cast(i[axis].dtype, j)
        return x[tuple(j if d == axis else i[d] for d in range(len(dims)))]

    vals = te.compute(idx.shape, gather, name="T_topk_values")
    return {"both": [vals, idx], "values": [vals], "indices": [idx]}[attrs.ret_type]
