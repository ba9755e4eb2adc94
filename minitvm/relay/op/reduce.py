"""Reduction operators: sum, mean, max, min, prod, all, any, argmax/argmin, variance and friends.

The numpy references (``FNumpy``) come from ``minitvm.topi.reference.reduce``.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ..expr import Call, Tuple, TupleWrapper
from .op import define_op
from .type_relations import (
    arg_reduce_rel,
    check_num_args,
    named,
    reduce_axes,
    reduce_rel,
    reduce_shape,
    tensor_arg,
    type_str,
)

__all__ = [
    "ReduceAttrs", "ArgReduceAttrs", "VarianceAttrs", "sum", "mean", "max", "min", "prod", "all",
    "any", "argmax", "argmin", "variance", "std", "mean_variance", "mean_std", "logsumexp",
]


class ReduceAttrs(Attrs):
    """Attributes of sum/mean/max/min/prod/all/any."""

    __slots__ = ()
    _fields = (("axis", None), ("keepdims", False), ("exclude", False))


class ArgReduceAttrs(Attrs):
    """Attributes of argmax/argmin."""

    __slots__ = ()
    _fields = (("axis", None), ("keepdims", False), ("select_last_index", False),
               ("exclude", False))


class VarianceAttrs(Attrs):
    """Attributes of variance (inputs: data and its mean)."""

    __slots__ = ()
    _fields = (("axis", None), ("keepdims", False), ("exclude", False), ("unbiased", False))


_REDUCERS = ("sum", "mean", "max", "min", "prod", "all", "any")

for _name in _REDUCERS:
    define_op(_name, named(reduce_rel, _name), pattern=OpPattern.COMM_REDUCE,
              attrs_type=ReduceAttrs, num_inputs=1,
              describe=f"Reduce the data with {_name} over the given axes.")

for _name in ("argmax", "argmin"):
    define_op(_name, named(arg_reduce_rel, _name), pattern=OpPattern.COMM_REDUCE,
              attrs_type=ArgReduceAttrs, num_inputs=1,
              describe=f"Indices of the {_name[3:]}imum values over the given axes.")


def _variance_rel(arg_types, attrs):
    check_num_args("variance", arg_types, 2)
    data = tensor_arg(arg_types, 0, "variance")
    mean_t = tensor_arg(arg_types, 1, "variance")
    axes = reduce_axes(len(data.shape), attrs.axis, attrs.exclude, "variance")
    expect = reduce_shape(data.shape, axes, True)
    if len(mean_t.shape) != len(expect):
        raise TypeError(f"variance: the mean {type_str(mean_t)} must have the kept-dims shape "
                        f"of the reduction of {type_str(data)}")
    return TensorType(reduce_shape(data.shape, axes, attrs.keepdims), data.dtype)


define_op("variance", _variance_rel, pattern=OpPattern.COMM_REDUCE, attrs_type=VarianceAttrs,
          num_inputs=2, describe="Variance of the data around a given mean over the given axes.")


# --------------------------------------------------------------------------- constructors
def _axis_list(axis):
    if axis is None:
        return None
    if isinstance(axis, int | np.integer):
        return (int(axis),)
    return tuple(int(a) for a in axis)


def _reduce(name):
    def ctor(data, axis=None, keepdims: bool = False, exclude: bool = False) -> Call:
        attrs = ReduceAttrs(axis=_axis_list(axis), keepdims=bool(keepdims), exclude=bool(exclude))
        return Call(Op.get(name), [data], attrs)

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = f"Compute {name} over the given axes (all when axis is None)."
    return ctor


sum = _reduce("sum")  # noqa: A001 - TVM's name
mean = _reduce("mean")
max = _reduce("max")  # noqa: A001
min = _reduce("min")  # noqa: A001
prod = _reduce("prod")
all = _reduce("all")  # noqa: A001
any = _reduce("any")  # noqa: A001


def _arg_reduce(name):
    def ctor(data, axis=None, keepdims: bool = False, exclude: bool = False,
             select_last_index: bool = False) -> Call:
        attrs = ArgReduceAttrs(axis=_axis_list(axis), keepdims=bool(keepdims),
                               select_last_index=bool(select_last_index), exclude=bool(exclude))
        return Call(Op.get(name), [data], attrs)

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = f"Indices of the {name[3:]}imum elements over the given axes."
    return ctor


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


def variance(data, axis=None, keepdims: bool = False, exclude: bool = False,
             unbiased: bool = False) -> Call:
    """Variance over the given axes (``unbiased`` divides by N-1)."""
    m = mean(data, axis, True, exclude)
    attrs = VarianceAttrs(axis=_axis_list(axis), keepdims=bool(keepdims), exclude=bool(exclude),
                          unbiased=bool(unbiased))
    return Call(Op.get("variance"), [data, m], attrs)


def std(data, axis=None, keepdims: bool = False, exclude: bool = False,
        unbiased: bool = False) -> Call:
    """Standard deviation: ``sqrt(variance(...))``."""
    from .tensor import sqrt

    return sqrt(variance(data, axis, keepdims, exclude, unbiased))


def mean_variance(data, axis=None, keepdims: bool = False, exclude: bool = False,
                  unbiased: bool = False) -> TupleWrapper:
    """(mean, variance) over the given axes, as a TupleWrapper."""
    m = mean(data, axis, True, exclude)
    attrs = VarianceAttrs(axis=_axis_list(axis), keepdims=bool(keepdims), exclude=bool(exclude),
                          unbiased=bool(unbiased))
    var = Call(Op.get("variance"), [data, m], attrs)
    if not keepdims:
        m = mean(data, axis, False, exclude)
    return TupleWrapper(Tuple([m, var]), 2)


def mean_std(data, axis=None, keepdims: bool = False, exclude: bool = False) -> TupleWrapper:
    """(mean, std) over the given axes, as a TupleWrapper."""
    from .tensor import sqrt

    m, var = mean_variance(data, axis, keepdims, exclude)
    return TupleWrapper(Tuple([m, sqrt(var)]), 2)


def logsumexp(data, axis=None, keepdims: bool = False) -> Call:
    """``log(sum(exp(x)))`` computed stably around the maximum."""
    from .tensor import exp, log, subtract
    from .transform import squeeze

    max_x = max(data, axis, True)
    out = log(sum(exp(subtract(data, max_x)), axis, True)) + max_x
    if not keepdims:
        out = squeeze(out, _axis_list(axis)) if axis is not None else squeeze(out)
    return out
