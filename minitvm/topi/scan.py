"""TVM's ``topi.cumsum`` / ``topi.cumprod`` on te tensors with possibly symbolic shapes.

Each output element reduces the input along the scanned axis under a ``k <= i`` mask (``k < i``
when exclusive), so the scan is one reduction stage (quadratic work, but a plain compute every
schedule and the code generator handle)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .broadcast import ax_names, const_like
from .manipulation import unravel_index
from .reduction import _prod

__all__ = ["cumsum", "cumprod", "scan"]


def _to(v, dtype):
    return v if v.dtype == dtype else E.Cast(dtype, v)


def scan(x, kind: str, axis: int | None = None, dtype: str | None = None,
         exclusive: bool = False):
    """Inclusive (or exclusive) prefix ``kind`` ("sum" or "prod") of ``x`` along ``axis``; the
    flattened input when ``axis`` is None."""
    dtype = dtype or x.dtype
    red = te.sum if kind == "sum" else _prod
    ident = const_like(0 if kind == "sum" else 1, dtype)
    shape = list(x.shape)
    if axis is None:
        n = None
        for d in shape:
            n = d if n is None else n * d
        n = n if n is not None else E.IntImm("int64", 1)
        k = te.reduce_axis((E.IntImm(n.dtype, 0), n), name="k")

        def flat_body(i):
            hit = k < i if exclusive else k <= i
            v = x[tuple(unravel_index(k, shape))] if shape else x[()]
            return red(E.Select(hit, _to(v, dtype), ident), axis=k)

        return te.compute([n], flat_body, name=f"T_cum{kind}", varargs_names=["ax0"])
    axis = axis % len(shape)
    n = shape[axis]
    k = te.reduce_axis((E.IntImm(n.dtype, 0), n), name="k")

    def body(*i):
        idx = list(i)
        idx[axis] = k
        hit = k < i[axis] if exclusive else k <= i[axis]
        return red(E.Select(hit, _to(x[tuple(idx)], dtype), ident), axis=k)

    return te.compute(shape, body, name=f"T_cum{kind}", varargs_names=ax_names(len(shape)))


def cumsum(x, axis: int | None = None, dtype: str | None = None, exclusive: bool = False):
    """Cumulative sum along ``axis``."""
    return scan(x, "sum", axis, dtype, exclusive)


def cumprod(x, axis: int | None = None, dtype: str | None = None, exclusive: bool = False):
    """Cumulative product along ``axis``."""
    return scan(x, "prod", axis, dtype, exclusive)
