"""Constant integer bounds: ``ConstIntBound``, saturating interval arithmetic, a direct bound walk.

Intervals are ``(lo, hi)`` pairs of Python ints where ``POS_INF`` / ``NEG_INF`` (TVM's
``ConstIntBound.kPosInf`` / ``kNegInf``, +-(2**63 - 1)) stand for unbounded ends; every
operation saturates to them, so no interval ever holds a value beyond them.
"""

from __future__ import annotations

from collections.abc import Callable

from ..tir import expr as E
from ..tir.stmt_functor import expr_children

POS_INF = (1 << 63) - 1
NEG_INF = -POS_INF
Interval = tuple[int, int]
EVERYTHING: Interval = (NEG_INF, POS_INF)


class ConstIntBound:
    """The integer range ``[min_value, max_value]`` of an expression (TVM's ConstIntBound)."""

    __slots__ = ("min_value", "max_value")
    POS_INF = POS_INF
    NEG_INF = NEG_INF

    def __init__(self, min_value: int, max_value: int):
        self.min_value = _clamp(int(min_value))
        self.max_value = _clamp(int(max_value))

    def __eq__(self, other) -> bool:
        if isinstance(other, ConstIntBound):
            return (self.min_value, self.max_value) == (other.min_value, other.max_value)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.min_value, self.max_value))

    def __repr__(self) -> str:
        def text(v: int) -> str:
            return "+inf" if v == POS_INF else "-inf" if v == NEG_INF else str(v)

        return f"ConstIntBound[{text(self.min_value)}, {text(self.max_value)}]"


def _clamp(v: int) -> int:
    return POS_INF if v >= POS_INF else NEG_INF if v <= NEG_INF else v


def is_inf(v: int) -> bool:
    """Whether ``v`` is one of the two unbounded ends."""
    return v == POS_INF or v == NEG_INF


def index_bits(dtype: str) -> int | None:
    """Bit width of a scalar signed or unsigned integer dtype; None for anything else."""
    for prefix in ("int", "uint"):
        if dtype.startswith(prefix) and dtype[len(prefix):].isdigit():
            return int(dtype[len(prefix):])
    return None


_RANGES: dict[str, Interval] = {}


def dtype_range(dtype: str) -> Interval:
    """The values a scalar of ``dtype`` can hold (everything for floats and unknown dtypes)."""
    r = _RANGES.get(dtype)
    if r is None:
        r = _RANGES[dtype] = _dtype_range(dtype)
    return r


def _is_int(dtype: str) -> bool:
    r = _INTS.get(dtype)
    if r is None:
        r = _INTS[dtype] = index_bits(dtype) is not None
    return r


_INTS: dict[str, bool] = {}


def _dtype_range(dtype: str) -> Interval:
    if dtype == "bool":
        return (0, 1)
    bits = index_bits(dtype)
    if bits is None:
        return EVERYTHING
    if dtype.startswith("uint"):
        return (0, _clamp((1 << bits) - 1))
    return (_clamp(-(1 << (bits - 1))), _clamp((1 << (bits - 1)) - 1))


def wrap_int(value: int, dtype: str) -> int:
    """``value`` wrapped into the range of an integer dtype (two's complement)."""
    lo, hi = dtype_range(dtype)
    if lo <= value <= hi or hi == POS_INF:
        return value
    span = hi - lo + 1
    return (value - lo) % span + lo


# --------------------------------------------------------------------------- interval arithmetic
def iv_add(a: Interval, b: Interval) -> Interval:
    """``a + b``, saturating."""
    lo = NEG_INF if NEG_INF in (a[0], b[0]) else _clamp(a[0] + b[0])
    hi = POS_INF if POS_INF in (a[1], b[1]) else _clamp(a[1] + b[1])
    return (lo, hi)


def iv_neg(a: Interval) -> Interval:
    """``-a`` (the infinities are symmetric)."""
    return (-a[1], -a[0])


def _mul(x: int, y: int) -> int:
    if x == 0 or y == 0:
        return 0
    if is_inf(x) or is_inf(y):
        return POS_INF if (x > 0) == (y > 0) else NEG_INF
    return _clamp(x * y)


def iv_mul(a: Interval, b: Interval) -> Interval:
    """``a * b`` from the four corners."""
    c = (_mul(a[0], b[0]), _mul(a[0], b[1]), _mul(a[1], b[0]), _mul(a[1], b[1]))
    return (min(c), max(c))


def iv_scale(a: Interval, k: int) -> Interval:
    """``a * k`` for a constant ``k``."""
    return (_mul(a[0], k), _mul(a[1], k)) if k >= 0 else (_mul(a[1], k), _mul(a[0], k))


def _pow(x: int, k: int) -> int:
    if is_inf(x) or (abs(x) > 1 and abs(x).bit_length() * k > 64):
        return POS_INF if x > 0 or k % 2 == 0 else NEG_INF
    return _clamp(x ** k)


