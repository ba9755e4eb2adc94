"""Division and modulo in canonical form, with TVM's floor (``//``, ``%``) and trunc semantics.

Exact identities only: ``floordiv(D * c + R, c) == D + floordiv(R, c)``, common factors cancel
(``floordiv(g * a, g * b) == floordiv(a, b)``), ``floormod(g * S + r, g * m) == g *
floormod(S + r // g, m) + r % g``, nested floor divisions merge, and bounds or congruences
decide what is left. Trunc division rewrites like floor division only for non-negative operands.
"""

from __future__ import annotations

from math import gcd

from ..tir import expr as E
from .bound import is_inf, iv_div, iv_floormod, iv_truncmod
from .poly import Poly, split_content

_KIND = {E.FloorDiv: "fdiv", E.FloorMod: "fmod", E.Div: "tdiv", E.Mod: "tmod"}
_NODE = {"fdiv": E.FloorDiv, "fmod": E.FloorMod, "tdiv": E.Div, "tmod": E.Mod}


def _fold(kind: str, a: int, b: int) -> int:
    if kind == "fdiv":
        return a // b
    if kind == "fmod":
        return a % b
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b > 0) else -q
    return q if kind == "tdiv" else a - b * q


def combine(cz, node_type: type, a: Poly, b: Poly) -> Poly:
    """The canonical value of ``node_type(a, b)`` for a division or modulo node."""
    kind = _KIND[node_type]
    is_mod = kind in ("fmod", "tmod")
    if b.is_const():
        return by_const(cz, a, b.const, kind)
    dtype = a.dtype
    if a.is_const() and a.const == 0:
        return Poly(dtype)
    g, mono = split_content([a, b])
    gpoly = None
    if g > 1 or mono:
        a, b = cz.divide_content(a, g, mono), cz.divide_content(b, g, mono)
        gpoly = Poly(dtype, {mono: g}) if mono else Poly(dtype, const=g)
    if b.is_const():
        r = by_const(cz, a, b.const, kind)
    else:
        k = _ratio(a, b)
        if k is not None:
            r = Poly(dtype, const=0 if is_mod else k)
        elif cz.range_of(a)[0] >= 0 and cz.range_of(b.copy().add_(a, -1))[0] >= 1:
            r = a if is_mod else Poly(dtype)
        else:
            ba, bb = cz.bound(a), cz.bound(b)
            if kind == "fdiv" or kind == "tdiv":
                bound = iv_div(ba, bb, kind == "fdiv")
            else:
                bound = iv_floormod(ba, bb) if kind == "fmod" else iv_truncmod(ba, bb)
            expr = _NODE[kind](cz.to_expr(a), cz.to_expr(b))
            r = cz.atom((kind, "by", cz.vid(a), cz.vid(b)), expr, bound)
    return cz.poly_mul(r, gpoly) if is_mod and gpoly is not None else r


def _ratio(a: Poly, b: Poly) -> int | None:
    """``k`` with ``a == k * b`` exactly, else None."""
    (m0, c0) = next(iter(b.terms.items()))
    ca = a.terms.get(m0)
    if ca is None or ca % c0 or len(a.terms) != len(b.terms):
        return None
    k = ca // c0
    if a.const != b.const * k:
        return None
    for m, c in b.terms.items():
        if a.terms.get(m) != c * k:
            return None
    return k


