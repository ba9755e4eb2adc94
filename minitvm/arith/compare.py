"""Comparisons and logic in canonical form, and constant folding of non-index arithmetic.

An integer comparison becomes ``D op 0`` with ``op`` one of LT / LE / EQ / NE (``a > b`` is
``b < a``, as TVM prints it) and ``D = a - b`` divided by the gcd of its coefficients; bounds and
congruences of ``D`` decide it, otherwise it prints as ``positive terms op negative terms + c``.
"""

from __future__ import annotations

import math

from ..tir import expr as E
from .bound import NEG_INF, POS_INF, dtype_range
from .poly import Poly

CMP_OPS = (E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE)
_NODE = {"LT": E.LT, "LE": E.LE, "EQ": E.EQ, "NE": E.NE}
_NEGATE = {"LT": "LE", "LE": "LT", "EQ": "NE", "NE": "EQ"}


def compare(cz, node, a, b):
    """The canonical value of a comparison node with operand values ``a`` and ``b``."""
    t = type(node)
    if isinstance(a, Poly) and isinstance(b, Poly) and a.dtype == b.dtype:
        if t is E.GT or t is E.GE:
            a, b = b, a
        op = {E.LT: "LT", E.GT: "LT", E.LE: "LE", E.GE: "LE", E.EQ: "EQ", E.NE: "NE"}[t]
        return cmp_term(cz, op, a.copy().add_(b, -1))
    ea, eb = cz.to_expr(a), cz.to_expr(b)
    ca, cb = _const(ea), _const(eb)
    if ca is not None and cb is not None:
        py = {E.LT: ca < cb, E.LE: ca <= cb, E.GT: ca > cb, E.GE: ca >= cb, E.EQ: ca == cb,
              E.NE: ca != cb}[t]
        return cz.bool_term(py)
    return cz.term(t(ea, eb), ("cmp", t, cz.vid(a), cz.vid(b)))


def _const(e):
    if isinstance(e, (E.IntImm, E.FloatImm)):
        return e.value
    return None


