"""What a shape rule assumes of sizes it cannot see: an exact division (a reshape's ``-1``,
equal sections of a split), two sizes that must agree (element counts, a reduction dim) or a
size that must be positive (a window's output).

With static shapes the rules check these themselves and raise. With symbolic sizes (one kernel
for every batch) they cannot, so they state each assumption here; whoever types a function
symbolically collects them (``collect``) and checks them against the sizes of each call, where a
broken one must not run the kernel (it would read or write the wrong number of elements)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from ..ir.prim_expr import Any
from .utils import dims_equal, is_static_dim

__all__ = ["collect", "collecting", "assume_divisible", "assume_equal", "assume_positive", "agree", "at_most",
           "divides", "taken_equal"]

# the list the innermost ``collect`` fills, or None: nobody is collecting
_ACTIVE: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "minitvm_shape_conditions", default=None)


@contextlib.contextmanager
def collect() -> Iterator[list]:
    """Gather the conditions the shape rules state in this block: a list of
    ``("divisible", num, den)`` (``num % den == 0``), ``("equal", a, b)`` (``a == b``) and
    ``("greater", a, b)`` (``a > b``)."""
    found: list = []
    token = _ACTIVE.set(found)
    try:
        yield found
    finally:
        _ACTIVE.reset(token)


def collecting() -> bool:
    """Whether someone collects the conditions stated here (a symbolic kernel being typed or
    built, which checks them at each call): a compute may then take two sizes it cannot prove
    equal as equal, stating it, where otherwise it must refuse them."""
    return _ACTIVE.get() is not None


def _note(kind: str, a, b) -> None:
    found = _ACTIVE.get()
    if found is None or isinstance(a, Any) or isinstance(b, Any):
        return  # (an unknown size cannot be checked: the caller sees it left unknown)
    if is_static_dim(a) and is_static_dim(b):
        return  # (the rule checked it)
    found.append((kind, a, b))


def assume_divisible(num, den) -> None:
    """The rule divided ``num`` by ``den`` assuming no remainder."""
    _note("divisible", num, den)


def assume_equal(a, b) -> None:
    """The rule took sizes ``a`` and ``b`` to be equal."""
    if not dims_equal(a, b):
        _note("equal", a, b)


def assume_positive(size) -> None:
    """The rule took ``size`` (a computed output extent) to be at least 1."""
    _note("greater", size, 0)


def agree(a, b) -> bool:
    """False only when sizes ``a`` and ``b`` are static and differ; otherwise True, with their
    equality stated where one is symbolic (the check a shape rule makes of two sizes)."""
    if is_static_dim(a) and is_static_dim(b):
        return a == b
    assume_equal(a, b)
    return True


def taken_equal(a, b) -> bool:
    """Whether a rule may take sizes ``a`` and ``b`` as one: they are the same size, or (only
    while someone collects, see ``collecting``) at least one is symbolic and their equality is
    stated for each call to check (a concatenation's ``n`` and ``m``, ``n`` and a slice's
    ``max(min(n, 1), 0) + max(n - 1, 0)`` no rewrite proves equal). Outside a collection two
    sizes it cannot prove equal are not the same."""
    if dims_equal(a, b):
        return True
    if collecting() and not (is_static_dim(a) and is_static_dim(b)) and \
            not isinstance(a, Any) and not isinstance(b, Any):
        _note("equal", a, b)
        return True
    return False


def divides(num, den) -> bool:
    """False only when ``num`` and ``den`` are static and ``den`` does not divide ``num``;
    otherwise True, with the division stated exact where one is symbolic."""
    if is_static_dim(num) and is_static_dim(den):
        return den != 0 and num % den == 0
    assume_divisible(num, den)
    return True


def at_most(a, b) -> bool:
    """False only when sizes ``a`` and ``b`` are static and ``a > b``; otherwise True, with
    ``a <= b`` stated where one is symbolic (as ``b + 1 > a``: a slice or an index extent that
    must fit in the size it reads)."""
    if is_static_dim(a) and is_static_dim(b):
        return a <= b
    if not (isinstance(a, Any) or isinstance(b, Any) or dims_equal(a, b)):
        _note("greater", b + 1, a)
    return True
