"""TVM's ``topi`` reductions on te tensors with possibly symbolic shapes: sum, max, min, prod,
mean, variance, argmax, argmin.

A reduction stage is named ``<input>_red`` over spatial axes ``ax0...`` and reduction axes
``k<dim>`` (TVM's CommReduce naming); mean and variance divide afterwards (``T_divide``), as TVM
legalizes them.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .broadcast import ax_names, const_like
from .utils import ieee_max, ieee_min

__all__ = ["reduce", "sum", "max", "min", "prod", "mean", "variance", "argmax", "argmin",
           "arg_reduce", "norm_axes", "count_of"]

_prod = te.comm_reducer(lambda a, b: a * b, lambda t: const_like(1, t), name="prod")
_REDUCERS = {"sum": te.sum, "max": ieee_max, "min": ieee_min, "prod": _prod}


def norm_axes(ndim: int, axis) -> list[int]:
    """Sorted non-negative axes (None: all)."""
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, int):
        axis = [axis]
    return sorted({int(a) % ndim for a in axis})


def count_of(x, axes) -> E.PrimExpr:
    """The number of elements a reduction over ``axes`` of ``x`` combines."""
    n = None
    for a in axes:
        n = x.shape[a] if n is None else n * x.shape[a]
    return n if n is not None else E.IntImm("int64", 1)


def _out_shape(x, axes, keepdims):
    shape = []
    for d, n in enumerate(x.shape):
        if d in axes:
            if keepdims:
                shape.append(E.IntImm("int64", 1))
        else:
            shape.append(n)
    return shape


def _source_index(x, axes, keepdims, out_idx, rvars):
    idx, k, r = [], 0, 0
    for d in range(len(x.shape)):
        if d in axes:
            idx.append(rvars[r])
            r += 1
            if keepdims:
                k += 1
        else:
            idx.append(out_idx[k])
            k += 1
    return idx


def _compute(shape, body, name):
    if not shape:
        return te.compute((), lambda: body(), name=name)
    return te.compute(shape, body, name=name, varargs_names=ax_names(len(shape)))


def reduce(kind: str, x, axis=None, keepdims: bool = False, prep=None):
    """The ``kind`` reduction (sum, max, min, prod) of ``x`` over ``axis``; ``prep`` maps each
    element first (a cast, a square)."""
    axes = norm_axes(len(x.shape), axis)
    shape = _out_shape(x, axes, keepdims)
    reducer = _REDUCERS[kind]
    if not axes:
        return _compute(shape, lambda *i: prep(x[i]) if prep else x[i], f"{x.name}_red")
    rvars = [te.reduce_axis((E.IntImm(x.shape[a].dtype, 0), x.shape[a]), name=f"k{a}")
             for a in axes]

    def body(*i):
        v = x[tuple(_source_index(x, axes, keepdims, i, rvars))]
        if prep is not None:
            v = prep(v)
        return reducer(v, axis=rvars)

    return _compute(shape, body, f"{x.name}_red")


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001 - TVM's name
    return reduce("sum", x, axis, keepdims)


def max(x, axis=None, keepdims: bool = False):  # noqa: A001
    return reduce("max", x, axis, keepdims)


def min(x, axis=None, keepdims: bool = False):  # noqa: A001
    return reduce("min", x, axis, keepdims)


def prod(x, axis=None, keepdims: bool = False):
    return reduce("prod", x, axis, keepdims)


def _divide_by(t, count, dtype):
    def body(*i):
        v = t[i] if i else t[()]
        c = count if count.dtype == dtype else E.Cast(dtype, count)
        return v / c if dtype.startswith("float") else E.Div(v, c)

    return _compute(list(t.shape), body, "T_divide")


def mean(x, axis=None, keepdims: bool = False):
    """``sum / count`` over ``axis``."""
    axes = norm_axes(len(x.shape), axis)
    return _divide_by(sum(x, axes, keepdims), count_of(x, axes), x.dtype)


def variance(x, axis=None, keepdims: bool = False, unbiased: bool = False):
    """Mean squared deviation from the mean over ``axis`` (``unbiased``: divided by n - 1)."""
    axes = norm_axes(len(x.shape), axis)
    m = mean(x, axes, keepdims=True)
    dev = te.compute(x.shape, lambda *i: x[i] - m[tuple(E.IntImm(i[d].dtype, 0) if d in axes
                                                        else i[d] for d in range(len(i)))],
                     name="T_subtract", varargs_names=ax_names(len(x.shape)))
    sq = te.compute(x.shape, lambda *i: dev[i] * dev[i], name="T_multiply",
                    varargs_names=ax_names(len(x.shape)))
    s = sum(sq, axes, keepdims)
    n = count_of(x, axes)
    if unbiased:
        n = n - 1
    return _divide_by(s, n, x.dtype)


def arg_reduce(kind: str, x, axes, keepdims: bool = False, select_last: bool = False,
               dtype: str = "int64"):
    """Index of the first (``select_last``: last) extreme element over ``axes``, counted
    row-major over those axes (numpy's argmax of the moved and flattened axes): the extreme
    value, then the smallest (largest) index holding it; two reductions, no tuple reducer."""
    axes = norm_axes(len(x.shape), axes)
    if not axes:
        raise ValueError(f"arg{kind}: no axis to reduce over in a tensor of rank {len(x.shape)}")
    ext = reduce(kind, x, axes, keepdims=True)
    it = next((x.shape[a].dtype for a in axes if isinstance(x.shape[a], E.PrimExpr)), "int32")
    rvars = [te.reduce_axis((E.IntImm(it, 0), x.shape[a]), name=f"k{a}") for a in axes]
    total = count_of(x, axes)
    flat = None
    for a, r in zip(axes, rvars, strict=True):
        flat = r.var if flat is None else flat * x.shape[a] + r.var
    floating = str(x.dtype).startswith(("float", "bfloat"))

    def body(*i):
        v = x[tuple(_source_index(x, axes, keepdims, i, rvars))]
        eidx = _kept(i, axes, keepdims, len(x.shape), it)
        hit = E.EQ(v, ext[tuple(eidx)])
        if floating:
            # the extreme of a slice holding NaN is NaN (IEEE, as numpy): the first NaN is it
            hit = E.Or(hit, E.NE(v, v))
        if select_last:
            return te.max(E.Select(hit, flat, E.IntImm(flat.dtype, -1)), axis=rvars)
        return te.min(E.Select(hit, flat, E.Cast(flat.dtype, total)), axis=rvars)

    idx = _compute(_out_shape(x, axes, keepdims), body, f"{x.name}_arg{kind}_index")
    if idx.dtype == dtype:
        return idx
    return te.compute(idx.shape, lambda *i: E.Cast(dtype, idx[i] if i else idx[()]),
                      name=f"T_arg{kind}")


def _kept(out_idx, axes, keepdims, ndim, dtype) -> list:
    """The index into the keepdims reduction for output index ``out_idx``: 0 at each reduced
    axis."""
    if keepdims:
        return [E.IntImm(dtype, 0) if d in axes else out_idx[d] for d in range(ndim)]
    rest = iter(out_idx)
    return [E.IntImm(dtype, 0) if d in axes else next(rest) for d in range(ndim)]


def _arg(kind: str, x, axis=None, keepdims: bool = False):
    axes = None if axis is None else [int(axis) % len(x.shape)]
    return arg_reduce(kind, x, axes, keepdims)


def argmax(x, axis=None, keepdims: bool = False):
    return _arg("max", x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    return _arg("min", x, axis, keepdims)


