"""Symbolic-shape injective stages that copy in row-major order, as flat vector loops.

A reshape with a symbolic batch reaches the schedules with index expressions like
``x[((j * 64 + k) // 192 + i * n) // n, ((j * 64 + k) // 192 + i * n) % n, (j * 64 + k) % 192]``
(ViT's head split, ``(197, n, 192) -> (197, 3n, 64)``). The static analyzer cannot drop the
divisions by ``n`` (it would need ``(j * 64 + k) // 192 < n``), so every vector lane divided by
``n`` twice: 128 us a call at batch 1, where a copy of its 150 KB takes a few.

Such a load reads the element at the same row-major position as the one stored, which needs no
bounds to prove: written as a polynomial over variables and ``x // d`` atoms, with every
``x % d`` replaced by ``x - d * (x // d)`` (an identity of floor division for any ``d != 0``)
and multiples of ``d`` taken out of ``x // d``, the load's flat offset and the store's are the
same polynomial. ``flat_nest`` then emits the stage as rows of its trailing static extent,
addressed through flat views: contiguous vectors, no division at all.
"""

from __future__ import annotations

from collections import Counter

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import post_order, transform_expr
from .common import const_int, lanes, outer_loops, prod_dims, same_dims, vector_inner

Poly = dict  # {monomial (sorted tuple of atom indices, repeats are powers): coefficient}


def _bump(out: Poly, m: tuple, c: int) -> None:
    """Add ``c`` to monomial ``m``'s coefficient in ``out``, dropping it when it becomes 0."""
    v = out.get(m, 0) + c
    if v:
        out[m] = v
    else:
        out.pop(m, None)


def _add(p: Poly, q: Poly, k: int = 1) -> Poly:
    out = dict(p)
    for m, c in q.items():
        _bump(out, m, k * c)
    return out


def _mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            _bump(out, tuple(sorted(m1 + m2)), c1 * c2)
    return out


def _const(v: int) -> Poly:
    return {(): v} if v else {}


def _key(p: Poly) -> tuple:
    return tuple(sorted(p.items()))


def _divides(mono: tuple, sub: tuple) -> tuple | None:
    """``mono / sub`` as a monomial when ``sub`` divides ``mono``, else None."""
    have, need = Counter(mono), Counter(sub)
    if any(have[a] < n for a, n in need.items()):
        return None
    return tuple(sorted((have - need).elements()))


