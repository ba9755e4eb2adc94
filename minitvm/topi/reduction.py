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
           "norm_axes", "count_of"]

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


def _arg(kind: str, x, axis=None, keepdims: bool = False):
    """Index of the first extreme element: the extreme value, then the smallest index that
    holds it (two reductions, no tuple reducer needed)."""
    if axis is None:
        flat_n = count_of(x, range(len(x.shape)))
        from .manipulation import reshape

        src = reshape(x, [flat_n])
        res = _arg(kind, src, 0, False)
        if keepdims:
            from .manipulation import expand_dims

            return expand_dims(res, list(range(len(x.shape)))) if x.shape else res
        return res
    a = int(axis) % len(x.shape)
    ext = reduce(kind, x, [a], keepdims=True)
    n = x.shape[a]
    k = te.reduce_axis((E.IntImm(n.dtype, 0), n), name=f"k{a}")
    shape = _out_shape(x, [a], keepdims)

    def body(*i):
        full = list(i) if keepdims else list(i[:a]) + [None] + list(i[a:])
        idx = [k if d == a else full[d] for d in range(len(x.shape))]
        eidx = [E.IntImm(n.dtype, 0) if d == a else full[d] for d in range(len(x.shape))]
        v = x[tuple(idx)]
        hit = E.EQ(v, ext[tuple(eidx)])
        if str(x.dtype).startswith(("float", "bfloat")):
            # the extreme of a slice holding NaN is NaN (IEEE, as numpy): the first NaN is it
            hit = E.Or(hit, E.NE(v, v))
        return te.min(E.Select(hit, k, n), axis=k)

    idx = _compute(shape, body, f"{x.name}_{kind}_index")
    return te.compute(idx.shape, lambda *i: E.Cast("int64", idx[i] if i else idx[()]),
                      name=f"T_arg{kind}") if idx.dtype != "int64" else idx


def argmax(x, axis=None, keepdims: bool = False):
    return _arg("max", x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    return _arg("min", x, axis, keepdims)


