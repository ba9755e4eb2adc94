"""ATen's numeric helpers onto Relay, as torch's reference implementations compute them:
``aminmax`` (both extremes at once), ``trapezoid`` / ``cumulative_trapezoid`` (a spacing or
sample points ``x``), ``cov`` / ``corrcoef`` (variables in rows, a correction, no frequency
or importance weights), ``renorm`` (sub-tensors scaled down to a maximum norm),
``cartesian_prod``, ``block_diag`` and ``vander``; and ``addcmul`` / ``addcdiv``, ``nanmean``,
``kron``, ``linalg.matrix_norm`` (Frobenius, 1, inf and their negatives), ``frac`` and
``heaviside``, which torch.export decomposes but TorchScript keeps as ATen calls; likewise
``movedim`` / ``moveaxis``, ``tensor_split``, ``float_power``, ``isin``, ``logaddexp2`` and
``linalg_cross`` / ``cross`` (3-vector cross products)."""

from __future__ import annotations

import functools
import math

import numpy as np

from ....frontend_common.torch_promote import tensors_dtype
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _is_expr, _norm_dim, _pair, _scalar_like, register
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


def _pointwise_scaled(combine):
    """``input + value * combine(tensor1, tensor2)`` (addcmul / addcdiv), in the operands'
    promoted dtype."""
    def convert(ctx, args):
        x, t1, t2 = args[0], args[1], args[2]
        value = _opt(args, 3, 1)
        t1, t2 = _pair(ctx, t1, t2)
        term = combine(t1, t2)
        if _is_expr(value) or value != 1:
            term = _op.multiply(*_pair(ctx, term, value))
        return _op.add(*_pair(ctx, x, term))
    return convert


register("addcmul", "addcmul_")(_pointwise_scaled(_op.multiply))
register("addcdiv", "addcdiv_")(_pointwise_scaled(_op.divide))


@register("nanmean")
def _nanmean(ctx, args):
    """The mean of the entries that are not NaN (NaN where all are): (input, dim, keepdim,
    dtype)."""
    x = args[0]
    if len(args) > 3 and args[3] is not None:
        x = _op.cast(x, str(args[3]))
    nd = len(ctx.shape(x))
    dim = _opt(args, 1, None)
    dims = None if dim is None or dim == [] else [
        _norm_dim(int(d), nd) for d in (dim if isinstance(dim, list | tuple) else [dim])]
    keep = bool(_opt(args, 2, False))
    present = _op.logical_not(_op.isnan(x))
    total = _op.sum(_op.where(present, x, _scalar_like(ctx, 0.0, x)), dims, keepdims=keep)
    count = _op.sum(_op.cast(present, ctx.dtype(x)), dims, keepdims=keep)
    return _op.divide(total, count)


@register("kron")
def _kron(ctx, args):
    """Every product ``a[i] * b[j]`` at ``i * b.shape + j`` per axis: both operands raised to
    one rank, interleaved as (a0, 1, a1, 1, ..) x (1, b0, 1, b1, ..), multiplied, merged."""
    a, b = _pair(ctx, args[0], args[1])
    sa, sb = list(ctx.shape(a)), list(ctx.shape(b))
    nd = max(len(sa), len(sb))
    sa, sb = [1] * (nd - len(sa)) + sa, [1] * (nd - len(sb)) + sb
    a = _op.reshape(a, [d for n in sa for d in (n, 1)])
    b = _op.reshape(b, [d for n in sb for d in (1, n)])
    return _op.reshape(_op.multiply(a, b), [m * n for m, n in zip(sa, sb, strict=True)])


