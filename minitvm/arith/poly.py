"""The canonical form of an integer expression: a sum of ``coefficient * monomial`` plus a constant.

A monomial is a sorted tuple of atom indices (repeats are powers): atoms are variables and the
expressions the canonical form cannot see through (``x // y``, ``min(x, y)``, loads, calls),
numbered per simplification in order of first appearance. ``terms`` keeps insertion order, so
the printed order follows the input.
"""

from __future__ import annotations

from collections import Counter
from math import gcd

Mono = tuple[int, ...]


class Poly:
    """``sum(coeff * monomial for monomial, coeff in terms.items()) + const`` of one dtype."""

    __slots__ = ("dtype", "terms", "const", "_key", "_expr")

    def __init__(self, dtype: str, terms: dict[Mono, int] | None = None, const: int = 0):
        self.dtype = dtype
        self.terms: dict[Mono, int] = {} if terms is None else terms
        self.const = const
        self._key = None
        self._expr = None

    @staticmethod
    def atom(dtype: str, index: int) -> Poly:
        """The Poly ``1 * atom``."""
        return Poly(dtype, {(index,): 1})

    def is_const(self) -> bool:
        """Whether no monomial is left (the value is ``const``)."""
        return not self.terms

    def copy(self) -> Poly:
        """A copy that may be mutated."""
        return Poly(self.dtype, dict(self.terms), self.const)

    def key(self) -> tuple:
        """A hashable identity of the value (flat: monomials hold atom indices)."""
        if self._key is None:
            self._key = ("P", self.dtype, frozenset(self.terms.items()), self.const)
        return self._key

    def terms_key(self) -> tuple:
        """The identity of the non-constant part."""
        return ("T", self.dtype, frozenset(self.terms.items()))

    def add_(self, other: Poly, scale: int = 1) -> Poly:
        """``self += other * scale`` in place (only on a Poly nobody else holds)."""
        terms = self.terms
        for m, c in other.terms.items():
            v = terms.get(m, 0) + c * scale
            if v:
                terms[m] = v
            else:
                terms.pop(m, None)
        self.const += other.const * scale
        return self

    def add_term_(self, mono: Mono, coeff: int) -> Poly:
        """``self += coeff * mono`` in place (the empty monomial is the constant)."""
        if not mono:
            self.const += coeff
            return self
        v = self.terms.get(mono, 0) + coeff
        if v:
            self.terms[mono] = v
        else:
            self.terms.pop(mono, None)
        return self

    def scaled(self, k: int) -> Poly:
        """``self * k`` as a new Poly."""
        if k == 0:
            return Poly(self.dtype)
        return Poly(self.dtype, {m: c * k for m, c in self.terms.items()}, self.const * k)

    def exact_div(self, k: int) -> Poly:
        """``self / k`` where ``k`` divides every coefficient and the constant."""
        return Poly(self.dtype, {m: c // k for m, c in self.terms.items()}, self.const // k)

    def items(self) -> list[tuple[Mono, int]]:
        """Terms with the constant as the empty monomial."""
        out = list(self.terms.items())
        if self.const:
            out.append(((), self.const))
        return out

    def coeff_gcd(self) -> int:
        """The gcd of the monomials' coefficients (0 for a constant)."""
        g = 0
        for c in self.terms.values():
            g = gcd(g, c)
        return g



def mono_gcd(a: Mono, b: Mono) -> Mono:
    """The common factor of two monomials (multiset intersection)."""
    if not a or not b:
        return ()
    return tuple(sorted((Counter(a) & Counter(b)).elements()))





def split_content(polys: list[Poly]) -> tuple[int, Mono]:
    """The largest ``g * monomial`` dividing every term of every poly (g > 0; 0 if all zero)."""
    g = 0
    mono: Mono | None = None
    for p in polys:
        for m, c in p.items():
            g = gcd(g, c)
            mono = m if mono is None else mono_gcd(mono, m)
    return g, (mono or ())
