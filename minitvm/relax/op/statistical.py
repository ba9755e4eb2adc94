"""Reductions over axes (sum, mean, max, min, prod, variance, std), with ``keepdims``."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from ._common import (
    UNKNOWN_NDIM,
    fail,
    fmt_sinfo,
    make_tensor,
    normalize_axes,
    shape_expr_values,
    tensor_args,
)
from .base import register_op_rule
from .op_attrs import StatisticalAttrs

__all__ = ["sum", "mean", "max", "min", "prod", "variance", "std"]

#: Reductions without an identity value (an index): over a static zero-size axis they have no
#: result. max / min give their identity (-inf / +inf, an integer type's extremes) there, as
#: they do over an axis empty only at run time (and as Relay's do).
_NO_IDENTITY = ("relax.argmax", "relax.argmin")


def reduce_struct_info(call: Call, x: TensorStructInfo, axes, keepdims: bool,
                       dtype: str) -> StructInfo:
    """Output of reducing ``x`` over ``axes`` (None: all) -- shared with argmax/argmin."""
    norm = normalize_axes(call, x.ndim, axes) if x.ndim != UNKNOWN_NDIM and axes is not None \
        else []
    if keepdims:
        ndim = x.ndim
    elif axes is None:
        ndim = 0
    elif x.ndim == UNKNOWN_NDIM:
        ndim = UNKNOWN_NDIM
    else:
        ndim = x.ndim - len(norm)
    dims = shape_expr_values(x)
    one = IntImm("int64", 1)
    if dims is None:
        if axes is None and keepdims and ndim != UNKNOWN_NDIM:
            return make_tensor([one] * ndim, dtype, vdevice=x.vdevice)
        if ndim == 0:
            return make_tensor([], dtype, vdevice=x.vdevice)
        return make_tensor(None, dtype, ndim, x.vdevice)
    reduced = set(range(x.ndim)) if axes is None else set(norm)
    if call.op.name in _NO_IDENTITY:
        for i in sorted(reduced):
            if isinstance(dims[i], IntImm) and dims[i].value == 0:  # nothing to pick
                fail(call, f"cannot reduce over axis {i} of size 0 of {fmt_sinfo(x)} "
                     f"({call.op.name[len('relax.'):]} has no identity value)")
    out = []
    for i, d in enumerate(dims):
        if i not in reduced:
            out.append(d)
        elif keepdims:
            out.append(one)
    return make_tensor(out, dtype, vdevice=x.vdevice)


def _infer_statistical(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    return reduce_struct_info(call, x, call.attrs.axis, call.attrs.keepdims, x.dtype)


def _axes(axis) -> tuple | None:
    if axis is None:
        return None
    if isinstance(axis, int | IntImm):
        return (int(axis),)
    return tuple(int(a) for a in axis)


def _make(name: str):
    op_name = "relax." + name
    register_op_rule(op_name, _infer_statistical, pattern=OpPattern.COMM_REDUCE, num_inputs=1,
                     arguments=("x",), attrs_type=StatisticalAttrs)

    def f(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
        return Call(Op.get(op_name), [x],
                    StatisticalAttrs(axis=_axes(axis), keepdims=bool(keepdims)))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}`` of ``x`` over ``axis`` (all axes when None)."
    return f


sum = _make("sum")  # noqa: A001 - TVM's names
mean = _make("mean")
max = _make("max")  # noqa: A001
min = _make("min")  # noqa: A001
prod = _make("prod")
variance = _make("variance")
std = _make("std")
