"""Core-ATen reductions and scans onto ``relax.op``: ``sum`` / ``mean`` / ``prod`` / ``amax`` /
``amin`` with torch's accumulation dtypes, ``argmax`` / ``argmin``, ``any``, ``max`` / ``min``
(with indices along a dim), ``count_nonzero``, ``var`` / ``std`` (and ``var_mean``),
``linalg_vector_norm`` and ``cumsum`` / ``cumprod``."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import const
from .context import AtenContext, register, torch_dtype


def _accumulate_dtype(ctx: AtenContext, x, dtype) -> str | None:
    """torch's dtype of a sum or cumsum: ``dtype`` when given, else int64 for integer and bool
    inputs (``mask.sum()`` counts in int64), else the input's own (None)."""
    if dtype is not None:
        return torch_dtype(dtype)
    dt = ctx.dtype(x)
    return "int64" if dt == "bool" or dt.startswith(("int", "uint")) else None


def _reduce(rop, accumulate=False):
    def convert(ctx: AtenContext, args):
        x = args[0]
        if len(args) <= 2:  # sum.default / mean.default: (self, dtype)
            dims, keep, dtype = None, False, args[1] if len(args) > 1 else None
        else:  # .dim variants: (self, dim, keepdim[, dtype])
            dims, keep, dtype = args[1], args[2], args[3] if len(args) > 3 else None
        dt = _accumulate_dtype(ctx, x, dtype) if accumulate else \
            (torch_dtype(dtype) if dtype is not None else None)
        if dt is not None and dt != ctx.dtype(x):
            x = ctx.emit(_op.astype(x, dt))
        dims = [int(d) for d in dims] if dims else None
        return ctx.emit(rop(x, dims, bool(keep)))

    return convert


register("mean.dim", "mean.default")(_reduce(_op.mean))
register("sum.dim_IntList", "sum.default")(_reduce(_op.sum, accumulate=True))
register("amax.default")(_reduce(_op.max))
register("prod.default")(_reduce(_op.prod, accumulate=True))


@register("prod.dim_int")
def _prod_dim(ctx: AtenContext, args):
    """prod.dim_int(self, dim, keepdim, dtype): one axis, where sum and mean take a list
    (Instant-NGP's trilinear corner weights multiply their three factors this way)."""
    return _reduce(_op.prod, accumulate=True)(ctx, [args[0], [args[1]], *args[2:]])


register("amin.default")(_reduce(_op.min))


@register("argmax.default", "argmin.default")
def _argmax(ctx: AtenContext, args):
    fn = _op.argmax if "argmax" in ctx.node.target.__name__ else _op.argmin
    return ctx.emit(fn(args[0], args[1], bool(args[2])))


@register("cumsum.default", "cumprod.default")
def _cumsum(ctx: AtenContext, args):
    x, dim, dtype = args
    fn = _op.cumprod if ctx.node.target.__name__.startswith("cumprod") else _op.cumsum
    return ctx.emit(fn(x, int(dim), _accumulate_dtype(ctx, x, dtype)))


@register("any.dim", "any.dims", "any.default")
def _any(ctx: AtenContext, args):
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    dims = [int(dims)] if isinstance(dims, int) else (
        [int(d) for d in dims] if dims else None)
    keep = bool(args[2]) if len(args) > 2 else False
    flags = _op.astype(_op.not_equal(x, ctx.tensor(0, x)), "int8")
    return ctx.emit(_op.greater(_op.max(flags, dims, keep), const(np.array(0, "int8"))))


@register("max.dim", "min.dim")
def _max_dim(ctx: AtenContext, args):
    x, dim, keep = args[0], int(args[1]) % ctx.ndim(args[0]), bool(args[2])
    is_max = ctx.node.target.__name__.startswith("max")
    vals = ctx.emit((_op.max if is_max else _op.min)(x, [dim], keep))
    idx = ctx.emit((_op.argmax if is_max else _op.argmin)(x, dim, keep))
    return (vals, idx)


@register("max.default", "min.default")
def _max_all(ctx: AtenContext, args):
    is_max = ctx.node.target.__name__.startswith("max")
    return ctx.emit((_op.max if is_max else _op.min)(args[0]))