@register("linalg_matrix_norm")
def _matrix_norm(ctx, args):
    """(input, ord, dim, keepdim, dtype): "fro", or 1 / -1 (the largest / smallest column sum
    of magnitudes) and inf / -inf (row sums); 2, -2 and "nuc" need singular values."""
    x, order = args[0], _opt(args, 1, "fro")
    if len(args) > 4 and args[4] is not None:
        x = _op.cast(x, str(args[4]))
    nd = len(ctx.shape(x))
    rows, cols = (_norm_dim(int(d), nd) for d in _opt(args, 2, [-2, -1]))
    keep = bool(_opt(args, 3, False))
    if order == "fro":
        return _op.sqrt(_op.sum(_op.multiply(x, x), [rows, cols], keepdims=keep))
    if order in (1, -1, math.inf, -math.inf):
        summed, other = (rows, cols) if order in (1, -1) else (cols, rows)
        sums = _op.sum(_op.abs(x), [summed], keepdims=True)
        pick = _op.max if order > 0 else _op.min
        out = pick(sums, [other], keepdims=True)
        return out if keep else _op.squeeze(out, sorted([rows, cols]))
    raise ctx.fail(f"linalg.matrix_norm with ord={order!r} needs singular values, which the "
                   f"importer does not compute (it takes 'fro', 1, -1, inf and -inf)")


def _rotate3(x, dim: int, by: int):
    """``x``'s size-3 axis ``dim`` rotated left by ``by``: entry ``i`` is ``x[(i + by) % 3]``."""
    head = _op.strided_slice(x, [0], [by], axes=[dim])
    tail = _op.strided_slice(x, [by], [3], axes=[dim])
    return _op.concatenate([tail, head], dim)


def _cross_dim(ctx, shape: list, dim) -> int:
    """The axis of a cross product: ``dim``, else (``cross`` without one) the first of size 3."""
    if dim is None:
        sizes3 = [i for i, n in enumerate(shape) if n == 3]
        if not sizes3:
            raise ctx.fail(f"cross: no axis of size 3 in the broadcast shape {shape}")
        return sizes3[0]
    dim = _norm_dim(int(dim), len(shape))
    if shape[dim] != 3:
        raise ctx.fail(f"cross: axis {dim} of the broadcast shape {shape} has size "
                       f"{shape[dim]}, not 3")
    return dim


def _cross_along(ctx, args, default_dim):
    """``c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}`` along the size-3 axis of the broadcast
    operands, as two left rotations of each (the index arithmetic mod 3 of torch's own
    decomposition)."""
    a, b = _pair(ctx, args[0], args[1])
    sa, sb = list(ctx.shape(a)), list(ctx.shape(b))
    nd = max(len(sa), len(sb))
    sa, sb = [1] * (nd - len(sa)) + sa, [1] * (nd - len(sb)) + sb
    shape = [max(int(m), int(n)) for m, n in zip(sa, sb, strict=True)]
    dim = _cross_dim(ctx, shape, _opt(args, 2, default_dim))
    a = a if sa == shape else _op.broadcast_to(a, shape)
    b = b if sb == shape else _op.broadcast_to(b, shape)
    a1, a2 = _rotate3(a, dim, 1), _rotate3(a, dim, 2)
    b1, b2 = _rotate3(b, dim, 1), _rotate3(b, dim, 2)
    return _op.subtract(_op.multiply(a1, b2), _op.multiply(a2, b1))


@register("linalg_cross")
def _linalg_cross(ctx, args):
    """(input, other, dim=-1)."""
    return _cross_along(ctx, args, -1)


@register("cross")
def _cross(ctx, args):
    """(input, other, dim=None): without ``dim``, the first axis of size 3, as torch's."""
    return _cross_along(ctx, args, None)


@register("frac", "frac_")
def _frac(ctx, args):
    """``x - trunc(x)``: the sign of ``x``, NaN at the infinities."""
    return _op.subtract(args[0], _op.trunc(args[0]))


@register("heaviside", "heaviside_")
def _heaviside(ctx, args):
    """0 below zero (and at NaN), 1 above, ``values`` at zero."""
    x, values = _pair(ctx, args[0], args[1])
    zero = _scalar_like(ctx, 0.0, x)
    step = _op.where(_op.greater(x, zero), _scalar_like(ctx, 1.0, x), zero)
    return _op.where(_op.equal(x, zero), _op.add(values, _op.zeros_like(x)), step)


