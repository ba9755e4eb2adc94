"""ATen's numeric helpers onto Relay, as torch's reference implementations compute them:
``aminmax`` (both extremes at once), ``trapezoid`` / ``cumulative_trapezoid`` (a spacing or
sample points ``x``), ``cov`` / ``corrcoef`` (variables in rows, a correction, no frequency
or importance weights), ``renorm`` (sub-tensors scaled down to a maximum norm),
``cartesian_prod``, ``block_diag`` and ``vander``."""

from __future__ import annotations

import functools

import numpy as np

from ....frontend_common.torch_promote import tensors_dtype
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _is_expr, _norm_dim, _scalar_like, register
from .aten_extra import _opt
from .aten_reduce import _vector_norm


@register("aminmax")
def _aminmax(ctx, args):
    """(input, dim=None, keepdim=False) -> (min, max): over every entry when dim is None."""
    x = args[0]
    dim, keep = _opt(args, 1, None), bool(_opt(args, 2, False))
    axis = None if dim is None else [_norm_dim(int(dim), len(ctx.shape(x)))]
    return _op.min(x, axis=axis, keepdims=keep), _op.max(x, axis=axis, keepdims=keep)


def _trapezoid_parts(ctx, y, spacing, dim: int):
    """(``dx * (y[1:] + y[:-1])`` along ``dim``, the 0.5 to scale its sum by), ``spacing`` a
    number or a tensor of sample points (1-D along ``dim``, or y's rank)."""
    nd = len(ctx.shape(y))
    n = ctx.shape(y)[dim]
    pair = _op.add(_op.strided_slice(y, [1], [n], axes=[dim]),
                   _op.strided_slice(y, [0], [n - 1], axes=[dim]))
    if _is_expr(spacing):
        x = spacing
        if ctx.dtype(x) != ctx.dtype(y):
            x = _op.cast(x, ctx.dtype(y))
        xd = len(ctx.shape(x))
        x_dim = 0 if xd == 1 else dim
        m = ctx.shape(x)[x_dim]
        dx = _op.subtract(_op.strided_slice(x, [1], [m], axes=[x_dim]),
                          _op.strided_slice(x, [0], [m - 1], axes=[x_dim]))
        if xd == 1 and nd > 1:
            dx = _op.reshape(dx, [-1 if a == dim else 1 for a in range(nd)])
        return _op.multiply(dx, pair)
    return _op.multiply(pair, _scalar_like(ctx, float(spacing), y))


def _trapezoid_args(ctx, args):
    y = args[0]
    if not ctx.dtype(y).startswith("float"):
        y = _op.cast(y, "float32")
    spacing = _opt(args, 1, 1.0)
    dim = _norm_dim(int(_opt(args, 2, -1)), len(ctx.shape(y)))
    if ctx.shape(y)[dim] < 2:
        raise ctx.fail(f"needs at least 2 samples along dim {dim}, got {ctx.shape(y)[dim]}")
    return y, spacing, dim


@register("trapezoid", "trapz")
def _trapezoid(ctx, args):
    y, spacing, dim = _trapezoid_args(ctx, args)
    parts = _trapezoid_parts(ctx, y, spacing, dim)
    return _op.multiply(_op.sum(parts, axis=[dim]), _scalar_like(ctx, 0.5, parts))


@register("cumulative_trapezoid")
def _cumulative_trapezoid(ctx, args):
    y, spacing, dim = _trapezoid_args(ctx, args)
    parts = _trapezoid_parts(ctx, y, spacing, dim)
    return _op.cumsum(_op.multiply(parts, _scalar_like(ctx, 0.5, parts)), axis=dim)


def _cov(ctx, x, correction):
    if len(ctx.shape(x)) == 1:
        x = _op.expand_dims(x, 0)
    if len(ctx.shape(x)) != 2:
        raise ctx.fail(f"expects a 1-D or 2-D input, got {len(ctx.shape(x))}-D")
    if not ctx.dtype(x).startswith("float"):
        x = _op.cast(x, "float32")
    n = ctx.shape(x)[1]
    centred = _op.subtract(x, _op.mean(x, axis=[1], keepdims=True))
    prod = _nn.dense(centred, centred)
    c = _op.divide(prod, _scalar_like(ctx, float(max(n - correction, 0)), prod))
    return c


@register("cov")
def _cov_op(ctx, args):
    """(input, correction=1, fweights=None, aweights=None): variables in rows, observations
    in columns; a 1 x 1 result squeezed to 0-d as torch does."""
    if _opt(args, 2, None) is not None or _opt(args, 3, None) is not None:
        raise ctx.fail("fweights / aweights are not supported")
    c = _cov(ctx, args[0], int(_opt(args, 1, 1)))
    return _op.reshape(c, ()) if ctx.shape(c) == (1, 1) else c