class Canon:
    """Integer index expressions as polynomials over atoms (variables, ``x // d`` and
    expressions it does not look into), numbered in order of first appearance."""

    def __init__(self):
        self.atoms: list = []  # ("var", Var) | ("div", num Poly, den Poly) | ("opaque", expr)
        self._ids: dict = {}

    def _atom(self, key, info) -> Poly:
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self.atoms)
            self.atoms.append(info)
        return {(i,): 1}

    def of(self, root) -> Poly:
        """The polynomial of integer expression ``root`` (iterative: no recursion)."""
        memo: dict[int, Poly] = {}
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if id(e) in memo:
                continue
            kids = self._kids(e)
            if not ready and kids:
                stack.append((e, True))
                stack.extend((k, False) for k in kids if id(k) not in memo)
                continue
            memo[id(e)] = self._node(e, [memo[id(k)] for k in kids])
        return memo[id(root)]

    @staticmethod
    def _kids(e) -> list:
        if isinstance(e, (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod)) and \
                e.dtype.startswith("int"):
            return [e.a, e.b]
        if isinstance(e, E.Cast) and e.dtype.startswith("int") and \
                e.value.dtype.startswith("int"):
            return [e.value]
        return []

    def _node(self, e, kids: list) -> Poly:
        if isinstance(e, E.IntImm) and e.dtype.startswith("int"):
            return _const(e.value)
        if isinstance(e, E.Var) and e.dtype.startswith("int"):
            return self._atom(("var", id(e)), ("var", e))
        if not kids:
            return self._atom(("opaque", id(e)), ("opaque", e))
        if isinstance(e, E.Cast):  # (an index widened or narrowed: its value is unchanged)
            return kids[0]
        a, b = kids
        if isinstance(e, E.Add):
            return _add(a, b)
        if isinstance(e, E.Sub):
            return _add(a, b, -1)
        if isinstance(e, E.Mul):
            return _mul(a, b)
        q = self.div(a, b)
        return q if isinstance(e, E.FloorDiv) else _add(a, _mul(b, q), -1)

    def div(self, a: Poly, b: Poly) -> Poly:
        """``floordiv(a, b)``: the terms of ``a`` that are multiples of a one-term ``b`` come
        out exactly (``(r + b * q) // b == r // b + q``); nested constant divisions merge."""
        if not b:
            return self._atom(("div", _key(a), ()), ("div", a, b))
        if len(b) != 1:
            return self._atom(("div", _key(a), _key(b)), ("div", a, b))
        (mb, cb), = b.items()
        q: Poly = {}
        r: Poly = {}
        for m, c in a.items():
            rest = _divides(m, mb)
            if rest is not None and c % cb == 0:
                q[rest] = c // cb
            else:
                r[m] = c
        if not r:
            return q
        if not mb and list(r) == [()]:
            return _add(q, _const(r[()] // cb))
        if not mb and cb > 0 and len(r) == 1 and r.get(next(iter(r))) == 1:
            (m,) = r
            inner = self.atoms[m[0]] if len(m) == 1 else None
            if inner is not None and inner[0] == "div" and len(inner[2]) == 1 and \
                    list(inner[2]) == [()] and inner[2][()] > 0:  # (x // c1) // c2
                return _add(q, self.div(inner[1], _const(inner[2][()] * cb)))
        return _add(q, self._atom(("div", _key(r), _key(b)), ("div", r, b)))


def flat_offset(canon: Canon, buf, indices) -> Poly | None:
    """The row-major offset of ``buf[indices]`` from its first element, or None for a buffer
    with explicit strides."""
    if buf.strides:
        return None
    out: Poly = {}
    for d, i in zip(buf.shape, indices, strict=True):
        out = _add(_mul(out, canon.of(d)), canon.of(i))
    return out


def positioned_loads(canon: Canon, body, axis_ids: set) -> list:
    """``(load, row-major offset)`` for each distinct load in ``body`` whose indices use a
    variable in ``axis_ids`` (a load of one element everywhere, a scalar or a broadcast value,
    is left out); the offset is None for a strided buffer or an index ``flat_offset`` cannot
    read."""
    out, seen = [], set()
    for e in post_order(body):
        if not isinstance(e, E.BufferLoad) or id(e) in seen:
            continue
        seen.add(id(e))
        if any(isinstance(x, E.Var) and id(x) in axis_ids
               for i in e.indices for x in post_order(i)):
            out.append((e, flat_offset(canon, e.buffer, e.indices) if not e.buffer.strides
                        else None))
    return out


def flat_nest(ctx, t, buf, body) -> S.Stmt | None:
    """Stage ``t`` (symbolic shape, inlined ``body``) as a flat loop when every load that
    depends on its axes reads at the stored element's row-major position (a reshape, an
    elementwise op on same-sized operands, or both); None otherwise."""
    shape = list(buf.shape)
    axes = [iv.var for iv in t.op.axis]
    if len(shape) != len(axes) or buf.strides or not shape or \
            not same_dims(shape, [iv.dom.extent for iv in t.op.axis]):
        return None
    canon = Canon()
    axis_ids = {id(v) for v in axes}
    out_key = _key(flat_offset(canon, buf, axes))
    flat = E.Var("f", "int64")
    loads = {}
    for e, off in positioned_loads(canon, body, axis_ids):
        if off is None or _key(off) != out_key:
            return None
        loads[id(e)] = e
    if not loads:
        return None

    def fpost(e):
        if isinstance(e, E.BufferLoad) and id(e) in loads:
            return E.BufferLoad(ctx.flat_view(e.buffer), [flat])
        return None

    new = transform_expr(body, fpost)
    if any(isinstance(x, E.Var) and id(x) in axis_ids for x in post_order(new)):
        return None  # (an axis read as a value, not through a load)
    inner = 1
    k = len(shape)
    while k > 0 and const_int(shape[k - 1]) is not None:
        k -= 1
        inner *= const_int(shape[k])
    out = ctx.flat_view(buf)
    nl = lanes(t.dtype)

    def at(base, j):
        f = j if base is None else base + (j if j.dtype == "int64" else E.Cast("int64", j))
        f = f if f.dtype == "int64" else E.Cast("int64", f)
        return S.BufferStore(out, transform_expr(new, lambda x: f if x is flat else None), [f])

    if inner < nl:  # (a symbolic innermost extent: one vector loop over everything)
        return vector_inner(ctx, prod_dims(shape, "int64"), nl, lambda j: at(None, j))
    rows = prod_dims(shape[:k], "int64")

    def row(idx):
        base = idx[0] * E.IntImm("int64", inner)
        return vector_inner(ctx, inner, nl, lambda j: at(base, j))

    return outer_loops(ctx, [rows], True, row, inner)