@register("movedim", "moveaxis")
def _movedim(ctx, args):
    """The ``source`` axes moved to ``destination``, the others keeping their order."""
    x = args[0]
    nd = len(ctx.shape(x))
    src = args[1] if isinstance(args[1], list | tuple) else [args[1]]
    dst = args[2] if isinstance(args[2], list | tuple) else [args[2]]
    src, dst = [_norm_dim(int(d), nd) for d in src], [_norm_dim(int(d), nd) for d in dst]
    order: list = [None] * nd
    for a, b in zip(src, dst, strict=True):
        order[b] = a
    rest = iter(a for a in range(nd) if a not in src)
    perm = [a if a is not None else next(rest) for a in order]
    return x if perm == list(range(nd)) else _op.transpose(x, perm)


@register("tensor_split")
def _tensor_split(ctx, args):
    """(input, sections or indices, dim): ``n`` sections of which the first ``size % n`` hold
    one more, or the pieces between the given indices (clamped to the axis, as torch's)."""
    x, how = args[0], args[1]
    dim = _norm_dim(int(_opt(args, 2, 0)), len(ctx.shape(x)))
    size = int(ctx.shape(x)[dim])
    if _is_expr(how):
        raise ctx.fail("tensor_split with a tensor of indices or sections needs them as Python "
                       "ints (a traced constant)")
    if isinstance(how, list | tuple):
        bounds = [min(max(int(i) if i >= 0 else int(i) + size, 0), size) for i in how]
        bounds = [0, *bounds, size]
    else:
        n = int(how)
        if n < 1:
            raise ctx.fail(f"tensor_split into {n} sections: at least 1")
        step, extra = divmod(size, n)
        bounds = [0]
        for k in range(n):
            bounds.append(bounds[-1] + step + (1 if k < extra else 0))
    return tuple(_op.strided_slice(x, [lo], [max(lo, hi)], axes=[dim])
                 for lo, hi in zip(bounds[:-1], bounds[1:]))


@register("float_power", "float_power_")
def _float_power(ctx, args):
    """``base ** exponent`` in float64, as torch's float_power."""
    def wide(v):
        if _is_expr(v):
            return v if ctx.dtype(v) == "float64" else _op.cast(v, "float64")
        return _expr.const(np.array(float(v), "float64"), "float64")
    return _op.power(wide(args[0]), wide(args[1]))


@register("isin")
def _isin(ctx, args):
    """(elements, test_elements, assume_unique, invert): each element's equality with any test
    element (a tensor, flattened, or a number)."""
    x, test = args[0], args[1]
    invert = bool(_opt(args, 3, False))
    if _is_expr(test):
        flat = _op.reshape(test, [-1])
        if ctx.dtype(flat) != ctx.dtype(x):
            flat = _op.cast(flat, ctx.dtype(x))
        found = _op.max(_op.cast(_op.equal(_op.expand_dims(x, -1), flat), "int32"), [-1])
        found = _op.cast(found, "bool")
    else:
        found = _op.equal(x, _scalar_like(ctx, test, x))
    return _op.logical_not(found) if invert else found


@register("logaddexp2")
def _logaddexp2(ctx, args):
    """``log2(2^a + 2^b)`` = ``max + log2(1 + 2^-|a - b|)``; equal infinities give themselves."""
    a, b = _pair(ctx, args[0], args[1])
    dt = ctx.dtype(a)
    gap = _op.power(_scalar_like(ctx, 2.0, a), _op.negative(_op.abs(_op.subtract(a, b))))
    out = _op.add(_op.maximum(a, b), _op.multiply(
        _op.log(_op.add(_scalar_like(ctx, 1.0, a), gap)), _expr.const(
            np.array(1 / math.log(2.0), dt), dt)))
    return _op.where(_op.logical_and(_op.equal(a, b), _op.isinf(a)), a, out)