@register("corrcoef")
def _corrcoef(ctx, args):
    """The covariance divided by the outer product of the standard deviations, clipped to
    [-1, 1] (a single variable gives c / c)."""
    c = _cov(ctx, args[0], 1)
    if ctx.shape(c) == (1, 1):
        c = _op.reshape(c, ())
        return _op.divide(c, c)
    n = ctx.shape(c)[0]
    eye = _expr.const(np.eye(n, dtype=ctx.dtype(c)), ctx.dtype(c))
    std = _op.sqrt(_op.sum(_op.multiply(c, eye), axis=[1]))
    c = _op.divide(c, _op.expand_dims(std, 1))
    c = _op.divide(c, _op.expand_dims(std, 0))
    return _op.clip(c, -1.0, 1.0)


@register("renorm", "renorm_")
def _renorm(ctx, args):
    """(input, p, dim, maxnorm): each slice along ``dim`` whose p-norm passes maxnorm scaled
    by ``maxnorm / (norm + 1e-7)``."""
    x, p, dim, maxnorm = args[0], float(args[1]), int(args[2]), float(args[3])
    nd = len(ctx.shape(x))
    dim = _norm_dim(dim, nd)
    norm = _vector_norm(ctx, x, p, [a for a in range(nd) if a != dim], True)
    cap = _scalar_like(ctx, maxnorm, x)
    factor = _op.where(_op.greater(norm, cap),
                       _op.divide(cap, _op.add(norm, _scalar_like(ctx, 1e-7, x))),
                       _scalar_like(ctx, 1.0, x))
    return _op.multiply(x, factor)


@register("cartesian_prod")
def _cartesian_prod(ctx, args):
    """cartesian_prod(1-D tensors) -> [prod(n_i), k]: every combination in row-major order
    (itertools.product's); one tensor is returned as it is."""
    tensors = list(args[0])
    shapes = [ctx.shape(t) for t in tensors]
    if any(len(s) != 1 for s in shapes):
        raise ctx.fail(f"expects 1-D tensors, got shapes {shapes}")
    if len({ctx.dtype(t) for t in tensors}) != 1:
        raise ctx.fail(f"expects tensors of one dtype, got {[ctx.dtype(t) for t in tensors]}")
    if len(tensors) == 1:
        return tensors[0]
    full = [s[0] for s in shapes]
    k = len(tensors)
    columns = [_op.reshape(_op.broadcast_to(
        _op.reshape(t, [-1 if a == i else 1 for a in range(k)]), full), [-1])
        for i, t in enumerate(tensors)]
    return _op.stack(columns, 1)


@register("block_diag")
def _block_diag(ctx, args):
    """block_diag(tensors): 0-D, 1-D (one row) and 2-D blocks down the diagonal, zeros
    elsewhere, in the blocks' promoted dtype."""
    blocks = []
    for t in args[0]:
        nd = len(ctx.shape(t))
        if nd > 2:
            raise ctx.fail(f"expects tensors of at most 2 dims, got {nd}")
        blocks.append(_op.reshape(t, (1, 1)) if nd == 0 else
                      _op.expand_dims(t, 0) if nd == 1 else t)
    dtype = functools.reduce(tensors_dtype, [ctx.dtype(b) for b in blocks])
    widths = [ctx.shape(b)[1] for b in blocks]
    total, left, rows = sum(widths), 0, []
    for b, w in zip(blocks, widths, strict=True):
        if ctx.dtype(b) != dtype:
            b = _op.cast(b, dtype)
        rows.append(_nn.pad(b, [(0, 0), (left, total - left - w)]))
        left += w
    return _op.concatenate(rows, 0)


@register("vander")
def _vander(ctx, args):
    """vander(x, N=None, increasing=False) -> [n, N]: the powers x^0 .. x^(N-1) as torch
    builds them (a cumulative product of x, so integer powers wrap alike), highest first
    unless ``increasing``; integers widen to int64 as torch's does."""
    x = args[0]
    if len(ctx.shape(x)) != 1:
        raise ctx.fail(f"expects a 1-D input, got {len(ctx.shape(x))}-D")
    n = ctx.shape(x)[0]
    cols = int(_opt(args, 1, n))
    if cols < 0:
        raise ctx.fail(f"N must be non-negative, got {cols}")
    dtype = tensors_dtype(ctx.dtype(x), "int64")
    if ctx.dtype(x) != dtype:
        x = _op.cast(x, dtype)
    ones = _expr.const(np.ones((n, min(cols, 1)), dtype), dtype)
    if cols <= 1:
        out = ones
    else:
        powers = _op.cumprod(_op.broadcast_to(_op.expand_dims(x, 1), (n, cols - 1)), axis=1)
        out = _op.concatenate([ones, powers], 1)
    return out if bool(_opt(args, 2, False)) or cols == 0 else _op.reverse(out, 1)
