"""Modular sets ``{coeff * k + base}``: what an integer expression is congruent to.

``ModularSet(0, b)`` is the constant ``b``; ``ModularSet(1, 0)`` is every integer. Sets are
normalized as in TVM: ``coeff >= 0`` and ``0 <= base < coeff`` when ``coeff > 0``.
"""

from __future__ import annotations

from math import gcd

Mod = tuple[int, int]
EVERYTHING: Mod = (1, 0)


class ModularSet:
    """The set ``{coeff * k + base | k integer}`` (TVM's ``arith.ModularSet``)."""

    __slots__ = ("coeff", "base")

    def __init__(self, coeff: int, base: int):
        self.coeff, self.base = normalize(int(coeff), int(base))

    def __eq__(self, other) -> bool:
        if isinstance(other, ModularSet):
            return (self.coeff, self.base) == (other.coeff, other.base)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.coeff, self.base))

    def __repr__(self) -> str:
        return f"ModularSet(coeff={self.coeff}, base={self.base})"


def normalize(coeff: int, base: int) -> Mod:
    """The normal form of ``coeff * k + base``."""
    coeff = abs(coeff)
    return (coeff, base % coeff) if coeff else (0, base)


def m_add(a: Mod, b: Mod) -> Mod:
    """The set of ``x + y`` for ``x`` in ``a``, ``y`` in ``b``."""
    return normalize(gcd(a[0], b[0]), a[1] + b[1])


def m_scale(a: Mod, k: int) -> Mod:
    """The set of ``x * k``."""
    return normalize(a[0] * k, a[1] * k)


def m_mul(a: Mod, b: Mod) -> Mod:
    """The set of ``x * y``."""
    return normalize(gcd(gcd(a[0] * b[0], a[0] * b[1]), a[1] * b[0]), a[1] * b[1])


def m_union(a: Mod, b: Mod) -> Mod:
    """A set holding both ``a`` and ``b`` (for min, max, select)."""
    return normalize(gcd(gcd(a[0], b[0]), a[1] - b[1]), a[1])
