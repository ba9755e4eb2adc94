"""torch's dense linear algebra on small matrices -- ``linalg.cholesky``, ``cholesky_solve``,
``linalg.solve``, ``linalg.inv``, ``linalg.slogdet`` / ``det`` and the LAPACK-style packed LU
behind them -- composed for the importers of both dialects from the operators they share.

The factorizations run unrolled over a static matrix order ``n`` (at most ``MAX_ORDER``), each
step a handful of whole-matrix operators batched over the leading dimensions: a right-looking
Cholesky, and LU with partial pivoting (LAPACK ``getrf``'s choice of pivot: the first entry of
largest magnitude; a zero pivot column is skipped, so a singular matrix gets determinant 0).
Float32 results agree with torch's LAPACK to about 1e-6 relative on well-conditioned input.
Where torch raises at run time (a matrix that is not positive definite, a singular system),
these give NaN / inf instead.

``ops`` is the dialect's operator namespace (``relay.op`` or ``relax.op``); ``const(array)``
makes a constant of a numpy array (its dtype kept); ``emit`` binds a value used more than once
(Relax's ``ctx.emit``; the identity for Relay). Shapes are static tuples of ints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["MAX_ORDER", "LinalgError", "batch_shape", "check_order", "cholesky",
           "cholesky_solve", "inverse", "lu_factor", "slogdet", "det", "solve"]

# the largest matrix order unrolled (each order costs about a dozen operators per step)
MAX_ORDER = 16

_Emit = Callable[[Any], Any]


class LinalgError(ValueError):
    """A linear-algebra operand these compositions cannot take (order, dtype, shape)."""


def check_order(op_name: str, shape: Sequence, dtype: str) -> int:
    """The static order ``n`` of the square matrices in ``shape`` (``(..., n, n)``), refusing a
    symbolic or too-large order and a non-float dtype with a message naming ``op_name``."""
    if len(shape) < 2:
        raise LinalgError(f"{op_name}: expected a (batch of) square matrices, got shape "
                          f"{tuple(shape)}")
    rows, cols = shape[-2], shape[-1]
    if not all(isinstance(d, int | np.integer) for d in shape):
        raise LinalgError(f"{op_name}: matrix shape {tuple(shape)} is symbolic; the "
                          "factorization is unrolled over a static order")
    if rows != cols:
        raise LinalgError(f"{op_name}: expected square matrices, got {rows}x{cols}")
    if rows > MAX_ORDER:
        raise LinalgError(f"{op_name}: matrix order {rows} exceeds the unrolled limit "
                          f"{MAX_ORDER}")
    if not dtype.startswith("float") or dtype == "float16":
        raise LinalgError(f"{op_name}: expected float32 or float64 matrices, got {dtype}")
    return int(rows)


def batch_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The broadcast leading (batch) dimensions of operands shaped ``(..., r, c)``."""
    return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s[:-2]) for s in shapes)))


def _transpose(ops: Any, x):
    """Swap the last two axes of a 3-D value (Relay's ``transpose``, Relax's ``permute_dims``)."""
    permute = getattr(ops, "permute_dims", None) or ops.transpose
    return permute(x, (0, 2, 1))


def _cast(ops: Any, x, dtype: str):
    return (getattr(ops, "astype", None) or ops.cast)(x, dtype)


def _flat(ops: Any, x, shape: Sequence[int], batch: tuple[int, ...]):
    """``x`` broadcast to ``batch`` leading dimensions and reshaped to ``(B, rows, cols)``."""
    shape = tuple(shape)
    if shape[:-2] != batch:
        x = ops.broadcast_to(x, batch + shape[-2:])
    return ops.reshape(x, (_count(batch),) + shape[-2:])


def _count(batch: tuple[int, ...]) -> int:
    """The number of matrices in a batch."""
    return int(np.prod(batch, dtype=np.int64))


def _index(const: Callable, k: int):
    return const(np.array([k], dtype="int64"))


def _rows(n: int) -> np.ndarray:
    """Row numbers as a ``(1, n, 1)`` column, to build masks by comparison."""
    return np.arange(n).reshape(1, n, 1)