def by_const(cz, p: Poly, c: int, kind: str) -> Poly:
    """``kind(p, c)`` for a constant divisor ``c``."""
    dtype = p.dtype
    if c == 0:  # undefined: left as written
        expr = _NODE[kind](cz.to_expr(p), E.IntImm(dtype, 0))
        return cz.atom(("div0", kind, cz.vid(p)), expr)
    if p.is_const():
        return Poly(dtype, const=_fold(kind, p.const, c))
    if c < 0:
        return _negative_divisor(cz, p, c, kind)
    if c == 1:
        return Poly(dtype) if kind in ("fmod", "tmod") else p
    if kind in ("fdiv", "fmod") or cz.range_of(p)[0] >= 0:
        trunc = kind in ("tdiv", "tmod")
        if kind in ("fdiv", "tdiv"):
            return _floordiv(cz, p, c, trunc)
        return _floormod(cz, p, c, trunc)
    # trunc semantics, sign unknown: exact division only, and common factors
    if p.const % c == 0 and all(k % c == 0 for k in p.terms.values()):
        return Poly(dtype) if kind == "tmod" else p.exact_div(c)
    lo, hi = cz.range_of(p)
    if lo > -c and hi < c:  # |p| < c
        return p if kind == "tmod" else Poly(dtype)
    g = gcd(gcd(c, p.coeff_gcd()), p.const)
    if g > 1:
        r = by_const(cz, p.exact_div(g), c // g, kind)
        return r.scaled(g) if kind == "tmod" else r
    bound = iv_div((lo, hi), (c, c), False) if kind == "tdiv" else iv_truncmod((lo, hi), (c, c))
    return _atom(cz, kind, p, c, bound)


def _negative_divisor(cz, p: Poly, c: int, kind: str) -> Poly:
    """``kind(p, c)`` for ``c < 0`` through a positive divisor; as written unless that
    simplifies it (it would only trade ``x // -2`` for ``x * -1 // 2``)."""
    if kind == "fdiv":
        r = by_const(cz, p.scaled(-1), -c, kind)
    elif kind == "fmod":
        r = by_const(cz, p.scaled(-1), -c, kind).scaled(-1)
    elif kind == "tdiv":
        r = by_const(cz, p, -c, kind).scaled(-1)
    else:
        r = by_const(cz, p, -c, kind)
    own = {i for mono in p.terms for i in mono}
    if not any(i not in own and cz.atom_info[i] is not None for mono in r.terms for i in mono):
        return r
    b, cc = cz.bound(p), (c, c)
    if kind in ("fdiv", "tdiv"):
        bound = iv_div(b, cc, kind == "fdiv")
    else:
        bound = iv_floormod(b, cc) if kind == "fmod" else iv_truncmod(b, cc)
    expr = _NODE[kind](cz.to_expr(p), E.IntImm(p.dtype, c))
    return cz.atom(("neg", kind, cz.vid(p), c), expr, bound)


def _atom(cz, kind: str, n: Poly, d: int, bound) -> Poly:
    key = (kind, cz.vid(n), d)
    a = cz.atom(key, _NODE[kind](cz.to_expr(n), E.IntImm(n.dtype, d)), bound, (1, 0),
                (kind, n, d))
    cz.div_atoms[key] = next(iter(a.terms))[0]
    if kind in ("fmod", "tmod"):
        cz.has_mod_atoms = True
    return a


def _split(p: Poly, c: int) -> tuple[Poly, Poly]:
    """Terms whose coefficient ``c`` divides, and the rest (constant excluded)."""
    d, r = Poly(p.dtype), Poly(p.dtype)
    for m, k in p.terms.items():
        (d if k % c == 0 else r).terms[m] = k
    return d, r


def _reduce(r: Poly, const: int, c: int) -> tuple[Poly, int, int, int]:
    """``r + const`` as ``g * n + s`` with ``0 <= s < g``, ``g = gcd(c, coefficients)``.

    Returns ``(n, g, s, c // g)``."""
    g = gcd(c, r.coeff_gcd())
    q, s = divmod(const, g)
    n = r.exact_div(g)
    n.const = q
    return n, g, s, c // g


def _floordiv(cz, p: Poly, c: int, trunc: bool) -> Poly:
    d, r = _split(p, c)
    q = d.exact_div(c)
    if not r.terms:
        q.const += p.const // c
        return q
    n, _, _, c2 = _reduce(r, p.const, c)
    extra = 0
    if n.const % c2 == 0:
        extra, n.const = n.const // c2, 0
    lo, hi = cz.range_of(n)
    if not is_inf(lo) and not is_inf(hi) and lo // c2 == hi // c2:
        q.const += extra + lo // c2
        return q
    out = None
    # floordiv(floordiv(m, a) + k, c2) == floordiv(m + k * a, a * c2)
    if len(n.terms) == 1:
        (mono, coef), = n.terms.items()
        info = cz.atom_info[mono[0]] if len(mono) == 1 and coef == 1 else None
        if info is not None and info[0] == "fdiv":
            inner = info[1].copy()
            inner.const += n.const * info[2]
            out = _floordiv(cz, inner, info[2] * c2, False).copy()
    if out is None:
        kind = "tdiv" if trunc and lo >= 0 else "fdiv"
        out = _atom(cz, kind, n, c2, iv_div((lo, hi), (c2, c2), True))
    out.add_(q)  # the quotient's own term first, as TVM prints it
    out.const += extra
    return out


def _strip_nested_mod(cz, p: Poly, c: int) -> Poly:
    """Replace ``k * floormod(m, c1)`` by ``k * m`` where ``c`` divides ``c1`` (same mod ``c``)."""
    changed = True
    while changed:
        changed = False
        for mono, k in p.terms.items():
            info = cz.atom_info[mono[0]] if len(mono) == 1 else None
            if info is not None and info[0] in ("fmod", "tmod") and info[2] % c == 0:
                p = p.copy()
                del p.terms[mono]
                p.add_(info[1], k)
                changed = True
                break
    return p


def _floormod(cz, p: Poly, c: int, trunc: bool) -> Poly:
    p = _strip_nested_mod(cz, p, c)
    _, r = _split(p, c)
    const = p.const % c
    if not r.terms:
        return Poly(p.dtype, const=const)
    n, g, s, c2 = _reduce(r, const, c)
    if g > 1:  # the smaller modulus may strip more nested mods
        out = _floormod(cz, n, c2, trunc).scaled(g)
        out.const += s
        return out
    lo, hi = cz.range_of(n)
    if not is_inf(lo) and not is_inf(hi) and lo // c2 == hi // c2:
        inner = n.copy()
        inner.const -= c2 * (lo // c2)
    else:
        coeff, base = cz.mod(n)
        if coeff % c2 == 0:
            inner = Poly(p.dtype, const=base % c2)
        else:
            kind = "tmod" if trunc and lo >= 0 else "fmod"
            inner = _atom(cz, kind, n, c2, iv_floormod((lo, hi), (c2, c2)))
    out = inner.scaled(g)
    out.const += s
    return out


def _div_partner(cz, info) -> int | None:
    """The atom ``floordiv(n, d)`` that pairs with ``floormod(n, d)`` (info of the latter),
    also as ``floordiv(m, a * d)`` when ``n`` is ``floordiv(m, a)``."""
    kind = "fdiv" if info[0] == "fmod" else "tdiv"
    n, d = info[1], info[2]
    j = cz.div_atoms.get((kind, cz.vid(n), d))
    if j is None and kind == "fdiv" and n.const == 0 and len(n.terms) == 1:
        (mono, coef), = n.terms.items()
        inner = cz.atom_info[mono[0]] if len(mono) == 1 and coef == 1 else None
        if inner is not None and inner[0] == "fdiv":
            j = cz.div_atoms.get(("fdiv", cz.vid(inner[1]), inner[2] * d))
    return j


def merge_split(cz, acc: Poly) -> Poly:
    """``floordiv(x, d) * (k * d) + floormod(x, d) * k`` becomes ``x * k`` (in place)."""
    changed = True
    while changed:
        changed = False
        for mono, k in list(acc.terms.items()):
            if len(mono) != 1 or acc.terms.get(mono) != k:
                continue
            info = cz.atom_info[mono[0]]
            if info is None or info[0] not in ("fmod", "tmod"):
                continue
            j = _div_partner(cz, info)
            if j is not None and acc.terms.get((j,)) == k * info[2]:
                del acc.terms[mono]
                del acc.terms[(j,)]
                acc.add_(info[1], k)
                changed = True
    return acc
