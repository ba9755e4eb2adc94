"""ATen reductions and scans onto Relay: ``sum`` / ``mean`` / ``amax`` / ``amin`` with the
accumulation dtypes torch gives, ``argmax`` / ``argmin``, ``max`` / ``min`` (all, along a dim with
indices, or elementwise), ``count_nonzero``, ``cumsum`` / ``cumprod``, ``std`` / ``var`` (and their
``_mean`` forms), vector norms (``linalg_vector_norm``, ``norm``) and ``logsumexp``."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common.torch_promote import true_divide_dtype
from ... import expr as _expr
from ... import op as _op
from .aten import DType, _is_expr, _norm_dim, _pair, _scalar_like, register, torch_dtype


def _dims(arg, nd):
    if arg is None or (isinstance(arg, list | tuple) and not arg):
        return None
    arg = arg if isinstance(arg, list | tuple) else [arg]
    return [_norm_dim(d, nd) for d in arg]


def _accumulate_dtype(ctx, x, args) -> str | None:
    """The dtype torch sums (sum, cumsum) in: the ``dtype`` argument, else int64 for integer and
    bool inputs (``mask.sum()`` counts in int64, never in bool), else the input's own."""
    given = next((str(a) for a in args[1:] if isinstance(a, DType)), None)
    if given is not None:
        return given
    dt = ctx.dtype(x)
    return "int64" if dt == "bool" or dt.startswith(("int", "uint")) else None


def _reduce(fn, accumulate=False):
    def convert(ctx, args):
        x = args[0]
        if accumulate or any(isinstance(a, DType) for a in args[1:]):
            dt = _accumulate_dtype(ctx, x, args) if accumulate else \
                next(str(a) for a in args[1:] if isinstance(a, DType))
            x = x if dt is None or dt == ctx.dtype(x) else _op.cast(x, dt)
        rest = [a for a in args[1:] if not isinstance(a, DType)]  # (dim, keepdim)
        dims = _dims(rest[0] if rest and not isinstance(rest[0], bool) else None,
                     len(ctx.shape(x)))
        keep = bool(rest[1]) if len(rest) > 1 and rest[1] is not None else False
        return fn(x, dims, keepdims=keep)

    return convert


register("mean")(_reduce(_op.mean))
register("sum")(_reduce(_op.sum, accumulate=True))
register("amax")(_reduce(_op.max))
register("amin")(_reduce(_op.min))


@register("argmax", "argmin")
def _argmax(ctx, args):
    x = args[0]
    dim = args[1] if len(args) > 1 else None
    keep = bool(args[2]) if len(args) > 2 else False
    fn = _op.argmax if ctx.op_name == "argmax" else _op.argmin
    out = fn(x, None if dim is None else [dim], keepdims=keep)
    return _op.cast(out, "int64")


@register("count_nonzero")
def _count_nonzero(ctx, args):
    """``torch.count_nonzero(x, dim=None)``: the int64 count of non-zero entries over ``dim``
    (an int, a list, or every axis)."""
    x = args[0]
    nd = len(ctx.shape(x))
    dims = _dims(args[1] if len(args) > 1 else None, nd) or list(range(nd))
    dt = ctx.dtype(x)
    zero = _expr.const(np.array(0, "bool" if dt == "bool" else dt), dt)
    return _op.sum(_op.cast(_op.not_equal(x, zero), "int64"), dims)


@register("cumsum", "cumprod")
def _cumsum(ctx, args):
    """(input, dim, dtype): Relay's cumsum or cumprod (one pass per row, ``schedule/scan.py``),
    in torch's accumulation dtype (int64 for integer and bool inputs)."""
    x, dim = args[0], args[1]
    dim = _norm_dim(dim, len(ctx.shape(x)))
    if len(args) > 2 and args[2] is not None and not isinstance(args[2], DType):
        args = [*args[:2], DType(torch_dtype(args[2]))]
    dtype = _accumulate_dtype(ctx, x, args[:1] + list(args[2:]))
    fn = _op.cumprod if ctx.op_name == "cumprod" else _op.cumsum
    return fn(x, axis=dim, dtype=dtype)