@register("count_nonzero.default", "count_nonzero.dim_IntList")
def _count_nonzero(ctx: AtenContext, args):
    """``torch.count_nonzero``: the int64 count of non-zero entries over ``dim`` (an int, a
    list, or every axis)."""
    x, n = args[0], ctx.ndim(args[0])
    dim = args[1] if len(args) > 1 else None
    dims = list(range(n)) if dim is None or dim == [] else [
        int(d) % n for d in (dim if isinstance(dim, list | tuple) else [dim])]
    dt = ctx.dtype(x)
    nonzero = ctx.emit(_op.not_equal(x, ctx.emit(const(np.array(0, dt), dt))))
    return ctx.emit(_op.sum(ctx.emit(_op.astype(nonzero, "int64")), dims))


def _static_count(ctx: AtenContext, x, dims) -> int:
    shape = ctx.shape(x)
    sizes = [shape[d] for d in dims]
    if not all(isinstance(s, int) for s in sizes):
        raise ctx.fail("the reduced dims must be static")
    return int(np.prod(sizes))


@register("var.correction", "std.correction", "var.dim", "std.dim")
def _var(ctx: AtenContext, args):
    """Variance / std with any Bessel correction: sum((x - mean)^2) / (N - correction)."""
    return _spread_and_mean(ctx, args)[0]


@register("var_mean.correction", "std_mean.correction", "var_mean.dim", "std_mean.dim")
def _var_mean(ctx: AtenContext, args):
    """``torch.var_mean`` / ``std_mean``: the spread as ``_var`` takes it and the mean it was
    centred by, over the same dims (keepdim or squeezed alike)."""
    return _spread_and_mean(ctx, args)


def _spread_and_mean(ctx: AtenContext, args):
    """(std or variance, as the target's name says; the mean) of a var / std / var_mean /
    std_mean call: (x, dim, unbiased, keepdim) for the ``.dim`` overloads, (x, dim, *,
    correction, keepdim) for ``.correction``."""
    x, dims = args[0], args[1] if len(args) > 1 else None
    n = ctx.ndim(x)
    dims = [int(d) % n for d in dims] if dims else list(range(n))
    name = ctx.node.target.__name__
    if name.endswith("dim"):  # (x, dim, unbiased, keepdim)
        correction = 1 if len(args) < 3 or args[2] is None else int(bool(args[2]))
    else:  # (x, dim, *, correction, keepdim)
        correction = 1 if len(args) < 3 or args[2] is None else args[2]
    keep = bool(args[3]) if len(args) > 3 and args[3] is not None else False
    count = max(_static_count(ctx, x, dims) - correction, 0)
    mean = ctx.emit(_op.mean(x, dims, True))
    cen = ctx.emit(_op.subtract(x, mean))
    out = _op.divide(_op.sum(_op.multiply(cen, cen), dims, keep), ctx.tensor(float(count), x))
    spread = ctx.emit(_op.sqrt(out) if name.startswith("std") else out)
    return spread, (mean if keep else ctx.emit(_op.squeeze(mean, dims)))


@register("linalg_vector_norm.default")
def _vector_norm(ctx: AtenContext, args):
    x, p, dims, keep, dtype = (list(args) + [None] * 5)[:5]
    if dtype is not None:
        x = ctx.emit(_op.astype(x, torch_dtype(dtype)))
    dims = [int(d) for d in dims] if dims else None
    keep = bool(keep)
    p = 2.0 if p is None else float(p)
    a = _op.abs(x)
    if p == 2:
        out = _op.sqrt(_op.sum(_op.multiply(x, x), dims, keep))
    elif p == 1:
        out = _op.sum(a, dims, keep)
    elif p == np.inf:
        out = _op.max(a, dims, keep)
    elif p == -np.inf:
        out = _op.min(a, dims, keep)
    elif p == 0:
        out = _op.sum(_op.astype(_op.not_equal(x, ctx.tensor(0.0, x)), ctx.dtype(x)), dims, keep)
    else:
        s = _op.sum(_op.power(a, ctx.tensor(p, x)), dims, keep)
        out = _op.power(s, ctx.tensor(1.0 / p, x))
    return ctx.emit(out)