class LUFactors:
    """A packed LU (``(B, n, n)``: unit-lower L below the diagonal, U on and above) with the
    row-pivot masks of each step (``(B, n, 1)``) and the permutation's sign (``(B, 1, 1)``)."""

    __slots__ = ("lu", "pivot_rows", "pivot_masks", "parity")

    def __init__(self, lu, pivot_rows: list, pivot_masks: list, parity):
        self.lu, self.pivot_rows = lu, pivot_rows
        self.pivot_masks, self.parity = pivot_masks, parity


def lu_factor(ops: Any, a, n: int, dtype: str, const: Callable,
              emit: _Emit = lambda e: e) -> LUFactors:
    """LU with partial pivoting of ``a`` (``(B, n, n)``), as LAPACK's ``getrf`` packs it."""
    zero, one = const(np.array(0, dtype)), const(np.array(1, dtype))
    rows = _rows(n)
    row_numbers = const(rows.astype("int32"))
    a = emit(a)
    parity = one
    pivot_rows, pivot_masks = [], []
    for k in range(n):
        at_k = const(rows == k)
        column = emit(ops.take(a, _index(const, k), axis=2))
        magnitude = ops.where(const(rows >= k), ops.abs(column), const(np.array(-1, dtype)))
        pivot = emit(_cast(ops, ops.argmax(magnitude, axis=1, keepdims=True), "int32"))
        is_pivot = emit(ops.equal(row_numbers, pivot))
        row_k = emit(ops.take(a, _index(const, k), axis=1))
        row_p = emit(ops.sum(ops.where(is_pivot, a, zero), axis=1, keepdims=True))
        a = emit(ops.where(at_k, row_p, ops.where(is_pivot, row_k, a)))
        parity = emit(ops.where(ops.equal(pivot, const(np.array(k, "int32"))), parity,
                                ops.negative(parity)))
        pivot_rows.append(pivot)
        pivot_masks.append(is_pivot)
        if k == n - 1:
            break
        diagonal = emit(ops.take(row_p, _index(const, k), axis=2))
        column = ops.take(a, _index(const, k), axis=2)
        multiplier = emit(ops.where(ops.equal(diagonal, zero), zero,
                                    ops.divide(column, diagonal)))
        updated = ops.subtract(a, ops.multiply(multiplier, row_p))
        cols = np.arange(n).reshape(1, 1, n)
        # rows below k: the multiplier in column k, the update right of it, earlier
        # multipliers (left of k) kept
        a = emit(ops.where(const((rows > k) & (cols > k)), updated,
                           ops.where(const((rows > k) & (cols == k)), multiplier, a)))
    return LUFactors(a, pivot_rows, pivot_masks, parity)


def _substitute(ops: Any, t, rhs, n: int, lower: bool, unit: bool, dtype: str,
                const: Callable, emit: _Emit):
    """``X`` with ``T X = rhs`` for triangular ``T`` (``(B, n, n)``; only its ``lower`` or
    upper triangle read, its diagonal taken as ones if ``unit``) and ``rhs`` ``(B, n, m)``."""
    zero = const(np.array(0, dtype))
    rows = _rows(n)
    cols = rows.reshape(1, 1, n)
    strict = (cols < rows) if lower else (cols > rows)
    t_rows_as_columns = emit(_transpose(ops, ops.where(const(strict), t, zero)))
    x = emit(ops.zeros_like(rhs))
    for k in (range(n) if lower else range(n - 1, -1, -1)):
        coefficients = ops.take(t_rows_as_columns, _index(const, k), axis=2)  # T[k, j] at j
        known = ops.sum(ops.multiply(coefficients, x), axis=1, keepdims=True)
        value = ops.subtract(ops.take(rhs, _index(const, k), axis=1), known)
        if not unit:
            diagonal = ops.take(ops.take(t, _index(const, k), axis=1), _index(const, k),
                                axis=2)
            value = ops.divide(value, diagonal)
        x = emit(ops.where(const(rows == k), value, x))
    return x


