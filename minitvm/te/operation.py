"""``te.placeholder``, ``te.compute``, ``te.reduce_axis`` and the reducers ``te.sum/max/min``."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from ..tir import op as tir_op
from ..tir.expr import (
    CommReducer,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    SizeVar,
    Var,
    _to_expr,
)
from ..tir.expr import _unify as E_unify
from .tensor import ComputeOp, PlaceholderOp, Tensor


def _shape(shape) -> tuple:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    return tuple(_to_expr(s) for s in shape)


def var(name: str = "tindex", dtype: str = "int32", span=None) -> Var:
    """A new scalar variable."""
    return Var(name, dtype)


def size_var(name: str = "size", dtype: str = "int32", span=None) -> SizeVar:
    """A new non-negative scalar variable (a symbolic size)."""
    return SizeVar(name, dtype)


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of ``shape`` and ``dtype``."""
    shape = _shape(shape)
    op = PlaceholderOp(name, shape, dtype)
    t = Tensor(op, 0, shape, dtype)
    op._outputs = [t]
    return t


def reduce_axis(dom, name: str = "rv", thread_tag: str = "", span=None) -> IterVar:
    """A reduction axis over ``dom`` = ``(lo, hi)`` or a Range."""
    if not isinstance(dom, Range):
        lo, hi = dom
        lo, hi = _to_expr(lo), _to_expr(hi)
        dom = Range.from_min_extent(lo, hi) if lo == 0 else Range(lo, hi)
    return IterVar(dom, Var(name, dom.extent.dtype), IterVar.CommReduce, thread_tag)


def _arg_names(fcompute: Callable, n: int) -> list[str]:
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(n)]
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(params) != n:
        if len(params) != n and not any(p.kind == p.VAR_POSITIONAL for p in params):
            raise ValueError(f"fcompute takes {len(params)} arguments but the shape has {n} "
                             "dimensions")
        return [f"i{k}" for k in range(n)]
    return [p.name for p in params]


def compute(shape, fcompute: Callable, name: str = "compute", tag: str = "", attrs=None,
            varargs_names=None) -> Tensor:
    """A tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``."""
    shape = _shape(shape)
    names = varargs_names or _arg_names(fcompute, len(shape))
    axis = [IterVar(Range.from_min_extent(_to_expr(0, s.dtype), s), Var(nm, s.dtype),
                    IterVar.DataPar) for nm, s in zip(names, shape)]
    body = fcompute(*[iv.var for iv in axis])
    if isinstance(body, (list, tuple)):
        if len(body) != 1:
            raise NotImplementedError("te.compute with several outputs is not supported yet")
        body = body[0]
    body = _to_expr(body)
    op = ComputeOp(name, tag, attrs, axis, body)
    t = Tensor(op, 0, shape, body.dtype)
    op._outputs = [t]
    return t


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reduce") -> Callable:
    """Make a reducer (``te.sum``-like) from a combiner and an identity element."""

    def reducer(expr, axis, where=None, init=None, *args):
        if isinstance(axis, (PrimExpr, int, float)):  # te.max(a, b): elementwise
            return _to_expr(fcombine(*E_unify(expr, axis)))
        expr = _to_expr(expr)
        axes = [axis] if isinstance(axis, IterVar) else list(axis)
        lhs, rhs = Var("x", expr.dtype), Var("y", expr.dtype)
        result = _to_expr(fcombine(lhs, rhs))
        ident = _to_expr(fidentity(expr.dtype), expr.dtype)
        combiner = CommReducer([lhs], [rhs], [result], [ident])
        inits = [] if init is None else [_to_expr(init, expr.dtype)]
        return Reduce(combiner, [expr], axes, where, 0, inits)

    reducer.__name__ = name
    return reducer


sum = comm_reducer(lambda x, y: x + y, lambda t: _to_expr(0, t), name="sum")  # noqa: A001
min = comm_reducer(tir_op.min, tir_op.max_value, name="min")  # noqa: A001
max = comm_reducer(tir_op.max, tir_op.min_value, name="max")  # noqa: A001
