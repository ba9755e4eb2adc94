"""Rewrite simplification: local rules that keep the expression's shape (TVM's RewriteSimplifier).

Constants fold, identities drop (``x + 0``, ``x * 1``, ``x // 1``), constants move right
(``2 * x`` to ``x * 2``) and merge (``(x + 1) + 2``), ``a > b`` becomes ``b < a``, and
comparisons, ``min`` / ``max`` and selects are decided where the analyzer can prove them.
Sums are not reordered (that is ``canonical_simplify``). Bottom-up and iterative.
"""

from __future__ import annotations

from ..ir.structural import structural_equal
from ..tir import expr as E
from ..tir.stmt_functor import transform_expr
from .bound import wrap_int
from .canonical import Canonicalizer, bool_imm, const_of, is_index
from .compare import _fold, decide, normalize
from .poly import Poly

_SWAP = {E.GT: E.LT, E.GE: E.LE}


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, (E.IntImm, E.FloatImm)) or isinstance(b, (E.IntImm, E.FloatImm)):
        return type(a) is type(b) and a == b
    if type(a) is not type(b):
        return False
    return structural_equal(a, b)


def _add_const(x, k: int):
    if k == 0:
        return x
    return E.Add(x, E.IntImm(x.dtype, k)) if k > 0 else E.Sub(x, E.IntImm(x.dtype, -k))


def _split_const(x) -> tuple[object, int]:
    """``x`` as ``rest + k`` when it is ``rest + c`` or ``rest - c``."""
    if type(x) in (E.Add, E.Sub) and isinstance(x.b, E.IntImm) and is_index(x.dtype):
        return x.a, x.b.value if type(x) is E.Add else -x.b.value
    return x, 0


