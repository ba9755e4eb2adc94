"""Core-ATen tensor factories onto Relax constants or ``relax.op``: ``full`` / ``full_like``,
``arange`` (of symbolic bounds too), ``scalar_tensor`` and ``tril_indices`` / ``triu_indices``."""

from __future__ import annotations

import numpy as np

from ....ir.prim_expr import PrimExpr
from ... import op as _op
from ...expr import const
from .context import AtenContext, register, torch_dtype


@register("full.default")
def _full(ctx: AtenContext, args):
    size, value, dtype = args[0], args[1], args[2]
    dtype = torch_dtype(dtype) if dtype is not None else (
        "float32" if isinstance(value, float) else "int64")
    if all(isinstance(d, int) for d in size):
        return const(np.full([int(d) for d in size], value, dtype=dtype))
    return ctx.emit(_op.full(ctx.shape_expr(list(size)), const(np.array(value, dtype)), dtype))


@register("arange.start_step", "arange.default", "arange.start")
def _arange(ctx: AtenContext, args):
    name = ctx.node.target.__name__
    if name.endswith("default"):
        start, end, step, dtype = 0, args[0], 1, args[1]
    elif name.endswith("start_step"):
        start, end, step, dtype = args[0], args[1], args[2], args[3]
    else:
        start, end, step, dtype = args[0], args[1], 1, args[2]
    symbolic = any(isinstance(v, PrimExpr) for v in (start, end, step))

    def is_int(v):
        if isinstance(v, PrimExpr):
            return v.dtype.startswith("int")
        return isinstance(v, int)

    dtype = torch_dtype(dtype) if dtype is not None else (
        "int64" if all(is_int(v) for v in (start, end, step)) else "float32")
    if symbolic:  # torch.arange(x.shape[1]) of a dynamic dim: R.arange of R.Prim bounds
        return ctx.emit(_op.arange(start, end, step, dtype))
    return const(np.arange(start, end, step, dtype=dtype))


@register("scalar_tensor.default")
def _scalar_tensor(ctx: AtenContext, args):
    value, dtype = args[0], args[1] if len(args) > 1 else None
    dtype = torch_dtype(dtype) if dtype is not None else "float32"
    return const(np.array(value, dtype=dtype))


@register("full_like.default")
def _full_like(ctx: AtenContext, args):
    x, value, dtype = args[0], args[1], args[2] if len(args) > 2 else None
    dtype = torch_dtype(dtype) if dtype is not None else ctx.dtype(x)
    return ctx.emit(_op.full_like(x, const(np.array(value, dtype)), dtype))


@register("tril_indices.default", "triu_indices.default")
def _tri_indices(ctx: AtenContext, args):
    """tril_indices / triu_indices(row, col, offset=0, *, dtype=int64): the [2, N] row and
    column indices of the lower / upper triangle in row-major order, a constant (every
    argument is a number)."""
    row, col = int(args[0]), int(args[1])
    offset = int(args[2]) if len(args) > 2 and args[2] is not None else 0
    dtype = args[3] if len(args) > 3 and args[3] is not None else "int64"
    # the schema's default arrives as c10's ScalarType code (4: long), a keyword as a dtype
    dtype = {3: "int32", 4: "int64"}.get(dtype, dtype) if isinstance(dtype, int) else dtype
    dtype = dtype if isinstance(dtype, str) else torch_dtype(dtype)
    if row < 0 or col < 0:
        raise ctx.fail(f"row and col must be non-negative, got {row} and {col}")
    lower = ctx.node.target.__name__.startswith("tril")
    pick = np.tril_indices if lower else np.triu_indices
    rows, cols = pick(row, offset, col)
    return const(np.stack([rows, cols]).astype(dtype))
