"""Core-ATen factorizations and solves onto Relax: ``linalg_cholesky(_ex)``,
``cholesky_solve``, ``linalg_solve_triangular`` / ``triangular_solve``, ``linalg_matrix_exp``,
``linalg_solve(_ex)`` / ``_linalg_solve_ex``, ``linalg_inv(_ex)``,
``linalg_slogdet`` / ``_linalg_slogdet``, ``logdet``, ``linalg_det`` / ``_linalg_det``, composed
by ``frontend_common.torch_linalg`` (shared with the Relay importer) on the loop kernels of
``topi.linalg`` (``call_tir`` of the PrimFuncs ``schedule.linalg`` writes): any static matrix
order (Cholesky and the triangular solves also a symbolic one), batched over the leading
dimensions.

Where torch raises at run time (a matrix that is not positive definite for ``cholesky``, a
singular one for ``solve`` / ``inv``) these return NaN / inf values instead; the ``_ex`` forms
return LAPACK's ``info`` (see ``torch_linalg``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_linalg
from ....schedule import linalg as linalg_rule
from ....topi import linalg as topi_linalg
from ... import op as _op
from ...expr import const
from ...transform.legalize_ops.rule_stage import call_rule_stage
from .context import AtenContext, register


def _const(array):
    array = np.asarray(array)
    return const(array, str(array.dtype))


class _Kernels:
    """``torch_linalg.Kernels`` as ``call_tir`` of the rule-written PrimFuncs."""

    def __init__(self, ctx: AtenContext):
        self.ctx = ctx

    def _call(self, te_func, *args, name: str):
        args = [self.ctx.emit(a) for a in args]
        return self.ctx.emit(call_rule_stage(self.ctx.bb, te_func, *args, name=name,
                                             rule=linalg_rule.RULE))

    def cholesky(self, a):
        return self._call(topi_linalg.cholesky_stage, a, name="cholesky")

    def lu(self, a):
        return self._call(topi_linalg.lu_stage, a, name="lu_factor")

    def solve(self, factor, rhs, kind: str):
        return self._call(lambda f, b: topi_linalg.factored_solve_stage(f, b, kind), factor,
                          rhs, name=f"{kind}_solve")


def _matrix(ctx: AtenContext, x, op_name: str, symbolic_order: bool = False):
    """``x``'s shape and dtype, refused unless a float batch of square matrices of a static
    order (with ``symbolic_order``: the order may be symbolic); the batch may be symbolic."""
    shape, dtype = tuple(ctx.shape(x)), ctx.dtype(x)
    try:
        torch_linalg.check_order(op_name, shape, dtype, symbolic_order, symbolic_batch=True)
    except torch_linalg.LinalgError as e:
        raise ctx.fail(str(e)) from None
    return shape, dtype


def _flag(args, i: int, default: bool) -> bool:
    return bool(args[i]) if len(args) > i and args[i] is not None else default


def _emit_all(ctx: AtenContext, parts):
    return tuple(ctx.emit(p) for p in parts)


@register("linalg_cholesky_ex.default")
def _cholesky_ex(ctx: AtenContext, args):
    """``(L, info)``; a matrix that is not positive definite gets NaN from the failed column
    on (torch's ``linalg.cholesky`` raises) and ``info`` LAPACK's."""
    shape, dtype = _matrix(ctx, args[0], "cholesky", symbolic_order=True)
    return _emit_all(ctx, torch_linalg.cholesky(_op, _Kernels(ctx), args[0], shape, dtype,
                                                _const, ctx.emit, upper=_flag(args, 1, False)))


@register("linalg_cholesky.default", "cholesky.default")
def _cholesky(ctx: AtenContext, args):
    """``L``; a matrix that is not positive definite gives NaN from its failed column on
    (torch raises)."""
    return _cholesky_ex(ctx, args)[0]


@register("cholesky_solve.default")
def _cholesky_solve(ctx: AtenContext, args):
    b, factor = args[0], args[1]
    f_shape, dtype = _matrix(ctx, factor, "cholesky_solve", symbolic_order=True)
    return ctx.emit(torch_linalg.cholesky_solve(_op, _Kernels(ctx), b, factor,
                                                tuple(ctx.shape(b)), f_shape, dtype, _const,
                                                ctx.emit, upper=_flag(args, 2, False)))


@register("linalg_solve_triangular.default")
def _solve_triangular(ctx: AtenContext, args):
    """``(A, B, upper, left, unitriangular)``: one substitution on ``A``'s triangle; a zero on
    its diagonal gives inf / NaN."""
    shape, _ = _matrix(ctx, args[0], "linalg_solve_triangular", symbolic_order=True)
    try:
        x = torch_linalg.solve_triangular(_op, _Kernels(ctx), args[0], args[1], shape,
                                          tuple(ctx.shape(args[1])), _flag(args, 2, False),
                                          _flag(args, 3, True), _flag(args, 4, False))
    except torch_linalg.LinalgError as e:
        raise ctx.fail(str(e)) from None
    return ctx.emit(x)


@register("linalg_matrix_exp.default", "matrix_exp.default")
def _matrix_exp(ctx: AtenContext, args):
    """Scaling and squaring with a Taylor polynomial (``torch_linalg.matrix_exp``)."""
    shape, dtype = _matrix(ctx, args[0], "linalg_matrix_exp")
    return ctx.emit(torch_linalg.matrix_exp(_op, _op.matmul, args[0], shape, dtype, _const,
                                            ctx.emit))


@register("triangular_solve.default")
def _triangular_solve(ctx: AtenContext, args):
    """The legacy ``(B, A, upper, transpose, unitriangular)`` -> ``(X, A)``: ``A^T X = B``
    when ``transpose``."""
    b, a = args[0], args[1]
    shape, _ = _matrix(ctx, a, "triangular_solve", symbolic_order=True)
    upper, transpose = _flag(args, 2, True), _flag(args, 3, False)
    rank = len(shape)
    coefficient = ctx.emit(_op.permute_dims(a, list(range(rank - 2)) + [rank - 1, rank - 2])) \
        if transpose else a
    try:
        x = torch_linalg.solve_triangular(_op, _Kernels(ctx), coefficient, b, shape,
                                          tuple(ctx.shape(b)), upper != transpose, True,
                                          _flag(args, 4, False))
    except torch_linalg.LinalgError as e:
        raise ctx.fail(str(e)) from None
    return ctx.emit(x), a


def _solve_value(ctx: AtenContext, args, factors: bool = False):
    a, b = args[0], args[1]
    shape, dtype = _matrix(ctx, a, "linalg_solve")
    out = torch_linalg.solve(_op, _Kernels(ctx), a, b, shape, tuple(ctx.shape(b)), dtype,
                             _const, ctx.emit, left=_flag(args, 2, True), factors=factors)
    return _emit_all(ctx, out) if factors else ctx.emit(out)


@register("linalg_solve.default")
def _solve(ctx: AtenContext, args):
    """``X``; a singular ``A`` gives inf / NaN (torch raises)."""
    return _solve_value(ctx, args)


@register("linalg_solve_ex.default")
def _solve_ex(ctx: AtenContext, args):
    x, _, _, info = _solve_value(ctx, args, factors=True)
    return x, info


@register("_linalg_solve_ex.default")
def _solve_ex_packed(ctx: AtenContext, args):
    """``(X, LU, pivots, info)``, the LU and 1-based pivots of ``A``, as ATen's."""
    return _solve_value(ctx, args, factors=True)


@register("linalg_inv_ex.default")
def _inverse_ex(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_inv")
    return _emit_all(ctx, torch_linalg.inverse(_op, _Kernels(ctx), args[0], shape, dtype,
                                               _const, ctx.emit, info=True))


@register("linalg_inv.default", "inverse.default")
def _inverse(ctx: AtenContext, args):
    """``A^-1``; a singular ``A`` gives inf / NaN (torch raises)."""
    return _inverse_ex(ctx, args[:1])[0]


def _slogdet_parts(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_slogdet")
    return _emit_all(ctx, torch_linalg.slogdet(_op, _Kernels(ctx), args[0], shape, dtype,
                                               _const, ctx.emit))


@register("linalg_slogdet.default", "slogdet.default")
def _slogdet(ctx: AtenContext, args):
    return _slogdet_parts(ctx, args)[:2]


@register("_linalg_slogdet.default")
def _slogdet_packed(ctx: AtenContext, args):
    return _slogdet_parts(ctx, args)


@register("logdet.default")
def _logdet(ctx: AtenContext, args):
    """``log(det A)``: NaN for a negative determinant, as torch's."""
    sign, log_abs = _slogdet_parts(ctx, args)[:2]
    dtype = ctx.dtype(args[0])
    negative = ctx.emit(_op.less(sign, _const(np.array(0, dtype))))
    return ctx.emit(_op.where(negative, _const(np.array(np.nan, dtype)), log_abs))


def _det_parts(ctx: AtenContext, args):
    shape, dtype = _matrix(ctx, args[0], "linalg_det")
    return _emit_all(ctx, torch_linalg.det(_op, _Kernels(ctx), args[0], shape, dtype, _const,
                                           ctx.emit))


@register("linalg_det.default", "det.default")
def _det(ctx: AtenContext, args):
    return _det_parts(ctx, args)[0]


@register("_linalg_det.default")
def _det_packed(ctx: AtenContext, args):
    return _det_parts(ctx, args)