def _apply_pivots(ops: Any, factors: LUFactors, rhs, const: Callable, emit: _Emit):
    """``P rhs``: the factorization's row exchanges replayed on ``rhs`` (``(B, n, m)``)."""
    n = len(factors.pivot_masks)
    rows = _rows(n)
    for k, is_pivot in enumerate(factors.pivot_masks):
        row_k = emit(ops.take(rhs, _index(const, k), axis=1))
        row_p = ops.sum(ops.where(is_pivot, rhs, ops.zeros_like(rhs)), axis=1, keepdims=True)
        rhs = emit(ops.where(const(rows == k), row_p, ops.where(is_pivot, row_k, rhs)))
    return rhs


def _lu_solve(ops: Any, factors: LUFactors, rhs, n: int, dtype: str, const: Callable,
              emit: _Emit):
    permuted = _apply_pivots(ops, factors, emit(rhs), const, emit)
    y = _substitute(ops, factors.lu, permuted, n, True, True, dtype, const, emit)
    return _substitute(ops, factors.lu, y, n, False, False, dtype, const, emit)


def solve(ops: Any, a, b, a_shape: Sequence[int], b_shape: Sequence[int], dtype: str,
          const: Callable, emit: _Emit = lambda e: e, left: bool = True):
    """``torch.linalg.solve(A, B, left)``: ``X`` with ``A X = B`` (``X A = B`` when not
    ``left``); ``B`` a vector (``(n,)`` or ``A``'s batch + ``(n,)``) gives a vector."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    n = a_shape[-1]
    vector = len(b_shape) == 1 or (left and b_shape == a_shape[:-1])
    if vector:
        b = ops.expand_dims(b, len(b_shape)) if left else ops.expand_dims(b, len(b_shape) - 1)
        b_shape = b_shape + (1,) if left else b_shape[:-1] + (1, b_shape[-1])
    batch = batch_shape(a_shape, b_shape)
    a3, b3 = _flat(ops, a, a_shape, batch), _flat(ops, b, b_shape, batch)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a3, b3 = _transpose(ops, a3), _transpose(ops, b3)
    factors = lu_factor(ops, a3, n, dtype, const, emit)
    x = _lu_solve(ops, factors, b3, n, dtype, const, emit)
    if not left:
        x = _transpose(ops, x)
    x = ops.reshape(x, batch + b_shape[-2:])
    if vector:
        x = ops.reshape(x, batch + ((n,) if left else (b_shape[-1],)))
    return x


def inverse(ops: Any, a, shape: Sequence[int], dtype: str, const: Callable,
            emit: _Emit = lambda e: e):
    """``torch.linalg.inv``: the LU solve of ``A X = I``."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    a3 = _flat(ops, a, shape, batch)
    factors = lu_factor(ops, a3, n, dtype, const, emit)
    identity = ops.broadcast_to(const(np.eye(n, dtype=dtype)[None]),
                                (_count(batch), n, n))
    return ops.reshape(_lu_solve(ops, factors, identity, n, dtype, const, emit), shape)


def _diagonal(ops: Any, lu, n: int, dtype: str, const: Callable):
    """The diagonal of ``lu`` (``(B, n, n)``) as ``(B, n)``."""
    on_diagonal = const(np.eye(n, dtype=bool)[None])
    return ops.sum(ops.where(on_diagonal, lu, const(np.array(0, dtype))), axis=2)


