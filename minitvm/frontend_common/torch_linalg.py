"""torch's dense linear algebra -- ``linalg.cholesky(_ex)``, ``cholesky_solve``,
``linalg.solve_triangular`` / ``triangular_solve``, ``linalg.matrix_exp``, ``linalg.solve(_ex)`` / ``_linalg_solve_ex``, ``linalg.inv(_ex)``, ``linalg.slogdet`` / ``det``
and the LAPACK-style packed LU behind them -- composed for the importers of both dialects.

The factorizations and triangular solves are loop kernels (``topi.linalg``, lowered by
``schedule.linalg``) over matrices of any static order, batched over the leading dimensions;
what is left here is layout (batch broadcasting, vectors, ``left=False``) and what is read off
the factors: determinants from the diagonal and the pivots' parity, and LAPACK's ``info``.
LU takes ``getrf``'s pivot (the first entry of largest magnitude); a zero pivot column is
skipped, so a singular matrix gets determinant 0. Float32 results agree with torch's LAPACK to
about 1e-6 relative on well-conditioned input.

Run-time failures: torch raises where its ``info`` is non-zero; these never raise. ``info`` is
computed as LAPACK's (Cholesky: the 1-based order of the first leading minor that is not
positive definite; LU: the 1-based index of the first zero pivot) for the ``_ex`` forms, and
the values of the other forms are NaN / inf there (Cholesky: NaN from the failed column on; a
solve or inverse of a singular matrix: the division by its zero pivot).

``ops`` is the dialect's operator namespace (``relay.op`` or ``relax.op``); ``kernels`` makes
the three kernel calls (``Kernels``); ``const(array)`` makes a constant of a numpy array (its
dtype kept); ``emit`` binds a value used more than once (Relax's ``ctx.emit``; the identity for
Relay). Shapes are tuples of ints, except that Relax's Cholesky and triangular solves take a
symbolic matrix order (the batch dims stay static).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..ir import structural_equal

__all__ = ["Kernels", "LinalgError", "batch_shape", "check_order", "cholesky",
           "cholesky_solve", "det", "inverse", "lu_factor", "matrix_exp", "slogdet", "solve",
           "solve_triangular"]

_Emit = Callable[[Any], Any]


class Kernels(Protocol):
    """The dialect's calls of the loop kernels on ``(B, n, n)`` values (``topi.linalg``)."""

    def cholesky(self, a): ...

    def lu(self, a): ...

    def solve(self, factor, rhs, kind: str): ...


class LinalgError(ValueError):
    """A linear-algebra operand these compositions cannot take (order, dtype, shape)."""


def check_order(op_name: str, shape: Sequence, dtype: str, symbolic_order: bool = False,
                symbolic_batch: bool = False):
    """The order ``n`` of the square matrices in ``shape`` (``(..., n, n)``): an int or, with
    ``symbolic_order`` (the compositions that only call the loop kernels: Cholesky and the
    triangular solves), the symbolic size of both matrix dims (a kernel matrix over a dynamic
    batch of points). The leading (batch) dims must be static unless ``symbolic_batch`` (Relax:
    the loop kernels run over a run-time count of matrices). A symbolic shape otherwise and a
    non-float dtype are refused with a message naming ``op_name``."""
    if len(shape) < 2:
        raise LinalgError(f"{op_name}: expected a (batch of) square matrices, got shape "
                          f"{tuple(shape)}")
    rows, cols = shape[-2], shape[-1]
    if not symbolic_order and not all(_is_int(d) for d in shape[-2:]):
        raise LinalgError(f"{op_name}: matrix shape {tuple(shape)} is symbolic; this "
                          "composition takes a static matrix order")
    if not symbolic_batch and not all(_is_int(d) for d in shape[:-2]):
        raise LinalgError(f"{op_name}: the batch dims of matrix shape {tuple(shape)} are "
                          "symbolic; the factorization kernels take a static batch")
    if not _same_size(rows, cols):
        raise LinalgError(f"{op_name}: expected square matrices, got {rows}x{cols}")
    if not dtype.startswith("float") or dtype == "float16":
        raise LinalgError(f"{op_name}: expected float32 or float64 matrices, got {dtype}")
    return int(rows) if _is_int(rows) else rows


def _is_int(d) -> bool:
    return isinstance(d, int | np.integer)


