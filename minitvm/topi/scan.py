"""TVM's ``topi.cumsum`` / ``topi.cumprod`` on te tensors with possibly symbolic shapes, and the
computes of Relay's ``cumsum`` / ``cumprod``.

Each output element reduces the input along the scanned axis under a ``k <= i`` mask (``k < i``
when exclusive), so the scan is one reduction stage (quadratic work, but a plain compute every
schedule and the code generator handle). Relay's stages also carry tag ``SCAN_TAG`` with their
operand and ``scan`` attrs (kind, axis, exclusive): ``minitvm.schedule.scan`` lowers such a stage
(static or symbolic extents) as one pass per row instead."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .broadcast import ax_names, const_like
from .manipulation import unravel_index
from .reduction import _prod
from .utils import compute

__all__ = ["SCAN_TAG", "cumsum", "cumprod", "scan"]

SCAN_TAG = "scan"


def _to(v, dtype):
    return v if v.dtype == dtype else E.Cast(dtype, v)


def scan(x, kind: str, axis: int | None = None, dtype: str | None = None,
         exclusive: bool = False, tagged: bool = False):
    """Inclusive (or exclusive) prefix ``kind`` ("sum" or "prod") of ``x`` along ``axis``; the
    flattened input when ``axis`` is None. ``tagged``: the stage carries ``SCAN_TAG`` and its
    attrs (Relay's computes; a PrimFunc made from the stage would keep them as annotations)."""
    if kind not in ("sum", "prod"):
        raise ValueError(f"scan: kind must be 'sum' or 'prod', got {kind!r}")
    dtype = dtype or x.dtype
    red = te.sum if kind == "sum" else _prod
    ident = const_like(0 if kind == "sum" else 1, dtype)
    shape = list(x.shape)
    if axis is not None:
        if not -len(shape) <= axis < len(shape):
            raise ValueError(f"scan: axis {axis} is out of range for a {len(shape)}-d input")
        axis = axis % len(shape)
    tag = SCAN_TAG if tagged else ""
    attrs = {"operands": (x,), "scan": kind, "axis": axis,
             "exclusive": bool(exclusive)} if tagged else None
    if axis is None:
        n = None
        for d in shape:
            both = isinstance(n, E.IntImm) and isinstance(d, E.IntImm)
            n = d if n is None else E.IntImm(n.dtype, n.value * d.value) if both else n * d
        n = n if n is not None else E.IntImm("int64", 1)
        k = te.reduce_axis((E.IntImm(n.dtype, 0), n), name="k")

        def flat_body(i):
            hit = k < i if exclusive else k <= i
            v = x[tuple(unravel_index(k, shape))] if shape else x[()]
            return red(E.Select(hit, _to(v, dtype), ident), axis=k)

        return te.compute([n], flat_body, name=f"T_cum{kind}", tag=tag, attrs=attrs,
                          varargs_names=["ax0"])
    n = shape[axis]
    k = te.reduce_axis((E.IntImm(n.dtype, 0), n), name="k")

    def body(*i):
        idx = list(i)
        idx[axis] = k
        hit = k < i[axis] if exclusive else k <= i[axis]
        return red(E.Select(hit, _to(x[tuple(idx)], dtype), ident), axis=k)

    return te.compute(shape, body, name=f"T_cum{kind}", tag=tag, attrs=attrs,
                      varargs_names=ax_names(len(shape)))


def cumsum(x, axis: int | None = None, dtype: str | None = None, exclusive: bool = False):
    """Cumulative sum along ``axis``."""
    return scan(x, "sum", axis, dtype, exclusive)


def cumprod(x, axis: int | None = None, dtype: str | None = None, exclusive: bool = False):
    """Cumulative product along ``axis``."""
    return scan(x, "prod", axis, dtype, exclusive)


def _scan_compute(kind: str):
    def fcompute(attrs, inputs, out_type):
        axis = None if attrs.axis is None else int(attrs.axis)
        return [scan(inputs[0], kind, axis, out_type.dtype, bool(attrs.exclusive), tagged=True)]

    return fcompute


compute("cumsum")(_scan_compute("sum"))
compute("cumprod")(_scan_compute("prod"))
