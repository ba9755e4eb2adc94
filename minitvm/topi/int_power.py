"""Integer ``a ** b`` as a TIR expression, exact for every exponent with numpy's wrapping.

llvm has no integer pow and a float64 ``pow`` per element is inexact above 2**53 and slower
than numpy, so the power is multiplied out by repeated squaring. Multiplication modulo 2**n does
not depend on the order, so the product wraps exactly as numpy's squaring loop does. Only the
exponent's low ``n - 2`` bits matter (``n`` the base's width): an odd base's powers repeat with
a period dividing 2**(n - 2) (``a ** 2**k == 1`` modulo 2**(k + 2)), and an even base to an
exponent of ``n`` or more is 0. The squares are let-bound (``T.Let``), so the expression grows
linearly with ``n`` instead of doubling with each squaring.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import op as tir_op

__all__ = ["int_power"]


def _bits(dtype: str) -> int:
    """The width of an integer dtype ("int32" -> 32, "uint8" -> 8)."""
    return int(dtype.split("x")[0].removeprefix("u").removeprefix("int"))


def _imm(value: int, dtype: str) -> E.IntImm:
    return E.IntImm(dtype, value)


def _negative_exponent(base, exp_odd) -> E.PrimExpr:
    """``1 / a ** -b`` truncated: 1 for ``a == 1``, +-1 for ``a == -1``, else 0 (numpy refuses
    negative integer exponents; this is C's and ONNX Runtime's truncation)."""
    dt = base.dtype
    one, minus_one = _imm(1, dt), _imm(-1, dt)
    by_sign = exp_odd if isinstance(exp_odd, E.PrimExpr) else E.IntImm("bool", int(exp_odd))
    return E.Select(E.EQ(base, one), one,
                    E.Select(E.EQ(base, minus_one), E.Select(by_sign, minus_one, one),
                             _imm(0, dt)))


def _product_of_squares(base: E.Var, picks) -> E.PrimExpr:
    """``prod(term(k, base ** 2**k) for k)`` with the squares let-bound: ``picks`` is a list of
    functions ``square -> factor`` (one per exponent bit, lowest first)."""
    squares = [base] + [E.Var(f"pow_sq{k}", base.dtype) for k in range(1, len(picks))]
    acc = None
    for pick, sq in zip(picks, squares, strict=True):
        term = pick(sq)
        if term is not None:
            acc = term if acc is None else acc * term
    value = _imm(1, base.dtype) if acc is None else acc
    for k in range(len(squares) - 1, 0, -1):
        value = E.Let(squares[k], squares[k - 1] * squares[k - 1], value)
    return value


def _power_by_constant(a, b: int) -> E.PrimExpr:
    """``a ** b`` for a known exponent: only its set bits are multiplied."""
    dt = a.dtype
    n = _bits(dt)
    base = E.Var("pow_base", dt)
    if b < 0:
        return E.Let(base, a, _negative_exponent(base, b % 2 == 1))
    reduced = b if b < n else b % (1 << (n - 2))  # (odd bases only: even ones give 0)
    picks = [(lambda sq: sq) if reduced >> k & 1 else (lambda sq: None)
             for k in range(max(reduced.bit_length(), 1))]
    value = _product_of_squares(base, picks)
    if b >= n:
        even = E.EQ(tir_op.bitwise_and(base, _imm(1, dt)), _imm(0, dt))
        value = E.Select(even, _imm(0, dt), value)
    return E.Let(base, a, value)


def int_power(a, b) -> E.PrimExpr:
    """``a ** b`` of two integer expressions, wrapping as numpy does, for every exponent; a
    negative exponent gives the truncated ``1 / a ** -b``. A constant exponent multiplies only
    its set bits."""
    if isinstance(b, int):
        b = E.IntImm(a.dtype, b)
    if isinstance(b, E.IntImm):
        return _power_by_constant(a, int(b.value))
    dt, bt = a.dtype, b.dtype
    n = _bits(dt)
    base, exp = E.Var("pow_base", dt), E.Var("pow_exp", bt)
    one = _imm(1, dt)

    def bit_pick(k):
        bit = E.NE(tir_op.bitwise_and(exp, _imm(1 << k, bt)), _imm(0, bt))
        return lambda sq: E.Select(bit, sq, one)

    # bits 0 .. n-3 (the odd bases' period); a narrower exponent: all but its sign bit
    width = min(n - 2, _bits(bt) - (0 if bt.startswith("uint") else 1))
    value = _product_of_squares(base, [bit_pick(k) for k in range(width)])
    even = E.EQ(tir_op.bitwise_and(base, _imm(1, dt)), _imm(0, dt))
    value = E.Select(E.And(E.GE(exp, _imm(n, bt)), even), _imm(0, dt), value)
    if not (dt.startswith("uint") or bt.startswith("uint")):
        odd_exp = E.NE(tir_op.bitwise_and(exp, _imm(1, bt)), _imm(0, bt))
        value = E.Select(E.LT(exp, _imm(0, bt)), _negative_exponent(base, odd_exp), value)
    return E.Let(base, a, E.Let(exp, b, value))
