"""Integer ``a ** b`` as a TIR expression, exact for every exponent with numpy's wrapping.

llvm has no integer pow and a float64 ``pow`` per element is inexact above 2**53 and slower
than numpy, so the power is multiplied out. Multiplication modulo 2**n does not depend on the
order, so the product wraps exactly as numpy's squaring loop does. The exponent's low 6 bits
are multiplied out by repeated squaring. Beyond them, an even base gives 0 (``b >= n``), and
for an odd base ``a ** 64 == 1 + 2**8 * t`` modulo 2**n, so ``(a ** 64) ** (b >> 6)`` is the
binomial sum of ``C(b >> 6, j) * 2**(8j) * t**j`` over the ``n / 8`` terms with ``8j < n``
(the rest vanish modulo 2**n): 4 terms for int32 instead of 24 more squarings. Every shared
value is let-bound (``T.Let``), so the expression grows linearly.
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


#: exponent bits multiplied out directly; the rest through the binomial expansion below
LOW_BITS = 6


def _signed_imm(value: int, dtype: str) -> E.IntImm:
    """``value`` modulo 2**n as an immediate of ``dtype`` (two's complement for signed)."""
    n = _bits(dtype)
    value %= 1 << n
    if not dtype.startswith("uint") and value >= 1 << (n - 1):
        value -= 1 << n
    return E.IntImm(dtype, value)


def _high_power(c, h, dt: str) -> tuple[list, E.PrimExpr]:
    """``c ** h`` modulo 2**n for ``c == 1 + 2**8 * t`` (an odd base to the 64th): the binomial
    sum of ``C(h, j) * 2**(8j) * t**j`` over the ``j`` with ``8j < n`` (higher terms vanish
    modulo 2**n). ``C(h, j)`` is needed modulo ``2**(n - 8j)`` only: the product of ``j``
    consecutive integers modulo 2**n, shifted right by the twos of ``j!`` and multiplied by the
    inverse of its odd part. Returns the let bindings and the value."""
    n = _bits(dt)
    t = E.Var("pow_t", dt)
    lets = [(t, tir_op.shift_right(c - _imm(1, dt), _imm(8, dt)))]
    total = _imm(1, dt) + h * t * _imm(1 << 8, dt)
    prod, t_pow, fact = h, t, 1
    for j in range(2, (n + 7) // 8):
        p = E.Var(f"pow_p{j}", dt)
        tj = E.Var(f"pow_t{j}", dt)
        lets += [(p, prod * (h - _imm(j - 1, dt))), (tj, t_pow * t)]
        prod, t_pow, fact = p, tj, fact * j
        twos = (fact & -fact).bit_length() - 1
        inverse = pow(fact >> twos, -1, 1 << n)
        binom = tir_op.shift_right(prod, _imm(twos, dt)) * _signed_imm(inverse, dt)
        total = total + binom * tj * _signed_imm(1 << (8 * j), dt)
    return lets, total


def int_power(a, b) -> E.PrimExpr:
    """``a ** b`` of two integer expressions, wrapping as numpy does, for every exponent; a
    negative exponent gives the truncated ``1 / a ** -b``. A constant exponent multiplies only
    its set bits. Otherwise the exponent's low 6 bits are multiplied out and, for an odd base,
    ``(a ** 64) ** (b >> 6)`` comes from its binomial expansion (``a ** 64 == 1`` modulo 2**8):
    ``n / 8`` terms instead of ``n - 8`` more squarings."""
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

    # bits 0..5 (an odd 8-bit base's whole period); a narrower exponent: all but its sign bit
    width = min(LOW_BITS, _bits(bt) - (0 if bt.startswith("uint") else 1))
    squares = [base] + [E.Var(f"pow_sq{k}", dt) for k in range(1, LOW_BITS + 1)]
    acc = None
    for k in range(width):
        term = bit_pick(k)(squares[k])
        acc = term if acc is None else acc * term
    value = acc
    lets = [(squares[k], squares[k - 1] * squares[k - 1]) for k in range(1, width)]
    if n > 8 and _bits(bt) - (0 if bt.startswith("uint") else 1) > LOW_BITS:
        lets.append((squares[LOW_BITS], squares[LOW_BITS - 1] * squares[LOW_BITS - 1]))
        h = E.Var("pow_h", dt)
        lets.append((h, E.Cast(dt, tir_op.shift_right(exp, _imm(LOW_BITS, bt)))
                     if bt != dt else tir_op.shift_right(exp, _imm(LOW_BITS, bt))))
        more, high = _high_power(squares[LOW_BITS], h, dt)
        lets += more
        value = value * high
    even = E.EQ(tir_op.bitwise_and(base, _imm(1, dt)), _imm(0, dt))
    value = E.Select(E.And(E.GE(exp, _imm(n, bt)), even), _imm(0, dt), value)
    if not (dt.startswith("uint") or bt.startswith("uint")):
        odd_exp = E.NE(tir_op.bitwise_and(exp, _imm(1, bt)), _imm(0, bt))
        value = E.Select(E.LT(exp, _imm(0, bt)), _negative_exponent(base, odd_exp), value)
    for var, bound in reversed(lets):
        value = E.Let(var, bound, value)
    return E.Let(base, a, E.Let(exp, b, value))
