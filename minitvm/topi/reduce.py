"""Computes of the reductions (sum, mean, max, min, prod, all, any, variance, argmax, argmin)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .utils import (
    compute,
    dims,
    fconst,
    ieee_max,
    ieee_min,
    out_dims,
    out_tensor_types,
    reduce_axes,
)


def _reduce_index(x, attrs, out_idx, rvars):
    """Index into ``x`` for output index ``out_idx`` and reduction variables ``rvars``."""
    ndim = len(x.shape)
    axes = reduce_axes(ndim, attrs.axis, attrs.exclude)
    idx, k, r = [], 0, 0
    for d in range(ndim):
        if d in axes:
            idx.append(rvars[r])
            r += 1
            if attrs.keepdims:
                k += 1
        else:
            idx.append(out_idx[k])
            k += 1
    return idx, axes


def _reduction(reducer, name, post=None, prep=None):
    def fcompute(attrs, inputs, out_type):
        t = out_tensor_types(out_type)[0]
        shape = out_dims(t)
        x = inputs[0]
        xs = dims(x)
        axes = reduce_axes(len(xs), attrs.axis, attrs.exclude)
        if not axes:
            red = te.compute(shape, lambda *i: x[tuple(i)] if i else x[()], name=name)
        else:
            rvars = [te.reduce_axis((0, xs[a]), name=f"k{a}") for a in axes]

            def body(*i):
                idx, _ = _reduce_index(x, attrs, i, rvars)
                v = x[tuple(idx)]
                if prep is not None:
                    v = prep(v)
                return reducer(v, axis=rvars)

            red = te.compute(shape, body, name=name)
        if post is None:
            return [red]
        count = 1
        for a in axes:
            count *= xs[a]
        return [te.compute(shape, lambda *i: post(red[i] if i else red[()], count, t.dtype),
                           name=name + "_out")]

    return fcompute


def _wide(dtype: str) -> str | None:
    """The 64-bit type an integer mean sums and divides in (None: a float mean)."""
    if dtype.startswith("uint"):
        return "uint64"
    return "int64" if dtype.startswith("int") else None


def _mean_prep(v):
    """An integer mean sums in 64 bits: an int8 mean of a few values no longer wraps (the
    interpreter's, numpy's mean); the result is cast back to the input's dtype."""
    wide = _wide(v.dtype)
    return v if wide is None or v.dtype == wide else E.Cast(wide, v)


def _mean_post(v, count, dtype):
    """The sum ``v`` over ``count`` elements (an int, or a size expression in a symbolic
    kernel: an empty axis gives 0 / 0, NaN, as numpy's mean). An integer mean divides the
    64-bit sum truncating (TVM's integer division) by ``max(count, 1)``: a count that is 0
    at run time gives the empty sum, 0, not a trapping division by zero, so one symbolic
    kernel serves every size."""
    wide = _wide(dtype)
    if wide is None:
        return v / (E.FloatImm(dtype, float(count)) if isinstance(count, int) else
                    E.Cast(dtype, count))
    if isinstance(count, int):
        n = E.IntImm(wide, max(count, 1))
    else:
        n = E.Max(E.Cast(wide, count), E.IntImm(wide, 1))
    return E.Cast(dtype, E.Div(v, n))


def _to_bool(v):
    return v if v.dtype == "bool" else E.NE(v, fconst(0, v.dtype))


_prod = te.comm_reducer(lambda a, b: a * b, lambda t: fconst(1, t), name="prod")
_all = te.comm_reducer(lambda a, b: E.And(a, b), lambda t: E.IntImm("bool", 1), name="all")
_any = te.comm_reducer(lambda a, b: E.Or(a, b), lambda t: E.IntImm("bool", 0), name="any")

compute("sum")(_reduction(te.sum, "sum"))
compute("max")(_reduction(ieee_max, "max"))
compute("min")(_reduction(ieee_min, "min"))
compute("prod")(_reduction(_prod, "prod"))
compute("mean")(_reduction(te.sum, "mean_sum", post=_mean_post, prep=_mean_prep))
compute("all")(_reduction(_all, "all", prep=_to_bool))
compute("any")(_reduction(_any, "any", prep=_to_bool))


@compute("variance")
def _variance(attrs, inputs, out_type):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    x, m = inputs
    xs = dims(x)
    axes = reduce_axes(len(xs), attrs.axis, attrs.exclude)
    count = 1
    for a in axes:
        count *= xs[a]
    rvars = [te.reduce_axis((0, xs[a]), name=f"k{a}") for a in axes]

    def body(*i):
        idx, _ = _reduce_index(x, attrs, i, rvars)
        midx = [E.IntImm("int32", 0) if d in axes else idx[d] for d in range(len(xs))]
        diff = x[tuple(idx)] - m[tuple(midx)]
        return te.sum(diff * diff, axis=rvars)

    sq = te.compute(shape, body, name="variance_sq")
    if isinstance(count, int):
        scale = E.FloatImm(t.dtype, float(max(count - 1 if attrs.unbiased else count, 1)))
    else:  # a symbolic axis (a symbolic kernel): the count at run time (Python's max of a
        # PrimExpr and 1 picked 1, and a variance over an Any axis divided by 1)
        n = count - E.IntImm(count.dtype, 1) if attrs.unbiased else count
        scale = E.Cast(t.dtype, E.Max(n, E.IntImm(count.dtype, 1)))
    return [te.compute(shape, lambda *i: (sq[i] if i else sq[()]) / scale, name="variance")]


def _arg_reduction(kind: str):
    def fcompute(attrs, inputs, out_type):
        from .reduction import arg_reduce

        t = out_tensor_types(out_type)[0]
        x = inputs[0]
        axes = reduce_axes(len(dims(x)), attrs.axis, attrs.exclude)
        return [arg_reduce(kind, x, axes, bool(attrs.keepdims),
                           bool(attrs.select_last_index), t.dtype)]

    return fcompute


compute("argmax")(_arg_reduction("max"))
compute("argmin")(_arg_reduction("min"))

_ = tir_op  # keep the import for computes added here later


@compute("collapse_sum_like")
def _collapse_sum_like(attrs, inputs, out_type):
    """The sum of the input down to the second input's shape (``collapse_sum_to`` with the
    target a tensor's shape: Relay's static pipeline rewrites it so; over symbolic sizes each
    target size is 1 or the input's, ``collapse_sum_onto``)."""
    from .transform_extra import collapse_sum_onto

    target = [E.IntImm("int64", d) if isinstance(d, int) else d
              for d in out_dims(out_tensor_types(out_type)[0])]
    return [collapse_sum_onto(inputs[0], target)]


@compute("collapse_sum_to")
def _collapse_sum_to(attrs, inputs, out_type):
    """The sum of the input down to ``attrs.shape``, undoing a broadcast to the input's shape
    (gradients of broadcast operands)."""
    from .transform_extra import collapse_sum

    target = [E.IntImm("int64", d) for d in out_dims(out_tensor_types(out_type)[0])]
    return [collapse_sum(inputs[0], target)]