def _same_size(a, b) -> bool:
    """Two dims equal: equal ints, or structurally the same symbolic size."""
    static = [isinstance(d, int | np.integer) for d in (a, b)]
    if all(static):
        return int(a) == int(b)
    return not any(static) and structural_equal(a, b)


def batch_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The broadcast leading (batch) dimensions of operands shaped ``(..., r, c)``. Symbolic
    batch dims (Relax) broadcast only with themselves or a static 1."""
    batches = [tuple(s[:-2]) for s in shapes]
    if all(_is_int(d) for b in batches for d in b):
        return tuple(int(d) for d in np.broadcast_shapes(*batches))
    rank = max(len(b) for b in batches)
    out = []
    for k in range(rank):
        dims = [b[len(b) - rank + k] for b in batches if len(b) - rank + k >= 0]
        dims = [d for d in dims if not (_is_int(d) and int(d) == 1)] or [1]
        if not all(_same_size(d, dims[0]) for d in dims[1:]):
            raise LinalgError(f"batch dims {batches} do not broadcast (a symbolic dim "
                              "broadcasts only with itself or 1)")
        out.append(int(dims[0]) if _is_int(dims[0]) else dims[0])
    return tuple(out)


def _transpose(ops: Any, x):
    """Swap the last two axes of a 3-D value (Relay's ``transpose``, Relax's ``permute_dims``)."""
    permute = getattr(ops, "permute_dims", None) or ops.transpose
    return permute(x, (0, 2, 1))


def _cast(ops: Any, x, dtype: str):
    return (getattr(ops, "astype", None) or ops.cast)(x, dtype)


def _flat(ops: Any, x, shape: Sequence[int], batch: tuple[int, ...]):
    """``x`` broadcast to ``batch`` leading dimensions and reshaped to ``(B, rows, cols)``."""
    shape = tuple(shape)
    if not _same_batch(shape[:-2], batch):
        x = ops.broadcast_to(x, batch + shape[-2:])
    return ops.reshape(x, (_count(batch),) + shape[-2:])


def _same_batch(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(_same_size(x, y) for x, y in zip(a, b, strict=True))


def _count(batch: tuple[int, ...]) -> int:
    """The number of matrices in a batch (a symbolic product where a dim is symbolic)."""
    if all(_is_int(d) for d in batch):
        return int(np.prod(batch, dtype=np.int64))
    count = 1
    for d in batch:
        count = d if (_is_int(count) and int(count) == 1) else count * d
    return count


def _diagonal(ops: Any, m, n, dtype: str, const: Callable):
    """The diagonal of ``m`` (``(B, n, n)``) as ``(B, n)``; a symbolic ``n`` (Relax only)
    compares ``arange(n)`` with itself."""
    if isinstance(n, int | np.integer):
        on_diagonal = const(np.eye(n, dtype=bool)[None])
    else:
        idx = ops.arange(0, n, 1, "int64")
        on_diagonal = ops.equal(ops.expand_dims(idx, 1), ops.expand_dims(idx, 0))
    return ops.sum(ops.where(on_diagonal, m, const(np.array(0, dtype))), axis=2)


def _first_hit(ops: Any, hits, const: Callable):
    """LAPACK's ``info`` from a ``(B, n)`` bool mask: the 1-based index of the first true
    entry, 0 where none is."""
    as_int = _cast(ops, hits, "int32")
    first = _cast(ops, ops.argmax(as_int, axis=1), "int32")
    one = const(np.array(1, "int32"))
    return ops.where(ops.greater(ops.max(as_int, axis=1), const(np.array(0, "int32"))),
                     ops.add(first, one), const(np.array(0, "int32")))


class LUFactors:
    """``getrf``'s packed LU ``(B, n, n)``, the 0-based int32 pivot row of each step
    ``(B, n)`` and the kernel's ``(B, n, n + 1)`` output the solves read."""

    __slots__ = ("lu", "pivots", "packed")

    def __init__(self, lu, pivots, packed):
        self.lu, self.pivots, self.packed = lu, pivots, packed


def lu_factor(ops: Any, kernels: Kernels, a, n: int, dtype: str, const: Callable,
              emit: _Emit = lambda e: e) -> LUFactors:
    """LU with partial pivoting of ``a`` (``(B, n, n)``), as LAPACK's ``getrf`` packs it."""
    packed = emit(kernels.lu(a))
    lu = emit(ops.take(packed, const(np.arange(n, dtype="int64")), axis=2))
    pivot_column = ops.take(packed, const(np.array([n], dtype="int64")), axis=2)
    pivots = emit(_cast(ops, ops.squeeze(pivot_column, axis=[2]), "int32"))
    return LUFactors(lu, pivots, packed)


