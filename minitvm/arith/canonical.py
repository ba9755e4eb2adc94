"""Canonical simplification: integer expressions to ``Poly`` sums of monomials and back to TIR.

One ``Canonicalizer`` serves one simplification (its atom numbering is local to it). Every walk
is an explicit stack: sums and products are flattened into n-ary operations, so a 100,000-term
sum never recurses. Signed integer scalars become ``Poly``; booleans, floats, vectors and
unsigned values stay expressions (``Term``), simplified by constant folding and local rules.
"""

from __future__ import annotations

from collections import Counter

from ..tir import expr as E
from ..tir.stmt_functor import expr_children, substitute, with_children
from . import cast, compare, divmod
from .bound import (
    EVERYTHING,
    POS_INF,
    Interval,
    dtype_range,
    iv_add,
    iv_intersect,
    iv_mul,
    iv_pow,
    iv_scale,
)
from .int_set import symbolic_bound
from .modular import Mod, m_add, m_mul, m_scale, m_union
from .poly import Mono, Poly

INDEX_DTYPES = frozenset({"int8", "int16", "int32", "int64"})
EXPAND_LIMIT = 64  # a product of sums expands only up to this many terms; beyond, it is an atom


def is_index(dtype: str) -> bool:
    """Whether values of ``dtype`` take the canonical (polynomial) form: signed integer scalars."""
    return dtype in INDEX_DTYPES


class Term:
    """A non-polynomial value: its simplified expression, an interned identity, extra facts."""

    __slots__ = ("expr", "tid", "info")

    def __init__(self, expr: E.PrimExpr, tid: int, info=None):
        self.expr = expr
        self.tid = tid
        self.info = info  # ("cmp", op, Poly) for integer comparisons, ("not", Term) for negations


def bool_imm(value: bool) -> E.IntImm:
    """The boolean immediate ``T.bool(value)``."""
    return E.IntImm("bool", int(bool(value)))


def const_of(e) -> int | float | None:
    """The Python value of an immediate, else None."""
    if isinstance(e, (E.IntImm, E.FloatImm)):
        return e.value
    return None


_FLATTEN_SUM = (E.Add, E.Sub)
_DIVMOD = (E.FloorDiv, E.FloorMod, E.Div, E.Mod)
_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)


