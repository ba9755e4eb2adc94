"""ATen factorizations and solves of small matrices onto Relay: ``linalg_cholesky``,
``cholesky_solve``, ``linalg_solve``, ``linalg_inv``, ``linalg_slogdet`` / ``linalg_det``
(and their legacy / ``_ex`` names), composed by ``frontend_common.torch_linalg``, which the
Relax importer shares: unrolled over a static order of at most ``MAX_ORDER``."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_linalg
from ... import expr as _expr
from ... import op as _op
from .aten import register


def _const(array) -> _expr.Constant:
    array = np.asarray(array)
    return _expr.const(array, str(array.dtype))


def _matrix(ctx, x, op_name: str):
    """``x``'s static shape and dtype, refused unless a float batch of small square matrices."""
    shape = tuple(ctx.shape(x))
    dtype = ctx.dtype(x)
    torch_linalg.check_order(op_name, shape, dtype)
    return shape, dtype


def _no_errors(shape) -> _expr.Constant:
    """The ``info`` output of the ``_ex`` ops: 0 (no run-time check is made)."""
    return _const(np.zeros(tuple(shape[:-2]), dtype="int32"))


def _cholesky_factor(ctx, a, upper):
    shape, dtype = _matrix(ctx, a, "cholesky")
    return torch_linalg.cholesky(_op, a, shape, dtype, _const, upper=bool(upper)), shape


@register("linalg_cholesky", "cholesky")
def _cholesky(ctx, args):
    return _cholesky_factor(ctx, args[0], args[1] if len(args) > 1 else False)[0]


@register("linalg_cholesky_ex")
def _cholesky_ex(ctx, args):
    factor, shape = _cholesky_factor(ctx, args[0], args[1] if len(args) > 1 else False)
    return factor, _no_errors(shape)


@register("cholesky_solve")
def _cholesky_solve(ctx, args):
    b, factor = args[0], args[1]
    upper = bool(args[2]) if len(args) > 2 else False
    f_shape, dtype = _matrix(ctx, factor, "cholesky_solve")
    return torch_linalg.cholesky_solve(_op, b, factor, tuple(ctx.shape(b)), f_shape, dtype,
                                       _const, upper=upper)


def _solve_value(ctx, args):
    a, b = args[0], args[1]
    left = bool(args[2]) if len(args) > 2 else True
    shape, dtype = _matrix(ctx, a, "linalg_solve")
    return torch_linalg.solve(_op, a, b, shape, tuple(ctx.shape(b)), dtype, _const,
                              left=left), shape


@register("linalg_solve")
def _solve(ctx, args):
    return _solve_value(ctx, args)[0]


@register("linalg_solve_ex")
def _solve_ex(ctx, args):
    x, shape = _solve_value(ctx, args)
    return x, _no_errors(shape)


@register("linalg_inv", "inverse")
def _inverse(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_inv")
    return torch_linalg.inverse(_op, args[0], shape, dtype, _const)


@register("linalg_inv_ex")
def _inverse_ex(ctx, args):
    return _inverse(ctx, args[:1]), _no_errors(ctx.shape(args[0]))


@register("linalg_slogdet", "slogdet")
def _slogdet(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_slogdet")
    return torch_linalg.slogdet(_op, args[0], shape, dtype, _const)[:2]


@register("_linalg_slogdet")
def _slogdet_packed(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_slogdet")
    return torch_linalg.slogdet(_op, args[0], shape, dtype, _const)


@register("logdet")
def _logdet(ctx, args):
    """``log(det A)``: NaN for a negative determinant, as torch's."""
    sign, log_abs = _slogdet(ctx, args)
    dtype = ctx.dtype(args[0])
    nan = _const(np.array(np.nan, dtype))
    return _op.where(_op.less(sign, _const(np.array(0, dtype))), nan, log_abs)


@register("linalg_det", "det")
def _det(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_det")
    return torch_linalg.det(_op, args[0], shape, dtype, _const)[0]


@register("_linalg_det")
def _det_packed(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_det")
    return torch_linalg.det(_op, args[0], shape, dtype, _const)