@register("max", "min")
def _max_min(ctx, args):
    """max(x) reduces all; max(x, dim, keepdim) -> (values, indices); max(x, other) elementwise."""
    x = args[0]
    is_max = ctx.op_name == "max"
    if len(args) == 1:
        return (_op.max if is_max else _op.min)(x)
    if _is_expr(args[1]):  # (two tensors: promoted as any binary op's)
        return (_op.maximum if is_max else _op.minimum)(*_pair(ctx, x, args[1]))
    dim = _norm_dim(args[1], len(ctx.shape(x)))
    keep = bool(args[2]) if len(args) > 2 else False
    vals = (_op.max if is_max else _op.min)(x, [dim], keepdims=keep)
    idx = (_op.argmax if is_max else _op.argmin)(x, [dim], keepdims=keep)
    return vals, _op.cast(idx, "int64")


@register("std", "var")
def _std_var(ctx, args):
    return _spread_and_mean(ctx, args, ctx.op_name == "std")[0]


@register("std_mean", "var_mean")
def _std_var_mean(ctx, args):
    """``torch.var_mean`` / ``std_mean`` (the spread as ``var`` / ``std`` take it, then the
    mean over the same axes): one centring shared by both results."""
    return _spread_and_mean(ctx, args, ctx.op_name == "std_mean")


def _spread_and_mean(ctx, args, std: bool):
    """(standard deviation if ``std`` else variance, mean) over the axes of a std / var /
    std_mean / var_mean call, in any of their schemas: (x, unbiased), (x, dim, unbiased,
    keepdim), (x, dim, correction, keepdim)."""
    x = args[0]
    nd = len(ctx.shape(x))
    if len(args) == 2 and isinstance(args[1], bool):  # std(x, unbiased)
        dim, correction, keep = None, int(args[1]), False
    else:
        dim = args[1] if len(args) > 1 else None
        corr = args[2] if len(args) > 2 else None
        keep = bool(args[3]) if len(args) > 3 and args[3] is not None else False
        correction = 1 if corr is None else (int(corr) if isinstance(corr, bool) else corr)
    dims = _dims(dim, nd) or list(range(nd))
    n = int(np.prod([ctx.shape(x)[d] for d in dims]))
    mean = _op.mean(x, dims, keepdims=True)
    cen = _op.subtract(x, mean)
    out = _op.divide(_op.sum(_op.multiply(cen, cen), dims, keepdims=keep),
                     _scalar_like(ctx, max(n - correction, 0), x))
    return (_op.sqrt(out) if std else out), (mean if keep else _op.squeeze(mean, dims))


def _vector_norm(ctx, x, p, dim, keep):
    dims = _dims(dim, len(ctx.shape(x)))
    p = 2.0 if p is None else float(p)
    if p == 2:
        return _op.sqrt(_op.sum(_op.multiply(x, x), dims, keepdims=keep))
    a = _op.abs(x)
    if p == 1:
        return _op.sum(a, dims, keepdims=keep)
    if p == math.inf:
        return _op.max(a, dims, keepdims=keep)
    if p == -math.inf:
        return _op.min(a, dims, keepdims=keep)
    if p == 0:
        return _op.sum(_op.cast(_op.not_equal(x, _scalar_like(ctx, 0, x)), ctx.dtype(x)), dims,
                       keepdims=keep)
    s = _op.sum(_op.power(a, _scalar_like(ctx, p, x)), dims, keepdims=keep)
    return _op.power(s, _scalar_like(ctx, 1.0 / p, x))


@register("linalg_vector_norm")
def _linalg_vector_norm(ctx, args):
    x, p, dim, keep = (list(args) + [None] * 4)[:4]
    if len(args) > 4 and args[4] is not None:
        x = _op.cast(x, torch_dtype(args[4]))
    return _vector_norm(ctx, x, p, dim, bool(keep))


@register("norm")
def _norm(ctx, args):
    x, p, dim, keep = (list(args) + [None] * 4)[:4]
    if isinstance(p, str):
        if p != "fro":
            raise ctx.fail(f"norm with p={p!r} is not supported")
        p = 2.0
    return _vector_norm(ctx, x, p, dim, bool(keep))


@register("logsumexp")
def _logsumexp(ctx, args):
    x = args[0]
    if not ctx.dtype(x).startswith("float"):  # (an integer or bool tensor gives float32)
        x = _op.cast(x, true_divide_dtype(ctx.dtype(x)))
    dims = _dims(args[1] if len(args) > 1 else None, len(ctx.shape(x)))
    keep = bool(args[2]) if len(args) > 2 and args[2] is not None else False
    mx = _op.max(x, dims, keepdims=True)
    out = _op.log(_op.sum(_op.exp(_op.subtract(x, mx)), dims, keepdims=True))
    out = _op.add(out, mx)
    return out if keep else _op.squeeze(out, dims if dims is not None else None)
