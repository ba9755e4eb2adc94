"""Peano naturals (``nat.rly``'s ``nat``) for tests: build them as Relay expressions or values and
read results back as Python ints, as TVM's ``relay.testing.nat`` does. Loops, not recursion, so a
100,000 deep natural is fine."""

from __future__ import annotations

from ..backend.values import ConstructorValue

__all__ = ["get_type", "count", "make_nat_value", "make_nat_expr"]


def get_type(prelude, name: str) -> tuple:
    """``(global type var, *constructors)`` of the ADT ``name`` in ``prelude.mod``."""
    ty_var = prelude.mod.get_global_type_var(name)
    return (ty_var, *prelude.mod.type_definitions[ty_var].constructors)


def _nat_ctors(prelude) -> tuple:
    try:
        _, zero, succ = get_type(prelude, "nat")
    except ValueError as err:
        raise ValueError("the module holds no `nat` ADT: import it with "
                         "mod.import_from_std(\"nat.rly\")") from err
    return zero, succ


def count(prelude, n: ConstructorValue) -> int:
    """The Python int a ``nat`` value (``succ(succ(zero))`` -> 2) stands for."""
    zero, succ = _nat_ctors(prelude)
    total = 0
    while True:
        if not isinstance(n, ConstructorValue):
            raise TypeError(f"count: expected a nat ConstructorValue, got {type(n).__name__}")
        if n.tag == zero.tag:
            return total
        if n.tag != succ.tag:
            raise ValueError(f"count: constructor tag {n.tag} is neither zero nor succ")
        total += 1
        n = n.fields[0]


def _check_natural(n: int) -> None:
    if int(n) != n or n < 0:
        raise ValueError(f"a nat needs a non-negative integer, got {n!r}")


def make_nat_value(prelude, n: int) -> ConstructorValue:
    """The ``nat`` value for the Python int ``n`` (the inverse of ``count``)."""
    _check_natural(n)
    zero, succ = _nat_ctors(prelude)
    value = ConstructorValue(zero.tag, [], zero)
    for _ in range(int(n)):
        value = ConstructorValue(succ.tag, [value], succ)
    return value


def make_nat_expr(prelude, n: int):
    """The Relay expression ``succ(...succ(zero())...)`` with ``n`` successors."""
    _check_natural(n)
    zero, succ = _nat_ctors(prelude)
    expr = zero()
    for _ in range(int(n)):
        expr = succ(expr)
    return expr
