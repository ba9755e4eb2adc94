"""ATen tensor factories onto Relay: ``arange``, ``zeros`` / ``ones`` / ``full`` / ``empty``
(and their ``new_`` and ``_like`` forms), ``linspace``, ``eye``, ``scalar_tensor`` and
``tril_indices`` / ``triu_indices``."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from .aten import DType, register
from .aten_symbolic import _to_python


def _value_dtype(dtype, values) -> str:
    if isinstance(dtype, DType):
        return str(dtype)
    return "int64" if all(isinstance(v, int) for v in values) else "float32"


@register("arange")
def _arange(ctx, args):
    n = len(args)
    if n <= 5:
        start, end, step, dtype = 0, args[0], 1, args[1] if n > 1 else None
    elif n == 6:
        start, end, step, dtype = args[0], args[1], 1, args[2]
    else:
        start, end, step, dtype = args[0], args[1], args[2], args[3]
    vals = [_to_python(ctx, [v]) for v in (start, end, step)]
    dt = _value_dtype(dtype, vals)
    return _expr.const(np.arange(*vals).astype(dt), dt)


def _full(shape, value, dtype):
    dt = _value_dtype(dtype, [value])
    return _expr.const(np.full([int(s) for s in shape], value, dtype=dt), dt)


@register("zeros", "ones", "full", "new_zeros", "new_ones", "new_full", "empty", "new_empty")
def _creation(ctx, args):
    name = ctx.op_name
    if name.startswith("new_"):
        like, args = args[0], args[1:]
        dtype = next((a for a in args[1:] if isinstance(a, DType)), DType(ctx.dtype(like)))
    else:
        dtype = next((a for a in args[1:] if isinstance(a, DType)), None)
        dtype = dtype or DType("float32")
    value = {"zeros": 0, "ones": 1, "empty": 0}.get(name.replace("new_", ""))
    if value is None:
        value = _to_python(ctx, [args[1]])
    return _full(args[0], value, dtype)


@register("linspace")
def _linspace(ctx, args):
    """``torch.linspace(start, end, steps, dtype=...)`` (a KAN's knot grid made in forward):
    a constant, float32 unless a dtype is given, computed as torch does (float arithmetic,
    the second half stepped back from ``end``)."""
    start, end, steps = (_to_python(ctx, [v]) for v in args[:3])
    dtype = args[3] if len(args) > 3 else None
    dt = str(dtype) if isinstance(dtype, DType) else "float32"
    steps = int(steps)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    k = np.arange(steps)
    half = steps // 2
    vals = np.where(k < half, start + step * k, end - step * (steps - 1 - k))
    return _expr.const(vals.astype(dt), dt)


@register("eye")
def _eye(ctx, args):
    """``torch.eye(n[, m])`` (a Glow LU 1x1 conv adds it to the masked lower factor): a
    constant; the sizes may come from input shapes, which the trace fixes."""
    sizes = args[:2] if len(args) == 6 else args[:1]  # eye.m(n, m, dtype, layout, device, pin)
    dims = [int(_to_python(ctx, [v])) for v in sizes]
    dtype = args[len(sizes)]
    dt = str(dtype) if isinstance(dtype, DType) else "float32"
    return _expr.const(np.eye(*dims, dtype=dt), dt)


@register("zeros_like", "ones_like", "full_like")
def _like(ctx, args):
    x = args[0]
    value = {"zeros_like": 0, "ones_like": 1}.get(ctx.op_name)
    if value is None:
        value = _to_python(ctx, [args[1]])
    dtype = next((a for a in args[1:] if isinstance(a, DType)), DType(ctx.dtype(x)))
    return _full(ctx.shape(x), value, dtype)


@register("scalar_tensor")
def _scalar_tensor(ctx, args):
    value = _to_python(ctx, [args[0]])
    dtype = next((a for a in args[1:] if isinstance(a, DType)), DType("float32"))
    return _expr.const(np.array(value, dtype=str(dtype)), str(dtype))


@register("tril_indices", "triu_indices")
def _tri_indices(ctx, args):
    """``tril_indices`` / ``triu_indices(row, col, offset=0, *, dtype=int64)`` (AFM's pairs
    of fields): the [2, N] row and column indices of the lower / upper triangle in row-major
    order, a constant (the sizes are numbers, or input sizes the trace fixes)."""
    row, col = (int(_to_python(ctx, [v])) for v in args[:2])
    offset = int(_to_python(ctx, [args[2]])) if len(args) > 2 and args[2] is not None else 0
    dtype = next((a for a in args[3:] if isinstance(a, DType)), DType("int64"))
    if row < 0 or col < 0:
        raise ctx.fail(f"row and col must be non-negative, got {row} and {col}")
    pick = np.tril_indices if ctx.op_name.startswith("tril") else np.triu_indices
    rows, cols = pick(row, offset, col)
    return _expr.const(np.stack([rows, cols]).astype(str(dtype)), str(dtype))