def _lu_info(ops: Any, factors: LUFactors, n: int, dtype: str, const: Callable):
    """``getrf``'s ``info`` ``(B,)``: the first zero on ``U``'s diagonal, 1-based (0: none)."""
    diagonal = _diagonal(ops, factors.lu, n, dtype, const)
    return _first_hit(ops, ops.equal(diagonal, const(np.array(0, dtype))), const)


def _pivots(ops: Any, factors: LUFactors, batch: tuple[int, ...], n: int, const: Callable):
    """LAPACK's 1-based pivot rows ``(..., n)`` int32."""
    return ops.reshape(ops.add(factors.pivots, const(np.array(1, "int32"))), batch + (n,))


def solve(ops: Any, kernels: Kernels, a, b, a_shape: Sequence[int], b_shape: Sequence[int],
          dtype: str, const: Callable, emit: _Emit = lambda e: e, left: bool = True,
          factors: bool = False):
    """``torch.linalg.solve(A, B, left)``: ``X`` with ``A X = B`` (``X A = B`` when not
    ``left``); ``B`` a vector (``(n,)`` or ``A``'s batch + ``(n,)``) gives a vector. With
    ``factors``, ``(X, LU, pivots, info)`` of ``A`` (``_linalg_solve_ex``; ``A``'s batch)."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    n = a_shape[-1]
    a_batch = tuple(a_shape[:-2])
    vector = len(b_shape) == 1 or (left and b_shape == a_shape[:-1])
    if vector:
        b = ops.expand_dims(b, len(b_shape)) if left else ops.expand_dims(b, len(b_shape) - 1)
        b_shape = b_shape + (1,) if left else b_shape[:-1] + (1, b_shape[-1])
    batch = batch_shape(a_shape, b_shape)
    a3 = emit(ops.reshape(a, (_count(a_batch), n, n)))
    b3 = _flat(ops, b, b_shape, batch)
    own = lu_factor(ops, kernels, a3, n, dtype, const, emit) if left or factors else None
    used = own if left else lu_factor(ops, kernels, emit(_transpose(ops, a3)), n, dtype,
                                      const, emit)
    packed = used.packed
    if not _same_batch(a_batch, batch):  # one factorization per A, shared by the B it broadcasts over
        packed = ops.reshape(ops.broadcast_to(ops.reshape(packed, a_batch + (n, n + 1)),
                                              batch + (n, n + 1)),
                             (_count(batch), n, n + 1))
    if not left:  # X A = B  <=>  A^T X^T = B^T
        b3 = _transpose(ops, b3)
    x = kernels.solve(packed, b3, "lu")
    if not left:
        x = _transpose(ops, x)
    x = ops.reshape(x, batch + b_shape[-2:])
    if vector:
        x = ops.reshape(x, batch + ((n,) if left else (b_shape[-1],)))
    if not factors:
        return x
    return (x, ops.reshape(own.lu, a_shape), _pivots(ops, own, a_batch, n, const),
            ops.reshape(_lu_info(ops, own, n, dtype, const), a_batch))


def solve_info(ops: Any, kernels: Kernels, a, shape: Sequence[int], dtype: str,
               const: Callable, emit: _Emit = lambda e: e):
    """``getrf``'s ``info`` of ``A`` (``linalg.solve_ex`` / ``inv_ex``), ``A``'s batch."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factors = lu_factor(ops, kernels, _flat(ops, a, shape, batch), n, dtype, const, emit)
    return ops.reshape(_lu_info(ops, factors, n, dtype, const), batch)