def slogdet(ops: Any, a, shape: Sequence[int], dtype: str, const: Callable,
            emit: _Emit = lambda e: e):
    """``torch.linalg.slogdet``: ``(sign, log|det|)`` from the LU's pivots (sign 0 and
    ``-inf`` for a singular matrix), plus the packed LU ``(..., n, n)`` and 1-based int32
    pivots ``(..., n)`` that ATen's ``_linalg_slogdet`` also returns."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factors = lu_factor(ops, _flat(ops, a, shape, batch), n, dtype, const, emit)
    diagonal = emit(_diagonal(ops, factors.lu, n, dtype, const))
    sign = ops.multiply(ops.reshape(factors.parity, (_count(batch),)),
                        ops.prod(ops.sign(diagonal), axis=1))
    log_abs = ops.sum(ops.log(ops.abs(diagonal)), axis=1)
    return (ops.reshape(sign, batch), ops.reshape(log_abs, batch),
            ops.reshape(factors.lu, shape), _pivots(ops, factors, batch, n, const))


def det(ops: Any, a, shape: Sequence[int], dtype: str, const: Callable,
        emit: _Emit = lambda e: e):
    """``torch.linalg.det``: the product of the LU's diagonal with the permutation's sign,
    plus the packed LU and 1-based int32 pivots (ATen's ``_linalg_det`` outputs)."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    factors = lu_factor(ops, _flat(ops, a, shape, batch), n, dtype, const, emit)
    diagonal = _diagonal(ops, factors.lu, n, dtype, const)
    value = ops.multiply(ops.reshape(factors.parity, (_count(batch),)), ops.prod(diagonal, axis=1))
    return (ops.reshape(value, batch), ops.reshape(factors.lu, shape),
            _pivots(ops, factors, batch, n, const))


def _pivots(ops: Any, factors: LUFactors, batch: tuple[int, ...], n: int, const: Callable):
    """LAPACK's 1-based pivot rows ``(..., n)`` int32, gathered from the per-step pivots."""
    one_hot_steps = const(np.eye(n, dtype="int32").reshape(1, n, n))
    total = None
    for k, pivot in enumerate(factors.pivot_rows):  # pivot: (B, 1, 1)
        term = ops.multiply(ops.take(one_hot_steps, _index(const, k), axis=1), pivot)
        total = term if total is None else ops.add(total, term)
    return ops.add(ops.reshape(total, batch + (n,)), const(np.array(1, "int32")))


def cholesky(ops: Any, a, shape: Sequence[int], dtype: str, const: Callable,
             emit: _Emit = lambda e: e, upper: bool = False):
    """``torch.linalg.cholesky``: lower ``L`` with ``L L^H = A`` read from ``A``'s lower
    triangle (right-looking, one rank-1 update per column); ``U = L^T`` when ``upper``."""
    shape = tuple(shape)
    n, batch = shape[-1], tuple(shape[:-2])
    rows = _rows(n)
    cols = rows.reshape(1, 1, n)
    zero = const(np.array(0, dtype))
    a = emit(_flat(ops, a, shape, batch))
    a = emit(ops.where(const(cols <= rows), a, _transpose(ops, a)))  # symmetric from below
    factor = emit(ops.zeros_like(a))
    for k in range(n):
        column = emit(ops.take(a, _index(const, k), axis=2))
        root = emit(ops.sqrt(ops.take(column, _index(const, k), axis=1)))
        l_column = emit(ops.where(const(rows > k), ops.divide(column, root),
                                  ops.where(const(rows == k), root, zero)))
        factor = emit(ops.where(const(cols == k), l_column, factor))
        if k < n - 1:
            a = emit(ops.subtract(a, ops.multiply(l_column, _transpose(ops, l_column))))
    if upper:
        factor = _transpose(ops, factor)
    return ops.reshape(factor, shape)


def cholesky_solve(ops: Any, b, factor, b_shape: Sequence[int], factor_shape: Sequence[int],
                   dtype: str, const: Callable, emit: _Emit = lambda e: e,
                   upper: bool = False):
    """``torch.cholesky_solve(B, L, upper)``: ``X`` with ``A X = B`` for ``A = L L^T``
    (``U^T U`` when ``upper``): a forward then a backward triangular substitution."""
    b_shape, factor_shape = tuple(b_shape), tuple(factor_shape)
    n = factor_shape[-1]
    batch = batch_shape(b_shape, factor_shape)
    b3 = _flat(ops, b, b_shape, batch)
    f3 = emit(_flat(ops, factor, factor_shape, batch))
    lower = emit(_transpose(ops, f3)) if upper else f3
    upper_factor = f3 if upper else emit(_transpose(ops, f3))
    y = _substitute(ops, lower, b3, n, True, False, dtype, const, emit)
    x = _substitute(ops, upper_factor, y, n, False, False, dtype, const, emit)
    return ops.reshape(x, batch + b_shape[-2:])