class Canonicalizer:
    """Convert expressions to canonical values (``Poly`` / ``Term``) and render them back."""

    def __init__(self, analyzer):
        self.an = analyzer
        self.memo: dict[int, object] = {}
        self.alive: list = []  # every memoized node, so ids stay unique during this simplification
        self.ids: dict = {}  # interned keys of values
        self.terms_by_id: dict[int, Term] = {}
        self.atoms: list[E.PrimExpr] = []
        self.atom_ids: dict = {}
        self.atom_bound: list[Interval] = []
        self.atom_mod: list[Mod] = []
        self.atom_info: list = []  # ("fdiv"|"fmod"|"tdiv"|"tmod", numerator Poly, divisor) or None
        self.div_atoms: dict = {}  # (kind, numerator id, divisor) -> atom index
        self.display: dict[Mono, tuple] = {}  # order in which a monomial's atoms print
        self.has_mod_atoms = False
        self._mono_bounds: dict[Mono, Interval] = {}
        self._fact_map: dict | None = None
        self._in_symbolic = False

    # ------------------------------------------------------------------ identities
    def intern(self, key) -> int:
        """A small integer standing for ``key`` in this simplification."""
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.ids)
        return i

    def vid(self, v) -> int:
        """The interned identity of a value."""
        return self.intern(v.key()) if isinstance(v, Poly) else v.tid

    def term(self, expr: E.PrimExpr, key, info=None) -> Term:
        """The Term of identity ``key`` (the first one made wins: hash-consing)."""
        tid = self.intern(key)
        t = self.terms_by_id.get(tid)
        if t is None:
            t = self.terms_by_id[tid] = Term(expr, tid, info)
        return t

    def const_term(self, expr) -> Term:
        """The Term of an immediate."""
        return self.term(expr, ("imm", expr.dtype, expr.value))

    def bool_term(self, value: bool) -> Term:
        """The Term of ``T.bool(value)``."""
        return self.const_term(bool_imm(value))

    def atom(self, key, expr: E.PrimExpr, bound: Interval = EVERYTHING, mod: Mod = (1, 0),
             info=None) -> Poly:
        """The Poly of one (registered) atom."""
        idx = self.atom_ids.get(key)
        if idx is None:
            idx = self.atom_ids[key] = len(self.atoms)
            self.atoms.append(expr)
            self.atom_bound.append(iv_intersect(bound, dtype_range(expr.dtype)))
            self.atom_mod.append(mod)
            self.atom_info.append(info)
        return Poly.atom(expr.dtype, idx)

    def mono_mul(self, a: Mono, b: Mono) -> Mono:
        """The product monomial; it prints ``a``'s factors before ``b``'s."""
        if not a:
            return b
        if not b:
            return a
        m = tuple(sorted(a + b))
        if m not in self.display:
            self.display[m] = self.display.get(a, a) + self.display.get(b, b)
        return m

    def poly_mul(self, a: Poly, b: Poly) -> Poly:
        """The expanded product."""
        out = Poly(a.dtype)
        for ma, ca in a.items():
            for mb, cb in b.items():
                out.add_term_(self.mono_mul(ma, mb), ca * cb)
        return out

    def divide_content(self, p: Poly, g: int, mono: Mono) -> Poly:
        """``p / (g * mono)`` for a common factor from ``split_content``, keeping print order."""
        out = Poly(p.dtype)
        for m, c in p.items():
            nm = m
            if mono:
                drop = Counter(mono)
                order = []
                for i in self.display.get(m, m):
                    if drop[i] > 0:
                        drop[i] -= 1
                    else:
                        order.append(i)
                nm = tuple(sorted(order))
                if nm and nm not in self.display:
                    self.display[nm] = tuple(order)
            out.add_term_(nm, c // g)
        return out

    # ------------------------------------------------------------------ conversion
    def value(self, root: E.PrimExpr):
        """The canonical value of ``root`` (iterative post-order over a DAG)."""
        memo = self.memo
        if id(root) in memo:
            return memo[id(root)]
        pending_ops: dict[int, tuple] = {}
        stack = [root]
        while stack:
            node = stack[-1]
            nid = id(node)
            if nid in memo:
                stack.pop()
                continue
            ops = pending_ops.get(nid)
            if ops is None:
                ops = pending_ops[nid] = self._operands(node)
                todo = [c for c in ops[0] if id(c) not in memo]
                if todo:
                    stack.extend(reversed(todo))
                    continue
            stack.pop()
            del pending_ops[nid]
            memo[nid] = self._combine(node, ops[0], ops[1])
            self.alive.append(node)
        return memo[id(root)]

    def _operands(self, node) -> tuple[list, object]:
        t = type(node)
        if t in _FLATTEN_SUM and is_index(node.dtype):
            kids, signs = [], []
            work = [(node, 1)]
            while work:
                n, s = work.pop()
                if type(n) in _FLATTEN_SUM and n.dtype == node.dtype:
                    work.append((n.b, -s if type(n) is E.Sub else s))
                    work.append((n.a, s))
                else:
                    kids.append(n)
                    signs.append(s)
            return kids, signs
        if t is E.Mul and is_index(node.dtype):
            kids = []
            work = [node]
            while work:
                n = work.pop()
                if type(n) is E.Mul and n.dtype == node.dtype:
                    work.append(n.b)
                    work.append(n.a)
                else:
                    kids.append(n)
            return kids, "mul"
        if isinstance(node, E.Var):
            bound = self.an._values.get(node)
            if bound is not None:
                return [bound], "alias"
            return [], None
        if t is E.Let:
            body = substitute(node.body, {node.var: node.value})
            self.alive.append(body)
            return [body], "alias"
        return list(expr_children(node)), None

    def _combine(self, node, kids: list, aux):
        vals = [self.memo[id(k)] for k in kids]
        if aux == "alias":
            return vals[0]
        t = type(node)
        dtype = node.dtype
        if is_index(dtype):
            if t is E.IntImm:
                return Poly(dtype, const=node.value)
            if t is E.Var or t is E.SizeVar or isinstance(node, E.Var):
                return self._var_atom(node)
            polys = all(isinstance(v, Poly) and v.dtype == dtype for v in vals)
            if t in _FLATTEN_SUM and polys:
                acc = Poly(dtype)
                for v, s in zip(vals, aux):
                    acc.add_(v, s)
                return divmod.merge_split(self, acc) if self.has_mod_atoms else acc
            if t is E.Mul and polys:
                return self._product(dtype, vals)
            if t in _DIVMOD and polys:
                return divmod.combine(self, t, vals[0], vals[1])
            if (t is E.Min or t is E.Max) and polys:
                return self._minmax(t is E.Min, vals[0], vals[1])
            if t is E.Select and isinstance(vals[1], Poly) and isinstance(vals[2], Poly):
                return self._select(node, vals)
            if t is E.Cast:
                return cast.to_index(self, node, vals[0])
            if t is E.Any:
                return self.atom(("any", id(node)), node, (0, POS_INF))
            return self._generic(node, vals, as_atom=True)
        if t is E.IntImm or t is E.FloatImm:
            return self.const_term(node)
        if isinstance(node, E.Var):
            return self.term(node, ("var", id(node)))
        if t in compare.CMP_OPS:
            return compare.compare(self, node, vals[0], vals[1])
        if t is E.And or t is E.Or or t is E.Not:
            return compare.logic(self, node, vals)
        if t is E.Select:
            return self._select(node, vals)
        if t is E.Cast:
            return cast.to_other(self, node, vals[0])
        if t in _ARITH:
            return compare.fold_arith(self, node, vals[0], vals[1])
        return self._generic(node, vals, as_atom=False)

    def _identity(self, node):
        if isinstance(node, E.Call):
            return node.op_name
        if isinstance(node, E.BufferLoad):
            return id(node.buffer)
        if isinstance(node, E.ProducerLoad):
            return id(node.producer)
        if isinstance(node, (E.Ramp, E.Broadcast)):
            return node.lanes
        if isinstance(node, E.StringImm):
            return node.value
        if isinstance(node, (E.Select, E.Not, E.BinaryOp, E.Cast)):
            return None
        return ("id", id(node))

    def _generic(self, node, vals, as_atom: bool):
        kids = [self.to_expr(v) for v in vals]
        new = with_children(node, kids) if kids else node
        key = ("N", type(node), node.dtype, self._identity(node), tuple(self.vid(v) for v in vals))
        if as_atom:
            return self.atom(key, new)
        return self.term(new, key)

    def _var_atom(self, var: E.Var) -> Poly:
        key = ("var", id(var))
        idx = self.atom_ids.get(key)
        if idx is not None:
            return Poly.atom(var.dtype, idx)
        bound = self.an._var_bound(var)
        return self.atom(key, var, bound, self.an._var_mod(var, bound))

    def _product(self, dtype: str, vals: list[Poly]) -> Poly:
        coeff, mono, sums = 1, [], []
        for v in vals:
            if not v.terms:
                coeff *= v.const
            elif len(v.terms) == 1 and v.const == 0:
                (m, c), = v.terms.items()
                coeff *= c
                mono.extend(self.display.get(m, m))
            else:
                sums.append(v)
        if coeff == 0:
            return Poly(dtype)
        if coeff == 1 and not mono and len(sums) == 1:
            return sums[0]  # x * 1: shared, not copied (values are never mutated)
        base = Poly(dtype, const=coeff)
        if mono:
            key = tuple(sorted(mono))
            self.display.setdefault(key, tuple(mono))
            base = Poly(dtype, {key: coeff})
        if not sums:
            return base
        size = 1
        for s in sums:
            size *= len(s.terms) + (1 if s.const else 0)
        if len(sums) > 1 and size > EXPAND_LIMIT:
            key = ("mul", frozenset(Counter(self.vid(s) for s in sums).items()))
            expr = self.to_expr(sums[0])
            bound, mod = self.bound(sums[0]), self.mod(sums[0])
            for s in sums[1:]:
                expr = E.Mul(expr, self.to_expr(s))
                bound, mod = iv_mul(bound, self.bound(s)), m_mul(mod, self.mod(s))
            sums = [self.atom(key, expr, bound, mod)]
        for s in sums:
            base = self.poly_mul(base, s)
        return base

    def _minmax(self, is_min: bool, a: Poly, b: Poly) -> Poly:
        lo, hi = self.range_of(a.copy().add_(b, -1))
        if hi <= 0:
            return a if is_min else b
        if lo >= 0:
            return b if is_min else a
        ea, eb = self.to_expr(a), self.to_expr(b)
        if a.is_const() and not b.is_const():
            ea, eb = eb, ea
        ba, bb = self.bound(a), self.bound(b)
        if is_min:
            expr, bound = E.Min(ea, eb), (min(ba[0], bb[0]), min(ba[1], bb[1]))
        else:
            expr, bound = E.Max(ea, eb), (max(ba[0], bb[0]), max(ba[1], bb[1]))
        key = ("min" if is_min else "max", frozenset((self.vid(a), self.vid(b))))
        return self.atom(key, expr, bound, m_union(self.mod(a), self.mod(b)))

    def _select(self, node, vals):
        cond, tv, fv = vals
        c = truth(cond)
        if c is not None:
            return tv if c else fv
        if self.vid(tv) == self.vid(fv):
            return tv
        expr = E.Select(self.to_expr(cond), self.to_expr(tv), self.to_expr(fv))
        key = ("select", self.vid(cond), self.vid(tv), self.vid(fv))
        if isinstance(tv, Poly):
            bound = (min(self.bound(tv)[0], self.bound(fv)[0]),
                     max(self.bound(tv)[1], self.bound(fv)[1]))
            return self.atom(key, expr, bound, m_union(self.mod(tv), self.mod(fv)))
        return self.term(expr, key)

    # ------------------------------------------------------------------ bounds and congruences
    def mono_bound(self, m: Mono) -> Interval:
        """The range of a monomial from its atoms' ranges (even powers are non-negative)."""
        b = self._mono_bounds.get(m)
        if b is None:
            b = (1, 1)
            for idx, k in Counter(m).items():
                b = iv_mul(b, iv_pow(self.atom_bound[idx], k))
            self._mono_bounds[m] = b
        return b

    def mono_mod(self, m: Mono) -> Mod:
        """The congruence of a monomial."""
        r = (0, 1)
        for idx in m:
            r = m_mul(r, self.atom_mod[idx])
        return r

    def bound(self, p: Poly) -> Interval:
        """A constant range of ``p`` from its atoms' ranges and the analyzer's facts."""
        lo = hi = p.const
        for m, c in p.terms.items():
            lo, hi = iv_add((lo, hi), iv_scale(self.mono_bound(m), c))
        facts = self.facts()
        if facts and p.terms:
            f = facts.get(self.intern(p.terms_key()))
            if f is not None:
                lo, hi = iv_intersect((lo, hi), iv_add(f, (p.const, p.const)))
        return iv_intersect((lo, hi), dtype_range(p.dtype))

    def range_of(self, p: Poly) -> Interval:
        """``bound`` refined by the symbolic ranges the analyzer knows (bind with a Range)."""
        lo, hi = self.bound(p)
        if self.an._sym and p.terms and lo != hi and not self._in_symbolic:
            self._in_symbolic = True  # ends are converted plainly: no refinement inside
            try:
                hi = min(hi, symbolic_bound(self, p, upper=True))
                lo = max(lo, symbolic_bound(self, p, upper=False))
            finally:
                self._in_symbolic = False
        return lo, hi

    def mod(self, p: Poly) -> Mod:
        """The congruence ``coeff * k + base`` of ``p``."""
        r = (0, p.const)
        for m, c in p.terms.items():
            r = m_add(r, m_scale(self.mono_mod(m), c))
        return r

    def facts(self) -> dict:
        """Ranges of linear forms from ``constraint_scope``, by interned form (built once)."""
        if self._fact_map is None:
            self._fact_map = {}
            fm: dict = {}
            for expr, lo, hi in self.an._facts:
                v = self.value(expr)
                if isinstance(v, Poly) and v.terms:
                    shifted = iv_add((lo, hi), (-v.const, -v.const))
                    k = self.intern(v.terms_key())
                    fm[k] = iv_intersect(fm.get(k, EVERYTHING), shifted)
                    k = self.intern(v.scaled(-1).terms_key())
                    fm[k] = iv_intersect(fm.get(k, EVERYTHING), (-shifted[1], -shifted[0]))
            self._fact_map = fm
        return self._fact_map

    # ------------------------------------------------------------------ rendering
    def mono_expr(self, m: Mono, coeff: int, dtype: str) -> E.PrimExpr:
        """TIR for ``m * coeff``: factors in print order, then the coefficient."""
        order = self.display.get(m, m)
        expr = self.atoms[order[0]]
        for i in order[1:]:
            expr = E.Mul(expr, self.atoms[i])
        if coeff != 1:
            expr = E.Mul(expr, E.IntImm(dtype, coeff))
        return expr

    def render(self, p: Poly) -> E.PrimExpr:
        """TIR for ``p``: positive terms by descending coefficient, the constant, then
        the negative terms subtracted (TVM's SumExpr order)."""
        if p._expr is not None:
            return p._expr
        dtype = p.dtype
        if not p.terms:
            p._expr = E.IntImm(dtype, p.const)
            return p._expr
        items = sorted(p.terms.items(), key=lambda kv: -kv[1])
        res = None
        for m, c in items:
            if c > 0:
                t = self.mono_expr(m, c, dtype)
                res = t if res is None else E.Add(res, t)
        if p.const > 0:
            res = E.IntImm(dtype, p.const) if res is None else E.Add(res, E.IntImm(dtype, p.const))
        for m, c in items:
            if c < 0:
                res = self.mono_expr(m, c, dtype) if res is None else \
                    E.Sub(res, self.mono_expr(m, -c, dtype))
        if p.const < 0:
            res = E.Sub(res, E.IntImm(dtype, -p.const))
        p._expr = res
        return res

    def to_expr(self, v) -> E.PrimExpr:
        """TIR for a value."""
        return self.render(v) if isinstance(v, Poly) else v.expr

    def simplify(self, expr: E.PrimExpr) -> E.PrimExpr:
        """``expr`` in canonical form."""
        return self.to_expr(self.value(expr))


def truth(v) -> bool | None:
    """The constant truth of a value, None when unknown."""
    if isinstance(v, Poly):
        return None if v.terms else v.const != 0
    c = const_of(v.expr)
    return None if c is None else bool(c)
