"""ATen factorizations and solves onto Relay: ``linalg_cholesky(_ex)``, ``cholesky_solve``,
``linalg_solve_triangular`` / ``triangular_solve``, ``linalg_matrix_exp``,
``linalg_solve(_ex)`` / ``_linalg_solve_ex``, ``linalg_inv(_ex)``, ``linalg_slogdet`` /
``linalg_det`` (and their legacy names), composed by ``frontend_common.torch_linalg`` (shared
with the Relax importer) on the loop kernels ``relay.op.linalg``: any static matrix order.

Where torch raises at run time (a matrix that is not positive definite for ``cholesky``, a
singular one for ``solve`` / ``inv``) these return NaN / inf values instead; the ``_ex`` forms
return LAPACK's ``info`` (see ``torch_linalg``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_linalg
from ... import expr as _expr
from ... import op as _op
from .aten import register


def _const(array) -> _expr.Constant:
    array = np.asarray(array)
    return _expr.const(array, str(array.dtype))


class _Kernels:
    """``torch_linalg.Kernels`` as Relay's ``linalg.*`` ops."""

    cholesky = staticmethod(_op.linalg.cholesky_factor)
    lu = staticmethod(_op.linalg.lu_factor)
    solve = staticmethod(_op.linalg.factored_solve)


_KERNELS = _Kernels()


def _matrix(ctx, x, op_name: str):
    """``x``'s static shape and dtype, refused unless a float batch of square matrices."""
    shape = tuple(ctx.shape(x))
    dtype = ctx.dtype(x)
    torch_linalg.check_order(op_name, shape, dtype)
    return shape, dtype


def _cholesky_ex(ctx, args):
    """``(L, info)``; a matrix that is not positive definite gets NaN from the failed column
    on (torch's ``linalg.cholesky`` raises) and ``info`` LAPACK's."""
    shape, dtype = _matrix(ctx, args[0], "cholesky")
    upper = bool(args[1]) if len(args) > 1 and args[1] is not None else False
    return torch_linalg.cholesky(_op, _KERNELS, args[0], shape, dtype, _const, upper=upper)


@register("linalg_cholesky", "cholesky")
def _cholesky(ctx, args):
    """``L``; a matrix that is not positive definite gives NaN from its failed column on
    (torch raises)."""
    return _cholesky_ex(ctx, args)[0]


register("linalg_cholesky_ex")(_cholesky_ex)


@register("cholesky_solve")
def _cholesky_solve(ctx, args):
    b, factor = args[0], args[1]
    upper = bool(args[2]) if len(args) > 2 else False
    f_shape, dtype = _matrix(ctx, factor, "cholesky_solve")
    return torch_linalg.cholesky_solve(_op, _KERNELS, b, factor, tuple(ctx.shape(b)), f_shape,
                                       dtype, _const, upper=upper)


@register("linalg_solve_triangular")
def _solve_triangular(ctx, args):
    """``(A, B, upper, left, unitriangular)``: one substitution on ``A``'s triangle; a zero on
    its diagonal gives inf / NaN (as LAPACK's ``trtrs`` would report)."""
    a, b = args[0], args[1]
    shape, _ = _matrix(ctx, a, "linalg_solve_triangular")
    flag = [bool(args[i]) if len(args) > i and args[i] is not None else d
            for i, d in ((2, False), (3, True), (4, False))]
    try:
        return torch_linalg.solve_triangular(_op, _KERNELS, a, b, shape, tuple(ctx.shape(b)),
                                             *flag)
    except torch_linalg.LinalgError as e:
        raise ctx.fail(str(e)) from None


@register("linalg_matrix_exp", "matrix_exp")
def _matrix_exp(ctx, args):
    """Scaling and squaring with a Taylor polynomial (``torch_linalg.matrix_exp``)."""
    shape, dtype = _matrix(ctx, args[0], "linalg_matrix_exp")
    return torch_linalg.matrix_exp(_op, lambda x, y: _op.nn.batch_matmul(x, y, transpose_b=False),
                                   args[0], shape, dtype, _const)


@register("triangular_solve")
def _triangular_solve(ctx, args):
    """The legacy ``(B, A, upper, transpose, unitriangular)`` -> ``(X, A)``: ``A^T X = B``
    when ``transpose``."""
    b, a = args[0], args[1]
    shape, _ = _matrix(ctx, a, "triangular_solve")
    upper, transpose, unit = (bool(args[i]) if len(args) > i and args[i] is not None else d
                              for i, d in ((2, True), (3, False), (4, False)))
    coefficient = _op.transpose(a, tuple(range(len(shape) - 2)) + (len(shape) - 1,
                                                                   len(shape) - 2)) \
        if transpose else a
    try:
        x = torch_linalg.solve_triangular(_op, _KERNELS, coefficient, b, shape,
                                          tuple(ctx.shape(b)), upper != transpose, True, unit)
    except torch_linalg.LinalgError as e:
        raise ctx.fail(str(e)) from None
    return x, a


def _solve_value(ctx, args, factors: bool = False):
    a, b = args[0], args[1]
    left = bool(args[2]) if len(args) > 2 else True
    shape, dtype = _matrix(ctx, a, "linalg_solve")
    return torch_linalg.solve(_op, _KERNELS, a, b, shape, tuple(ctx.shape(b)), dtype, _const,
                              left=left, factors=factors)


@register("linalg_solve")
def _solve(ctx, args):
    """``X``; a singular ``A`` gives inf / NaN (torch raises)."""
    return _solve_value(ctx, args)


@register("linalg_solve_ex")
def _solve_ex(ctx, args):
    x, _, _, info = _solve_value(ctx, args, factors=True)
    return x, info


@register("_linalg_solve_ex")
def _solve_ex_packed(ctx, args):
    """``(X, LU, pivots, info)``, the LU and 1-based pivots of ``A``, as ATen's."""
    return _solve_value(ctx, args, factors=True)


def _inverse_ex(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_inv")
    return torch_linalg.inverse(_op, _KERNELS, args[0], shape, dtype, _const, info=True)


@register("linalg_inv", "inverse")
def _inverse(ctx, args):
    """``A^-1``; a singular ``A`` gives inf / NaN (torch raises)."""
    return _inverse_ex(ctx, args[:1])[0]


register("linalg_inv_ex")(_inverse_ex)


@register("linalg_slogdet", "slogdet")
def _slogdet(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_slogdet")
    return torch_linalg.slogdet(_op, _KERNELS, args[0], shape, dtype, _const)[:2]


@register("_linalg_slogdet")
def _slogdet_packed(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_slogdet")
    return torch_linalg.slogdet(_op, _KERNELS, args[0], shape, dtype, _const)


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
    return torch_linalg.det(_op, _KERNELS, args[0], shape, dtype, _const)[0]


@register("_linalg_det")
def _det_packed(ctx, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_det")
    return torch_linalg.det(_op, _KERNELS, args[0], shape, dtype, _const)
