"""``arith.Analyzer``: simplification, proofs, bounds and congruences of integer expressions.

The analyzer holds what is known about variables: constant bounds (``update``, ``bind`` with a
Range, ``SizeVar``s and ``mark_global_non_neg_value`` being non-negative), congruences, values
(``bind`` with an expression), symbolic ranges, and the facts of ``constraint_scope``. Each
query builds a fresh ``Canonicalizer``, so results depend only on the expression and that state.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..ir.prim_expr import FloatImm, IntImm, PrimExpr
from ..tir import expr as E
from ..tir.stmt_functor import post_order
from .bound import NEG_INF, ConstIntBound, Interval, dtype_range, expr_bound, is_inf, iv_intersect
from .canonical import Canonicalizer, Term, is_index
from .int_set import IntervalSet, interval_of, neg_inf, pos_inf
from .modular import Mod, ModularSet
from .poly import Poly
from .rewrite import RewriteSimplifier


def _describe(x) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


def _as_expr(x, method: str) -> PrimExpr:
    """``x`` as a PrimExpr (Python ints, floats and bools convert as TVM's FFI does)."""
    if isinstance(x, PrimExpr):
        return x
    if isinstance(x, bool):
        return IntImm("bool", int(x))
    if isinstance(x, int):
        return IntImm("int32" if -(2 ** 31) <= x < 2 ** 31 else "int64", x)
    if isinstance(x, float):
        return FloatImm("float32", x)
    raise TypeError(f"Analyzer.{method} expects a PrimExpr (or a Python int/float/bool), got "
                    f"{type(x).__name__}: {_describe(x)}")


def _as_var(var, method: str) -> E.Var:
    if not isinstance(var, E.Var):
        raise TypeError(f"Analyzer.{method} expects a tir.Var, got {type(var).__name__}: "
                        f"{_describe(var)}")
    return var


class Analyzer:
    """TVM's ``tvm.arith.Analyzer``: integer arithmetic facts about symbolic expressions."""

    def __init__(self):
        self._bounds: dict[E.Var, Interval] = {}
        self._mods: dict[E.Var, Mod] = {}
        self._values: dict[E.Var, PrimExpr] = {}
        self._sym: dict[E.Var, list[tuple[PrimExpr | None, PrimExpr | None]]] = {}
        self._facts: list[tuple[PrimExpr, int, int]] = []

    # ------------------------------------------------------------------ simplification
    def simplify(self, expr, steps: int = 2) -> PrimExpr:
        """The simplest equivalent form of ``expr`` (canonical form, constants folded)."""
        return self.canonical_simplify(_as_expr(expr, "simplify"))

    def canonical_simplify(self, expr) -> PrimExpr:
        """``expr`` in canonical form: sums of ``coefficient * monomial`` with like terms merged."""
        expr = _as_expr(expr, "canonical_simplify")
        return Canonicalizer(self).simplify(expr)

    def rewrite_simplify(self, expr) -> PrimExpr:
        """``expr`` with local rewrite rules applied (constant folding, identities, decisions)."""
        expr = _as_expr(expr, "rewrite_simplify")
        return RewriteSimplifier(self)(expr)

    # ------------------------------------------------------------------ proofs
    def can_prove(self, cond, strength=None) -> bool:
        """Whether ``cond`` holds for every value of its variables (False: unknown or false)."""
        cond = _as_expr(cond, "can_prove")
        res = Canonicalizer(self).simplify(cond)
        return isinstance(res, IntImm) and res.value != 0

    def can_prove_equal(self, lhs, rhs) -> bool:
        """Whether ``lhs == rhs`` for every value of the variables."""
        lhs, rhs = _as_expr(lhs, "can_prove_equal"), _as_expr(rhs, "can_prove_equal")
        lhs, rhs = E._unify(lhs, rhs)
        cz = Canonicalizer(self)
        a, b = cz.value(lhs), cz.value(rhs)
        if isinstance(a, Poly) and isinstance(b, Poly):
            d = a.copy().add_(b, -1)
            return (not d.terms and d.const == 0) or cz.range_of(d) == (0, 0)
        if isinstance(a, Term) and isinstance(b, Term) and a.tid == b.tid:
            return True
        res = cz.simplify(E.EQ(lhs, rhs))
        return isinstance(res, IntImm) and res.value != 0

    # ------------------------------------------------------------------ analyses
    def const_int_bound(self, expr) -> ConstIntBound:
        """Constant lower and upper bounds of an integer expression."""
        expr = _as_expr(expr, "const_int_bound")
        b = expr_bound(expr, self._var_bound)
        if is_index(expr.dtype):
            cz = Canonicalizer(self)
            v = cz.value(expr)
            if isinstance(v, Poly):
                b2 = cz.range_of(v)
                both = iv_intersect(b, b2)
                b = both if both[0] <= both[1] else b2
        return ConstIntBound(*b)

    def modular_set(self, expr) -> ModularSet:
        """The congruence ``coeff * k + base`` every value of ``expr`` satisfies."""
        expr = _as_expr(expr, "modular_set")
        cz = Canonicalizer(self)
        v = cz.value(expr)
        if isinstance(v, Poly):
            return ModularSet(*cz.mod(v))
        if isinstance(v.expr, IntImm):
            return ModularSet(0, v.expr.value)
        return ModularSet(1, 0)

    def int_set(self, expr, dom_map: dict | None = None) -> IntervalSet:
        """The symbolic interval of ``expr`` when each var of ``dom_map`` ranges over its
        domain (a Range, an IntervalSet, or a ``(min, max)`` pair, inclusive)."""
        expr = _as_expr(expr, "int_set")
        cz = Canonicalizer(self)
        dom = {}
        for var, d in (dom_map or {}).items():
            lo, hi = self._domain_ends(_as_var(var, "int_set"), d)
            dom[var] = (None if lo is None else cz.value(lo), None if hi is None else cz.value(hi))
        v = cz.value(expr)
        if not isinstance(v, Poly):
            return IntervalSet(neg_inf(), pos_inf())
        lo, hi = interval_of(cz, v, dom)
        return IntervalSet(neg_inf() if lo is None else cz.render(lo),
                           pos_inf() if hi is None else cz.render(hi))

    @staticmethod
    def _domain_ends(var: E.Var, d) -> tuple:
        if isinstance(d, E.Range):
            lo = d.min
            return lo, E.Sub(E.Add(lo, d.extent), E.IntImm(lo.dtype, 1))
        if isinstance(d, IntervalSet):
            return (None if d.min_value is neg_inf() else d.min_value,
                    None if d.max_value is pos_inf() else d.max_value)
        if isinstance(d, (tuple, list)) and len(d) == 2:
            return (E._to_expr(d[0], var.dtype), E._to_expr(d[1], var.dtype))
        raise TypeError(f"int_set domain of {var.name} must be a Range, an IntervalSet or a "
                        f"(min, max) pair, got {type(d).__name__}")

    # ------------------------------------------------------------------ knowledge
    def bind(self, var, value, allow_override: bool = False) -> None:
        """Bind ``var`` to an expression (it is substituted) or to a ``Range`` (its bounds)."""
        var = _as_var(var, "bind")
        if isinstance(value, E.Range):
            if isinstance(value.extent, IntImm) and value.extent.value == 1:
                self.bind(var, value.min, allow_override)
                return
            lo = self.const_int_bound(value.min).min_value
            last = self.simplify(E.Sub(E.Add(value.min, value.extent),
                                       E.IntImm(value.extent.dtype, 1)))
            hi = self.const_int_bound(last).max_value
            self._set_bound(var, (lo, hi), allow_override)
            self._sym[var] = [(self.simplify(value.min), last)]
            return
        value = _as_expr(value, "bind")
        if is_index(var.dtype) and value.dtype != var.dtype:
            value = E.Cast(var.dtype, value)
        value = self.simplify(value)
        if any(n is var for n in post_order(value)):
            raise ValueError(f"cannot bind {var.name} to an expression of itself: {value!r}")
        old = self._values.get(var)
        if old is not None and not allow_override and not self.can_prove_equal(old, value):
            raise ValueError(f"{var.name} is already bound to {old!r}, not {value!r} "
                             "(pass allow_override=True to rebind)")
        b = self.const_int_bound(value)
        self._values[var] = value
        self._set_bound(var, (b.min_value, b.max_value), True)

    def update(self, var, info, override: bool = False) -> None:
        """Record a ``ConstIntBound`` or ``ModularSet`` of ``var``."""
        var = _as_var(var, "update")
        if isinstance(info, ConstIntBound):
            self._set_bound(var, (info.min_value, info.max_value), override)
        elif isinstance(info, ModularSet):
            old = self._mods.get(var)
            new = (info.coeff, info.base)
            if old is not None and old != new and not override:
                raise ValueError(f"{var.name} already has modular set {ModularSet(*old)!r}, "
                                 f"not {info!r} (pass override=True)")
            self._mods[var] = new
        else:
            raise TypeError(f"Analyzer.update expects a ConstIntBound or ModularSet, got "
                            f"{type(info).__name__}")

    def mark_global_non_neg_value(self, value) -> None:
        """Record that ``value`` (a shape variable or expression) is never negative."""
        value = _as_expr(value, "mark_global_non_neg_value")
        if isinstance(value, E.Var):
            lo, hi = self._var_bound(value)
            self._bounds[value] = (max(lo, 0), hi)
        elif is_index(value.dtype):
            self._add_constraint(E.GE(value, E.IntImm(value.dtype, 0)))

    @contextmanager
    def constraint_scope(self, constraint) -> Iterator[None]:
        """``with analyzer.constraint_scope(cond):`` assume ``cond`` inside the block."""
        constraint = _as_expr(constraint, "constraint_scope")
        saved = (dict(self._bounds), dict(self._mods), {k: list(v) for k, v in self._sym.items()},
                 list(self._facts))
        try:
            self._add_constraint(constraint)
            yield
        finally:
            self._bounds, self._mods, self._sym, self._facts = saved

    # ------------------------------------------------------------------ internals
    def _set_bound(self, var: E.Var, bound: Interval, override: bool) -> None:
        old = self._bounds.get(var)
        if old is not None and old != bound and not override:
            raise ValueError(f"{var.name} already has bound {ConstIntBound(*old)!r}, not "
                             f"{ConstIntBound(*bound)!r} (pass override=True)")
        self._bounds[var] = bound

    def _var_bound(self, var: E.Var) -> Interval:
        lo, hi = dtype_range(var.dtype)
        if isinstance(var, E.SizeVar):
            lo = max(lo, 0)
        b = self._bounds.get(var)
        if b is not None:
            lo, hi = max(lo, b[0]), min(hi, b[1])
        return lo, hi

    def _var_mod(self, var: E.Var, bound: Interval) -> Mod:
        if bound[0] == bound[1]:
            return (0, bound[0])
        return self._mods.get(var, (1, 0))

    def _add_constraint(self, cond: PrimExpr) -> None:
        cz = Canonicalizer(self)
        work = [cond]
        while work:
            c = work.pop()
            if isinstance(c, E.And):
                work.extend((c.b, c.a))
                continue
            v = cz.value(c)
            info = v.info if isinstance(v, Term) else None
            if info is not None and info[0] == "cmp":
                self._record(cz, info[1], info[2])

    def _record(self, cz: Canonicalizer, op: str, d: Poly) -> None:
        """Remember ``d op 0`` (op LT / LE / EQ) as a range of d's non-constant part."""
        k = d.const
        rng = {"LT": (NEG_INF, -k - 1), "LE": (NEG_INF, -k), "EQ": (-k, -k)}.get(op)
        if rng is None:
            return
        t = Poly(d.dtype, dict(d.terms))
        self._facts.append((cz.render(t), rng[0], rng[1]))
        for mono, s in t.terms.items():
            var = cz.atoms[mono[0]] if len(mono) == 1 else None
            if not isinstance(var, E.Var) or s not in (1, -1):
                continue
            rest = t.copy()
            del rest.terms[mono]
            # s * var + rest in [lo, hi]  =>  var in [s * (lo - rest), s * (hi - rest)] (sorted)
            ends = []
            for end in rng:
                if is_inf(end):
                    ends.append(None)
                    continue
                e = rest.scaled(-1)
                e.const += end
                ends.append(e.scaled(s))
            lo_p, hi_p = ends if s == 1 else ends[::-1]
            if not rest.terms:
                lo, hi = self._var_bound(var)
                lo = lo if lo_p is None else max(lo, lo_p.const)
                hi = hi if hi_p is None else min(hi, hi_p.const)
                self._bounds[var] = (lo, hi)
            else:
                self._sym.setdefault(var, []).append(
                    (None if lo_p is None else cz.render(lo_p),
                     None if hi_p is None else cz.render(hi_p)))
        if op == "EQ" and len(t.terms) == 1:
            (mono, s), = t.terms.items()
            info = cz.atom_info[mono[0]] if len(mono) == 1 and s == 1 else None
            if info is not None and info[0] == "fmod" and len(info[1].terms) == 1:
                (m2, c2), = info[1].terms.items()
                var = cz.atoms[m2[0]] if len(m2) == 1 and c2 == 1 else None
                if isinstance(var, E.Var) and 0 <= -k < info[2]:
                    self._mods[var] = (info[2], (-k - info[1].const) % info[2])