class RewriteSimplifier:
    """One rewrite simplification; decisions ask a Canonicalizer that lives for the call."""

    def __init__(self, analyzer):
        self.an = analyzer
        self.cz = Canonicalizer(analyzer)

    def __call__(self, expr: E.PrimExpr) -> E.PrimExpr:
        values = self.an._values

        def fpost(e):
            if values and isinstance(e, E.Var) and e in values:
                return values[e]
            for _ in range(8):
                r = self._step(e)
                if r is None or r is e:
                    return e
                e = r
            return e

        return transform_expr(expr, fpost)

    def _decide(self, op: str, a, b) -> bool | None:
        pa, pb = self.cz.value(a), self.cz.value(b)
        if not (isinstance(pa, Poly) and isinstance(pb, Poly)):
            return None
        n = normalize(op, pa.copy().add_(pb, -1))
        return n if isinstance(n, bool) else decide(self.cz, op, n)

    def _step(self, e):  # noqa: C901 - one flat table of rules
        t = type(e)
        if isinstance(e, E.BinaryOp):
            a, b = e.a, e.b
            ca, cb = const_of(a), const_of(b)
            idx = is_index(a.dtype)
            if t in _SWAP:
                return _SWAP[t](b, a)
            if ca is not None and cb is not None and "x" not in e.dtype:
                return self._fold(e, ca, cb)
            if t is E.Add:
                if cb == 0:
                    return a
                if ca == 0:
                    return b
                if idx and ca is not None:
                    return E.Add(b, a)
                if idx and cb is not None:
                    rest, k = _split_const(a)
                    if rest is not a:
                        return _add_const(rest, k + cb)
            elif t is E.Sub:
                if cb == 0:
                    return a
                if idx and _same(a, b):
                    return E.IntImm(e.dtype, 0)
                if idx and cb is not None:
                    rest, k = _split_const(a)
                    if rest is not a:
                        return _add_const(rest, k - cb)
                if idx and type(a) is E.Add:
                    if _same(a.a, b):
                        return a.b
                    if _same(a.b, b):
                        return a.a
            elif t is E.Mul:
                if cb == 1:
                    return a
                if ca == 1:
                    return b
                if ca == 0 or cb == 0:
                    return a if ca == 0 else b
                if idx and ca is not None:
                    return E.Mul(b, a)
                if idx and cb is not None and type(a) is E.Mul and isinstance(a.b, E.IntImm):
                    return E.Mul(a.a, E.IntImm(e.dtype, a.b.value * cb))
            elif t in (E.FloorDiv, E.Div, E.FloorMod, E.Mod):
                return self._divmod(e, a, b, cb, idx)
            elif t is E.Min or t is E.Max:
                if _same(a, b):
                    return a
                if idx:
                    le = self._decide("LE", a, b)
                    if le is not None:
                        return (a if le else b) if t is E.Min else (b if le else a)
                    ge = self._decide("LE", b, a)
                    if ge:
                        return b if t is E.Min else a
                    if ca is not None:
                        return t(b, a)
            elif t in (E.LT, E.LE, E.EQ, E.NE) and idx:
                op = {E.LT: "LT", E.LE: "LE", E.EQ: "EQ", E.NE: "NE"}[t]
                known = self._decide(op, a, b)
                if known is not None:
                    return bool_imm(known)
                rest, k = _split_const(a)
                if rest is not a and cb is not None:
                    return t(rest, E.IntImm(a.dtype, cb - k))
            elif t is E.And or t is E.Or:
                absorb = t is E.Or
                if ca is not None:
                    return bool_imm(absorb) if bool(ca) == absorb else b
                if cb is not None:
                    return bool_imm(absorb) if bool(cb) == absorb else a
                if _same(a, b):
                    return a
            return None
        if t is E.Not:
            a = e.a
            if isinstance(a, E.IntImm):
                return bool_imm(not a.value)
            if type(a) is E.Not:
                return a.a
            if isinstance(a, E.BinaryOp) and is_index(a.a.dtype):
                neg = {E.LT: lambda x, y: E.LE(y, x), E.LE: lambda x, y: E.LT(y, x),
                       E.EQ: E.NE, E.NE: E.EQ}.get(type(a))
                if neg is not None:
                    return neg(a.a, a.b)
            return None
        if t is E.Select:
            c = const_of(e.condition)
            if c is not None:
                return e.true_value if c else e.false_value
            if _same(e.true_value, e.false_value):
                return e.true_value
            return None
        if t is E.Cast:
            v = e.value
            if v.dtype == e.dtype:
                return v
            c = const_of(v)
            if c is not None and "x" not in e.dtype:
                if e.dtype == "bool":
                    return bool_imm(c != 0)
                if e.dtype.startswith(("float", "bfloat")):
                    return E.FloatImm(e.dtype, float(c))
                return E.IntImm(e.dtype, wrap_int(int(c), e.dtype))
        return None

    def _fold(self, e, ca, cb):
        t = type(e)
        if t in (E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE):
            return bool_imm({E.LT: ca < cb, E.LE: ca <= cb, E.GT: ca > cb, E.GE: ca >= cb,
                             E.EQ: ca == cb, E.NE: ca != cb}[t])
        if t is E.And or t is E.Or:
            return bool_imm((ca and cb) if t is E.And else (ca or cb))
        v = _fold(t, ca, cb, e.dtype)
        if v is None:
            return None
        if e.dtype.startswith(("float", "bfloat")):
            return E.FloatImm(e.dtype, float(v))
        return E.IntImm(e.dtype, wrap_int(int(v), e.dtype))

    def _divmod(self, e, a, b, cb, idx: bool):
        t = type(e)
        is_mod = t in (E.FloorMod, E.Mod)
        if cb == 1:
            return E.IntImm(e.dtype, 0) if is_mod and idx else (None if is_mod else a)
        if not idx or cb is None or cb <= 0:
            return None
        if type(a) is E.Mul and isinstance(a.b, E.IntImm) and a.b.value % cb == 0:
            return E.IntImm(e.dtype, 0) if is_mod else E.Mul(a.a, E.IntImm(e.dtype, a.b.value // cb))
        lo = self._decide("LE", E.IntImm(a.dtype, 0), a)
        hi = self._decide("LT", a, E.IntImm(a.dtype, cb))
        if lo and hi:
            return a if is_mod else E.IntImm(e.dtype, 0)
        return None