def iv_pow(a: Interval, k: int) -> Interval:
    """``a ** k`` for ``k >= 1`` (even powers are non-negative)."""
    lo, hi = _pow(a[0], k), _pow(a[1], k)
    if k % 2:
        return (lo, hi)
    if a[0] >= 0:
        return (lo, hi)
    if a[1] <= 0:
        return (hi, lo)
    return (0, max(lo, hi))


def _div(x: int, y: int, floor: bool) -> int:
    if is_inf(x):
        return POS_INF if (x > 0) == (y > 0) else NEG_INF
    if floor:
        return x // y
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def iv_div(a: Interval, b: Interval, floor: bool) -> Interval:
    """``a // b`` (floor) or ``truncdiv(a, b)``; everything unless ``b`` is finite and excludes 0."""
    if b[0] <= 0 <= b[1] or is_inf(b[0]) or is_inf(b[1]):
        if b[0] > 0 and a[0] >= 0:  # divisor in [b0, inf): the quotient shrinks towards 0
            return (0, _div(a[1], b[0], floor))
        return EVERYTHING
    c = [_div(x, y, floor) for x in a for y in b]
    return (min(c), max(c))


def iv_floormod(a: Interval, b: Interval) -> Interval:
    """``floormod(a, b)``: the sign of the divisor, less than it in magnitude."""
    if b[0] > 0:
        if a[0] >= 0 and a[1] < b[0]:
            return a
        return (0, b[1] - 1 if not is_inf(b[1]) else POS_INF)
    if b[1] < 0:
        if a[1] <= 0 and a[0] > b[1]:
            return a
        return (b[0] + 1 if not is_inf(b[0]) else NEG_INF, 0)
    m = max(-b[0], b[1])
    return EVERYTHING if is_inf(m) else (-(m - 1), m - 1)


def iv_truncmod(a: Interval, b: Interval) -> Interval:
    """``truncmod(a, b)``: the sign of the dividend, less than the divisor in magnitude."""
    m = max(abs(b[0]), abs(b[1]))
    m = POS_INF if is_inf(m) else m - 1
    lo = 0 if a[0] >= 0 else max(a[0], -m)
    hi = 0 if a[1] <= 0 else min(a[1], m)
    return (lo, hi)


def iv_union(a: Interval, b: Interval) -> Interval:
    """The smallest interval holding both."""
    return (min(a[0], b[0]), max(a[1], b[1]))


def iv_intersect(a: Interval, b: Interval) -> Interval:
    """The values in both (``lo > hi`` when none)."""
    return (max(a[0], b[0]), min(a[1], b[1]))


# --------------------------------------------------------------------------- direct bound walk
_CMP = (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE, E.And, E.Or, E.Not)


def _node_bound(e, kids: list[Interval], var_bound: Callable) -> Interval:
    t = type(e)
    if t is E.IntImm:
        return (_clamp(e.value), _clamp(e.value))
    if isinstance(e, E.Var):
        return var_bound(e)
    if isinstance(e, _CMP):
        return (0, 1)
    rng = dtype_range(e.dtype)
    if rng == EVERYTHING and not _is_int(e.dtype):
        return rng
    if t is E.Add:
        r = iv_add(kids[0], kids[1])
    elif t is E.Sub:
        r = iv_add(kids[0], iv_neg(kids[1]))
    elif t is E.Mul:
        r = iv_mul(kids[0], kids[1])
    elif t is E.FloorDiv or t is E.Div:
        r = iv_div(kids[0], kids[1], t is E.FloorDiv)
    elif t is E.FloorMod:
        r = iv_floormod(kids[0], kids[1])
    elif t is E.Mod:
        r = iv_truncmod(kids[0], kids[1])
    elif t is E.Min:
        r = (min(kids[0][0], kids[1][0]), min(kids[0][1], kids[1][1]))
    elif t is E.Max:
        r = (max(kids[0][0], kids[1][0]), max(kids[0][1], kids[1][1]))
    elif t is E.Select:
        r = iv_union(kids[1], kids[2])
    elif t is E.Cast and index_bits(e.value.dtype) is not None:
        r = kids[0]
    elif t is E.Any:
        r = (0, POS_INF)
    else:
        r = EVERYTHING
    if r[0] > rng[1] or r[1] < rng[0]:  # a cast that wraps: nothing is known
        return rng
    return iv_intersect(r, rng)


def expr_bound(expr, var_bound: Callable) -> Interval:
    """Bound ``expr`` node by node (iteratively), asking ``var_bound(var)`` for each variable."""
    memo: dict[int, Interval] = {}
    stack = [expr]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        kids = expr_children(node)
        todo = [c for c in kids if id(c) not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[id(node)] = _node_bound(node, [memo[id(c)] for c in kids], var_bound)
    return memo[id(expr)]
