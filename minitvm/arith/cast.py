"""Casts in canonical form: constants fold; an integer cast distributes over a sum's terms
(``cast(i64, i + j + 1)`` is ``cast(i64, i) + cast(i64, j) + 1``) when it widens or when the
bounds show no term overflows the target dtype, as TVM's canonical simplifier does.
"""

from __future__ import annotations

from ..tir import expr as E
from .bound import EVERYTHING, dtype_range, wrap_int
from .poly import Poly


def _const(e):
    return e.value if isinstance(e, (E.IntImm, E.FloatImm)) else None


def to_index(cz, node, v) -> Poly:
    """``Cast(int dtype, v)``: folded, or distributed over a sum when no value overflows."""
    target = node.dtype
    if isinstance(v, Poly):
        if v.dtype == target:
            return v
        if v.is_const():
            return Poly(target, const=wrap_int(v.const, target))
        rng = dtype_range(target)
        widening = dtype_range(v.dtype)[0] >= rng[0] and dtype_range(v.dtype)[1] <= rng[1]
        fits = all(rng[0] <= x <= rng[1] for x in cz.bound(v))
        if widening or (fits and all(rng[0] <= x <= rng[1] for m in v.terms
                                     for x in cz.mono_bound(m))):
            out = Poly(target, const=v.const)
            for m, c in v.terms.items():
                inner = cz.mono_expr(m, 1, v.dtype)
                a = cz.atom(("cast", target, cz.intern(("mono", v.dtype, m))),
                            E.Cast(target, inner), cz.mono_bound(m), cz.mono_mod(m))
                out.add_(a, c)
            return out
        bound = cz.bound(v) if fits else EVERYTHING
        return cz.atom(("cast", target, cz.vid(v)), E.Cast(target, cz.to_expr(v)), bound)
    c = _const(v.expr)
    if c is not None:
        return Poly(target, const=wrap_int(int(c), target))
    return cz.atom(("cast", target, v.tid), E.Cast(target, v.expr), dtype_range(v.expr.dtype))



def to_other(cz, node, v):
    """``Cast`` to a float, bool, unsigned or vector dtype: constants fold."""
    target = node.dtype
    expr = cz.to_expr(v)
    if expr.dtype == target:
        return v if not isinstance(v, Poly) else cz.term(expr, ("P", cz.vid(v)))
    c = _const(expr)
    if c is not None and "x" not in target:
        if target == "bool":
            return cz.bool_term(c != 0)
        if target.startswith(("float", "bfloat")):
            return cz.const_term(E.FloatImm(target, float(c)))
        if target.startswith("uint"):
            return cz.const_term(E.IntImm(target, wrap_int(int(c), target)))
    return cz.term(E.Cast(target, expr), ("cast", target, cz.vid(v)))
