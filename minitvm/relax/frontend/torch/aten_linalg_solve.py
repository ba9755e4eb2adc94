"""Core-ATen factorizations and solves of small matrices onto ``relax.op``:
``linalg_cholesky(_ex)``, ``cholesky_solve``, ``linalg_solve(_ex)``, ``linalg_inv(_ex)``,
``linalg_slogdet`` / ``_linalg_slogdet``, ``logdet``, ``linalg_det`` / ``_linalg_det``,
composed by ``frontend_common.torch_linalg`` (shared with the Relay importer): unrolled over a
static matrix order of at most ``MAX_ORDER``, batched over the leading dimensions."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_linalg
from ... import op as _op
from ...expr import const
from .context import AtenContext, register


def _const(array):
    array = np.asarray(array)
    return const(array, str(array.dtype))


def _matrix(ctx: AtenContext, x, op_name: str):
    """``x``'s static shape and dtype, refused unless a float batch of small square matrices."""
    shape, dtype = tuple(ctx.shape(x)), ctx.dtype(x)
    try:
        torch_linalg.check_order(op_name, shape, dtype)
    except torch_linalg.LinalgError as e:
        raise ctx.fail(str(e)) from None
    return shape, dtype


def _no_errors(ctx: AtenContext, shape):
    """The ``info`` output of the ``_ex`` ops: 0 (no run-time check is made)."""
    return ctx.emit(_const(np.zeros(tuple(shape[:-2]), dtype="int32")))


def _flag(args, i: int, default: bool) -> bool:
    return bool(args[i]) if len(args) > i and args[i] is not None else default


def _cholesky_factor(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "cholesky")
    factor = torch_linalg.cholesky(_op, args[0], shape, dtype, _const, ctx.emit,
                                   upper=_flag(args, 1, False))
    return ctx.emit(factor), shape


@register("linalg_cholesky.default", "cholesky.default")
def _cholesky(ctx: AtenContext, args):
    return _cholesky_factor(ctx, args)[0]


@register("linalg_cholesky_ex.default")
def _cholesky_ex(ctx: AtenContext, args):
    factor, shape = _cholesky_factor(ctx, args)
    return factor, _no_errors(ctx, shape)


@register("cholesky_solve.default")
def _cholesky_solve(ctx: AtenContext, args):
    b, factor = args[0], args[1]
    f_shape, dtype = _matrix(ctx, factor, "cholesky_solve")
    return ctx.emit(torch_linalg.cholesky_solve(_op, b, factor, tuple(ctx.shape(b)), f_shape,
                                                dtype, _const, ctx.emit,
                                                upper=_flag(args, 2, False)))


def _solve_value(ctx: AtenContext, args):
    a, b = args[0], args[1]
    shape, dtype = _matrix(ctx, a, "linalg_solve")
    x = torch_linalg.solve(_op, a, b, shape, tuple(ctx.shape(b)), dtype, _const, ctx.emit,
                           left=_flag(args, 2, True))
    return ctx.emit(x), shape


@register("linalg_solve.default")
def _solve(ctx: AtenContext, args):
    return _solve_value(ctx, args)[0]


@register("linalg_solve_ex.default")
def _solve_ex(ctx: AtenContext, args):
    x, shape = _solve_value(ctx, args)
    return x, _no_errors(ctx, shape)


@register("linalg_inv.default", "inverse.default")
def _inverse(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_inv")
    return ctx.emit(torch_linalg.inverse(_op, args[0], shape, dtype, _const, ctx.emit))


@register("linalg_inv_ex.default")
def _inverse_ex(ctx: AtenContext, args):
    return _inverse(ctx, args[:1]), _no_errors(ctx, ctx.shape(args[0]))


def _slogdet_parts(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_slogdet")
    parts = torch_linalg.slogdet(_op, args[0], shape, dtype, _const, ctx.emit)
    return [ctx.emit(p) for p in parts]


@register("linalg_slogdet.default", "slogdet.default")
def _slogdet(ctx: AtenContext, args):
    return tuple(_slogdet_parts(ctx, args)[:2])


@register("_linalg_slogdet.default")
def _slogdet_packed(ctx: AtenContext, args):
    return tuple(_slogdet_parts(ctx, args))


@register("logdet.default")
def _logdet(ctx: AtenContext, args):
    """``log(det A)``: NaN for a negative determinant, as torch's."""
    sign, log_abs = _slogdet_parts(ctx, args)[:2]
    dtype = ctx.dtype(args[0])
    negative = ctx.emit(_op.less(sign, _const(np.array(0, dtype))))
    return ctx.emit(_op.where(negative, _const(np.array(np.nan, dtype)), log_abs))


def _det_parts(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_det")
    return [ctx.emit(p) for p in torch_linalg.det(_op, args[0], shape, dtype, _const,
                                                   ctx.emit)]


@register("linalg_det.default", "det.default")
def _det(ctx: AtenContext, args):
    return _det_parts(ctx, args)[0]


@register("_linalg_det.default")
def _det_packed(ctx: AtenContext, args):
    return tuple(_det_parts(ctx, args))