def normalize(op: str, d: Poly) -> Poly | bool:
    """``d op 0`` over the integers as ``D op 0`` with coprime coefficients, or its truth."""
    if d.is_const():
        return {"LT": d.const < 0, "LE": d.const <= 0, "EQ": d.const == 0,
                "NE": d.const != 0}[op]
    g = d.coeff_gcd()
    c = d.const
    if op in ("EQ", "NE"):
        if c % g:
            return op == "NE"
        return d.exact_div(g) if g > 1 else d
    if g == 1:
        return d
    q = Poly(d.dtype, {m: k // g for m, k in d.terms.items()})
    # Q*g + c < 0  <=>  Q + floor(c / g) < 0 ;  Q*g + c <= 0  <=>  Q - floor(-c / g) <= 0
    q.const = c // g if op == "LT" else -((-c) // g)
    return q


def decide(cz, op: str, d: Poly) -> bool | None:
    """Whether ``d op 0`` holds for every value of the variables (None: it depends)."""
    lo, hi = cz.range_of(d)
    if op == "LT":
        return True if hi < 0 else False if lo >= 0 else None
    if op == "LE":
        return True if hi <= 0 else False if lo > 0 else None
    known = None
    if lo == hi == 0:
        known = True
    elif lo > 0 or hi < 0:
        known = False
    else:
        coeff, base = cz.mod(d)
        if (coeff == 0 and base != 0) or (coeff and base % coeff):
            known = False
    if known is None:
        return None
    return known if op == "EQ" else not known


def cmp_term(cz, op: str, d: Poly):
    """The value of ``d op 0``: a constant, or a normalized comparison term."""
    n = normalize(op, d)
    if isinstance(n, bool):
        return cz.bool_term(n)
    known = decide(cz, op, n)
    if known is not None:
        return cz.bool_term(known)
    if op in ("LT", "LE") and 2 < len(n.terms) + 1 <= 16:
        dropped = _drop_bounded(cz, n if op == "LT" else _shift(n, -1))
        if dropped is not None:
            return cmp_term(cz, "LT", dropped)
    dtype = n.dtype
    pos = Poly(dtype, {m: k for m, k in n.terms.items() if k > 0})
    neg = Poly(dtype, {m: -k for m, k in n.terms.items() if k < 0})
    r = -n.const
    node = _NODE[op]
    if pos.terms:
        neg.const = r
        expr = node(cz.render(pos), cz.render(neg))
    elif op in ("EQ", "NE"):
        expr = node(cz.render(neg), E.IntImm(dtype, -r))
    else:
        expr = node(E.IntImm(dtype, -r), cz.render(neg))
    return cz.term(expr, _cmp_key(cz, op, n), ("cmp", op, n))


def _cmp_key(cz, op: str, n: Poly) -> tuple:
    if op in ("EQ", "NE"):
        return ("cmp", op, frozenset((cz.vid(n), cz.vid(n.scaled(-1)))))
    return ("cmp", op, cz.vid(n))


def _negation_id(cz, t) -> int:
    """The interned identity the negation of boolean term ``t`` has."""
    info = t.info
    if info is not None and info[0] == "cmp":
        op, n = info[1], info[2]
        return cz.intern(_cmp_key(cz, _NEGATE[op], n if op in ("EQ", "NE") else n.scaled(-1)))
    if info is not None and info[0] == "not":
        return info[1].tid
    return cz.intern(("not", t.tid))


def _as_range(cz, t):
    """A comparison term as ``(form id, lo, hi)``: its linear form lies in ``[lo, hi]``."""
    info = t.info
    if info is None or info[0] != "cmp" or info[1] == "NE":
        return None
    op, d = info[1], info[2]
    k = d.const
    lo, hi = (-k, -k) if op == "EQ" else (NEG_INF, -k - (op == "LT"))
    form = cz.intern(Poly(d.dtype, d.terms).terms_key())
    flipped = cz.intern(d.scaled(-1).terms_key())
    if flipped < form:  # one orientation per form: -P in [lo, hi] is P in [-hi, -lo]
        return flipped, -hi, -lo
    return form, lo, hi


def _merge_ranges(cz, a, b, is_and: bool):
    """``and`` / ``or`` of two comparisons of one linear form, when one comparison says it."""
    ra, rb = _as_range(cz, a), _as_range(cz, b)
    if ra is None or rb is None or ra[0] != rb[0]:
        return None
    (_, alo, ahi), (_, blo, bhi) = ra, rb
    if is_and:
        lo, hi = max(alo, blo), min(ahi, bhi)
        if lo > hi:
            return cz.bool_term(False)
        return a if (lo, hi) == (alo, ahi) else b if (lo, hi) == (blo, bhi) else None
    if (alo == NEG_INF and bhi == POS_INF and blo <= ahi + 1) or \
            (blo == NEG_INF and ahi == POS_INF and alo <= bhi + 1):
        return cz.bool_term(True)
    if blo <= alo and ahi <= bhi:
        return b
    if alo <= blo and bhi <= ahi:
        return a
    return None


def _shift(p: Poly, k: int) -> Poly:
    q = p.copy()
    q.const += k
    return q


def _drop_bounded(cz, d: Poly) -> Poly | None:
    """For ``d < 0`` with ``d = c * Q + R + k`` where R's range is narrower than ``c`` and
    ``ceil((-k - R) / c)`` is one value ``b`` over it: ``Q - b`` (then ``d < 0 <=> Q < b``)."""
    items = sorted(d.terms.items(), key=lambda kv: -abs(kv[1]))
    c = 0
    for cut in range(1, len(items)):
        c = math.gcd(c, items[cut - 1][1])
        if c <= 1:
            return None
        rest = Poly(d.dtype, dict(items[cut:]))
        rlo, rhi = cz.range_of(rest)
        if rhi - rlo >= c:
            continue
        m = -d.const
        b = -((rlo - m) // c)  # ceil((m - rlo) / c)
        if b != -((rhi - m) // c):
            continue
        q = Poly(d.dtype, {mono: k // c for mono, k in items[:cut]})
        q.const = -b
        return q
    return None


def _as_term(cz, v):
    if isinstance(v, Poly):
        return cz.term(cz.render(v), ("P", cz.vid(v)))
    return v


def _truth(v) -> bool | None:
    c = _const(v.expr)
    return None if c is None else bool(c)


def logic(cz, node, vals):
    """``and`` / ``or`` / ``not`` with constants folded and comparisons negated."""
    t = type(node)
    if t is E.Not:
        a = _as_term(cz, vals[0])
        c = _truth(a)
        if c is not None:
            return cz.bool_term(not c)
        info = a.info
        if info is not None and info[0] == "cmp":
            return cmp_term(cz, _NEGATE[info[1]], info[2] if info[1] in ("EQ", "NE")
                            else info[2].scaled(-1))
        if info is not None and info[0] == "not":
            return info[1]
        return cz.term(E.Not(a.expr), ("not", a.tid), ("not", a))
    a, b = _as_term(cz, vals[0]), _as_term(cz, vals[1])
    ca, cb = _truth(a), _truth(b)
    absorb = t is E.Or  # the value that decides: True for or, False for and
    if ca is not None:
        return cz.bool_term(absorb) if ca == absorb else b
    if cb is not None:
        return cz.bool_term(absorb) if cb == absorb else a
    if a.tid == b.tid:
        return a
    if _negation_id(cz, a) == b.tid:  # x and not x, x or not x
        return cz.bool_term(absorb)
    merged = _merge_ranges(cz, a, b, t is E.And)
    if merged is not None:
        return merged
    name = "and" if t is E.And else "or"
    return cz.term(t(a.expr, b.expr), (name, a.tid, b.tid))


def _fold(t, a, b, dtype: str):
    """Python value of ``t(a, b)`` on constants, None when undefined."""
    if t is E.Add:
        return a + b
    if t is E.Sub:
        return a - b
    if t is E.Mul:
        return a * b
    if t is E.Min:
        return min(a, b)
    if t is E.Max:
        return max(a, b)
    if b == 0:
        return None
    if isinstance(a, float) or isinstance(b, float):
        if t is E.Div:
            return a / b
        if t is E.FloorDiv:
            return float(math.floor(a / b))
        if t is E.FloorMod:
            return a - b * math.floor(a / b)
        return math.fmod(a, b)
    if t is E.FloorDiv:
        return a // b
    if t is E.FloorMod:
        return a % b
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b > 0) else -q
    return q if t is E.Div else a - b * q


def fold_arith(cz, node, a, b):
    """Arithmetic on floats, unsigned or vector values: constants fold, identities drop."""
    t = type(node)
    a, b = _as_term(cz, a), _as_term(cz, b)
    ea, eb = a.expr, b.expr
    ca, cb = _const(ea), _const(eb)
    dtype = node.dtype
    if ca is not None and cb is not None and "x" not in dtype:
        v = _fold(t, ca, cb, dtype)
        if v is not None:
            if dtype.startswith(("float", "bfloat")):
                return cz.const_term(E.FloatImm(dtype, float(v)))
            lo, hi = dtype_range(dtype)
            if dtype.startswith("uint"):
                v = v % (hi + 1)
            return cz.const_term(E.IntImm(dtype, int(v)))
    if (t is E.Add and cb == 0) or (t is E.Sub and cb == 0) or (t is E.Mul and cb == 1):
        return a
    if (t is E.Add and ca == 0) or (t is E.Mul and ca == 1):
        return b
    if t is E.Mul and (ca == 0 or cb == 0):
        return a if ca == 0 else b
    if t in (E.Div, E.FloorDiv) and cb == 1:
        return a
    new = node if (ea is node.a and eb is node.b) else t(ea, eb)
    return cz.term(new, ("N", t, dtype, None, (a.tid, b.tid)))