def inverse(ops: Any, kernels: Kernels, a, shape: Sequence[int], dtype: str, const: Callable,
            emit: _Emit = lambda e: e, info: bool = False):
    """``torch.linalg.inv``: the LU solve of ``A X = I``; with ``info``, ``(X, info)``."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factors = lu_factor(ops, kernels, _flat(ops, a, shape, batch), n, dtype, const, emit)
    identity = ops.broadcast_to(const(np.eye(n, dtype=dtype)[None]), (_count(batch), n, n))
    x = ops.reshape(kernels.solve(factors.packed, identity, "lu"), shape)
    if not info:
        return x
    return x, ops.reshape(_lu_info(ops, factors, n, dtype, const), batch)


def _parity(ops: Any, factors: LUFactors, n: int, dtype: str, const: Callable):
    """The sign ``(B,)`` of the factorization's row permutation: -1 per exchange."""
    kept = ops.equal(factors.pivots, const(np.arange(n, dtype="int32")[None]))
    signs = ops.where(kept, const(np.array(1, dtype)), const(np.array(-1, dtype)))
    return ops.prod(signs, axis=1)


def slogdet(ops: Any, kernels: Kernels, a, shape: Sequence[int], dtype: str,
            const: Callable, emit: _Emit = lambda e: e):
    """``torch.linalg.slogdet``: ``(sign, log|det|)`` from the LU's pivots (sign 0 and
    ``-inf`` for a singular matrix), plus the packed LU ``(..., n, n)`` and 1-based int32
    pivots ``(..., n)`` that ATen's ``_linalg_slogdet`` also returns."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factors = lu_factor(ops, kernels, _flat(ops, a, shape, batch), n, dtype, const, emit)
    diagonal = emit(_diagonal(ops, factors.lu, n, dtype, const))
    sign = ops.multiply(_parity(ops, factors, n, dtype, const),
                        ops.prod(ops.sign(diagonal), axis=1))
    log_abs = ops.sum(ops.log(ops.abs(diagonal)), axis=1)
    return (ops.reshape(sign, batch), ops.reshape(log_abs, batch),
            ops.reshape(factors.lu, shape), _pivots(ops, factors, batch, n, const))


def det(ops: Any, kernels: Kernels, a, shape: Sequence[int], dtype: str, const: Callable,
        emit: _Emit = lambda e: e):
    """``torch.linalg.det``: the product of the LU's diagonal with the permutation's sign,
    plus the packed LU and 1-based int32 pivots (ATen's ``_linalg_det`` outputs)."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factors = lu_factor(ops, kernels, _flat(ops, a, shape, batch), n, dtype, const, emit)
    diagonal = _diagonal(ops, factors.lu, n, dtype, const)
    value = ops.multiply(_parity(ops, factors, n, dtype, const), ops.prod(diagonal, axis=1))
    return (ops.reshape(value, batch), ops.reshape(factors.lu, shape),
            _pivots(ops, factors, batch, n, const))


def cholesky(ops: Any, kernels: Kernels, a, shape: Sequence[int], dtype: str,
             const: Callable, emit: _Emit = lambda e: e, upper: bool = False):
    """``torch.linalg.cholesky_ex``: ``(L, info)``, lower ``L`` with ``L L^H = A`` read from
    ``A``'s lower triangle (``U = L^T`` when ``upper``); ``info`` as LAPACK's ``potrf``, and
    ``L`` NaN from the first failing column on."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factor = emit(kernels.cholesky(_flat(ops, a, shape, batch)))
    diagonal = _diagonal(ops, factor, n, dtype, const)
    info = _first_hit(ops, ops.not_equal(diagonal, diagonal), const)  # (NaN: not PD)
    if upper:
        factor = _transpose(ops, factor)
    return ops.reshape(factor, shape), ops.reshape(info, batch)


def cholesky_solve(ops: Any, kernels: Kernels, b, factor, b_shape: Sequence[int],
                   factor_shape: Sequence[int], dtype: str, const: Callable,
                   emit: _Emit = lambda e: e, upper: bool = False):
    """``torch.cholesky_solve(B, L, upper)``: ``X`` with ``A X = B`` for ``A = L L^T``
    (``U^T U`` when ``upper``): a forward then a backward triangular substitution."""
    b_shape, factor_shape = tuple(b_shape), tuple(factor_shape)
    batch = batch_shape(b_shape, factor_shape)
    b3 = _flat(ops, b, b_shape, batch)
    f3 = _flat(ops, factor, factor_shape, batch)
    lower = _transpose(ops, f3) if upper else f3
    x = kernels.solve(lower, b3, "cholesky")
    return ops.reshape(x, batch + b_shape[-2:])


def solve_triangular(ops: Any, kernels: Kernels, a, b, a_shape: Sequence[int],
                     b_shape: Sequence[int], upper: bool, left: bool = True,
                     unitriangular: bool = False):
    """``torch.linalg.solve_triangular(A, B, upper, left, unitriangular)``: ``X`` with
    ``A X = B`` (``X A = B`` when not ``left``) by one substitution that reads only ``A``'s
    upper or lower triangle (its diagonal taken as ones when ``unitriangular``); ``B`` a
    (batch of) matrices, the batches broadcast. ``torch.triangular_solve``'s ``transpose``
    is ``A^T``: pass the transposed ``A`` with ``upper`` flipped."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if len(b_shape) < 2:
        raise LinalgError(f"solve_triangular: B must be a (batch of) matrices, got shape "
                          f"{b_shape}")
    n = a_shape[-1]
    if not _same_size(b_shape[-2 if left else -1], n):
        raise LinalgError(f"solve_triangular: A {a_shape} and B {b_shape} do not fit "
                          f"({'left' if left else 'right'} side)")
    batch = batch_shape(a_shape, b_shape)
    a3, b3 = _flat(ops, a, a_shape, batch), _flat(ops, b, b_shape, batch)
    if not left:  # X A = B  <=>  A^T X^T = B^T, and A^T is triangular the other way
        a3, b3, upper = _transpose(ops, a3), _transpose(ops, b3), not upper
    kind = ("unit_" if unitriangular else "") + ("upper" if upper else "lower")
    x = kernels.solve(a3, b3, kind)
    if not left:
        x = _transpose(ops, x)
    return ops.reshape(x, batch + b_shape[-2:])


# matrix_exp: a degree-15 Taylor polynomial (Paterson-Stockmeyer: 6 products) of A / 2^s with
# the 1-norm of A / 2^s at most THETA, whose truncation error 2^-16k / 16! is ~5e-14 relative
# for float32 (theta 1) and ~7e-19 for float64 (theta 0.5); then s squarings. s is computed at
# run time per matrix, but the graph is static: MAX_SQUARINGS squarings are always computed and
# each one kept only where it is < s, so a 1-norm above theta * 2^24 (exp of such a matrix
# overflows float32 unless it is near skew-symmetric) is under-scaled and loses accuracy.
MATRIX_EXP_THETA = {"float32": 1.0, "float64": 0.5}
MAX_SQUARINGS = 24


def matrix_exp(ops: Any, matmul: Callable, a, shape: Sequence[int], dtype: str,
               const: Callable, emit: _Emit = lambda e: e):
    """``torch.linalg.matrix_exp``: ``exp(A)`` of a (batch of) square matrices by scaling and
    squaring (see ``MATRIX_EXP_THETA``); ``matmul`` multiplies two ``(B, n, n)`` values."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    a3 = emit(_flat(ops, a, shape, batch))
    theta = MATRIX_EXP_THETA[dtype]
    norm = ops.max(ops.sum(ops.abs(a3), axis=[1]), axis=[1])                   # (B,) 1-norm
    steps = ops.ceil(ops.divide(ops.log(ops.divide(norm, const(np.array(theta, dtype)))),
                                const(np.array(np.log(2.0), dtype))))
    steps = ops.minimum(ops.maximum(steps, const(np.array(0, dtype))),
                        const(np.array(MAX_SQUARINGS, dtype)))
    steps = emit(ops.reshape(steps, (_count(batch), 1, 1)))
    x = emit(ops.multiply(a3, ops.power(const(np.array(2, dtype)), ops.negative(steps))))
    x2 = emit(matmul(x, x))
    x3 = emit(matmul(x2, x))
    x4 = emit(matmul(x2, x2))
    eye = const(np.eye(n, dtype=dtype)[None])
    coefficient = [1.0 / np.prod(np.arange(1, k + 1, dtype=np.float64)) for k in range(16)]

    def block(j):
        c = [const(np.array(coefficient[4 * j + i], dtype)) for i in range(4)]
        return ops.add(ops.add(ops.multiply(eye, c[0]), ops.multiply(x, c[1])),
                       ops.add(ops.multiply(x2, c[2]), ops.multiply(x3, c[3])))

    value = emit(block(3))
    for j in (2, 1, 0):
        value = emit(ops.add(matmul(value, x4), block(j)))
    for k in range(MAX_SQUARINGS):
        square = matmul(value, value)
        value = emit(ops.where(ops.less(const(np.array(k, dtype)), steps), square, value))
    return ops.reshape(value, shape)
