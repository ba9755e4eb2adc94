"""Symbolic integer intervals: ``IntervalSet`` and the evaluation of an expression over a domain.

A variable bound to a symbolic ``Range`` (``i`` in ``[0, n)``) has symbolic ends; replacing its
linear occurrences by the matching end gives a symbolic bound of an expression, which is how
``can_prove(i < n)`` succeeds where constant bounds alone cannot.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir.stmt_functor import post_order
from .bound import NEG_INF, POS_INF, dtype_range, iv_mul, iv_pow, iv_scale
from .poly import Poly

_POS_INF_VAR = E.Var("pos_inf", "int64")
_NEG_INF_VAR = E.Var("neg_inf", "int64")


def pos_inf() -> E.Var:
    """The symbolic +infinity an unbounded ``IntervalSet`` end holds (TVM's ``pos_inf``)."""
    return _POS_INF_VAR


def neg_inf() -> E.Var:
    """The symbolic -infinity an unbounded ``IntervalSet`` end holds."""
    return _NEG_INF_VAR


class IntervalSet:
    """The integers ``[min_value, max_value]`` (inclusive), ends being expressions."""

    __slots__ = ("min_value", "max_value")

    def __init__(self, min_value, max_value):
        self.min_value = E._to_expr(min_value)
        self.max_value = E._to_expr(max_value)

    def is_everything(self) -> bool:
        """Whether both ends are unbounded."""
        return self.min_value is _NEG_INF_VAR and self.max_value is _POS_INF_VAR

    def is_single_point(self) -> bool:
        """Whether the set holds one value."""
        a, b = self.min_value, self.max_value
        return a is b or (isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a == b)

    def __repr__(self) -> str:
        return f"IntervalSet[{self.min_value!r}, {self.max_value!r}]"


def _var_of(cz, mono):
    if len(mono) != 1:
        return None
    a = cz.atoms[mono[0]]
    return a if isinstance(a, E.Var) else None


def symbolic_bound(cz, p: Poly, upper: bool) -> int:
    """A constant bound of ``p`` after replacing ranged variables by their symbolic ends."""
    ranges = cz.an._sym
    pick = 1 if upper else 0
    best = cz.bound(p)[pick]
    cur = p
    for _ in range(4):
        nxt = Poly(p.dtype, const=cur.const)
        changed = False
        for mono, c in cur.terms.items():
            var = _var_of(cz, mono)
            end = None
            for lo_e, hi_e in reversed(ranges.get(var, ()) if var is not None else ()):
                end = hi_e if (c > 0) == upper else lo_e
                if end is not None:
                    break
            sub = cz.value(end) if end is not None else None
            if isinstance(sub, Poly) and sub.dtype == p.dtype:
                nxt.add_(sub, c)
                changed = True
            else:
                nxt.add_term_(mono, c)
        if not changed:
            break
        cur = nxt
        b = cz.bound(cur)[pick]
        best = min(best, b) if upper else max(best, b)
    return best


def interval_of(cz, p: Poly, dom: dict) -> tuple:
    """``(lo, hi)`` Polys (None: unbounded) of ``p`` when each var of ``dom`` ranges over
    ``dom[var] = (lo Poly, hi Poly)``; other atoms stay symbolic."""
    lo = Poly(p.dtype, const=p.const)
    hi = Poly(p.dtype, const=p.const)
    for mono, c in p.terms.items():
        deps = [i for i in mono if _depends(cz, i, dom)]
        if not deps:
            lo.add_term_(mono, c)
            hi.add_term_(mono, c)
            continue
        var = _var_of(cz, mono)
        if var is not None:
            vlo, vhi = dom[var]
            a, b = (vlo, vhi) if c > 0 else (vhi, vlo)
            lo = None if lo is None or a is None else lo.add_(a, c)
            hi = None if hi is None or b is None else hi.add_(b, c)
            continue
        tb = iv_scale(_const_mono_bound(cz, mono, dom), c)
        rng = dtype_range(p.dtype)  # a term reaching past its dtype is unbounded
        lo = None if lo is None or tb[0] <= rng[0] else lo.add_(Poly(p.dtype, const=tb[0]))
        hi = None if hi is None or tb[1] >= rng[1] else hi.add_(Poly(p.dtype, const=tb[1]))
        if lo is None and hi is None:
            break
    return lo, hi


def _depends(cz, idx: int, dom: dict) -> bool:
    a = cz.atoms[idx]
    if isinstance(a, E.Var):
        return a in dom
    return any(isinstance(n, E.Var) and n in dom for n in post_order(a))


def _const_mono_bound(cz, mono, dom: dict):
    b = (1, 1)
    for idx in set(mono):
        k = mono.count(idx)
        a = cz.atoms[idx]
        if isinstance(a, E.Var) and a in dom:
            vlo, vhi = dom[a]
            ab = (cz.bound(vlo)[0] if vlo is not None else NEG_INF,
                  cz.bound(vhi)[1] if vhi is not None else POS_INF)
        elif _depends(cz, idx, dom):
            ab = (NEG_INF, POS_INF)
        else:
            ab = cz.atom_bound[idx]
        b = iv_mul(b, iv_pow(ab, k))
    return b
