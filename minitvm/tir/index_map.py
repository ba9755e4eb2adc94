"""``tir.IndexMap``: a map from N input indices to M output indices, written as a Python lambda
(``IndexMap.from_func(lambda n, c: [n, c // 4, c % 4])``). It gives the shape a buffer has after
the map (``map_shape``) and, for affine maps built of permutations, splits (``i // k``,
``i % k``) and fusions (``i * k + j``), the inverse map, with the predicate of the padding the
map introduces where a split does not divide its axis (``non_surjective_inverse``).

The tir layer sits below ``arith``: methods that simplify take an optional ``analyzer`` (any
object with ``simplify(expr)``); without one, integer results are folded here."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from . import expr as E
from .stmt_functor import post_order, substitute

__all__ = ["IndexMap"]

Dim = int | E.PrimExpr


# --------------------------------------------------------------------------- small helpers
def _as_int(x) -> int | None:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, E.IntImm):
        return int(x.value)
    return None


def _expr(x: Dim, dtype: str) -> E.PrimExpr:
    return E.IntImm(dtype, x) if isinstance(x, int) else x


def _add(a: Dim, b: Dim, dtype: str) -> Dim:
    ia, ib = _as_int(a), _as_int(b)
    if ia is not None and ib is not None:
        return ia + ib
    if ib == 0:
        return a
    if ia == 0:
        return b
    return E.Add(_expr(a, dtype), _expr(b, dtype))


def _sub(a: Dim, b: Dim, dtype: str) -> Dim:
    ia, ib = _as_int(a), _as_int(b)
    if ia is not None and ib is not None:
        return ia - ib
    if ib == 0:
        return a
    return E.Sub(_expr(a, dtype), _expr(b, dtype))


def _mul(a: Dim, k: int, dtype: str) -> Dim:
    ia = _as_int(a)
    if ia is not None:
        return ia * k
    if k == 1:
        return a
    return E.Mul(_expr(a, dtype), E.IntImm(dtype, k))


def _fdiv(a: Dim, k: int, dtype: str) -> Dim:
    ia = _as_int(a)
    if ia is not None:
        return ia // k
    if k == 1:
        return a
    return E.FloorDiv(_expr(a, dtype), E.IntImm(dtype, k))


def _fmod(a: Dim, k: int, dtype: str) -> Dim:
    ia = _as_int(a)
    if ia is not None:
        return ia % k
    return E.FloorMod(_expr(a, dtype), E.IntImm(dtype, k))


def _ceildiv(a: Dim, k: int, dtype: str) -> Dim:
    return _fdiv(_add(a, k - 1, dtype), k, dtype)


def _const_divisor(e, what: str, m: IndexMap) -> int:
    k = _as_int(e)
    if k is None or k <= 0:
        raise ValueError(f"IndexMap {m}: {what} needs a positive constant, got {e}")
    return k


_BINOPS: dict[type, Callable] = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b, E.Min: min, E.Max: max,
    E.LT: lambda a, b: a < b, E.LE: lambda a, b: a <= b, E.GT: lambda a, b: a > b,
    E.GE: lambda a, b: a >= b, E.EQ: lambda a, b: a == b, E.NE: lambda a, b: a != b,
    E.And: lambda a, b: bool(a and b), E.Or: lambda a, b: bool(a or b),
}


def _eval_int(root: E.PrimExpr, env: dict) -> int:
    """The integer value of ``root`` with ``env`` giving each Var (iterative post-order)."""
    val: dict[int, int] = {}
    for e in post_order(root):
        if isinstance(e, E.Var):
            if e not in env:
                raise ValueError(f"IndexMap: no value for the variable {e.name}")
            val[id(e)] = int(env[e])
        elif isinstance(e, E.IntImm):
            val[id(e)] = int(e.value)
        elif type(e) in _BINOPS:
            val[id(e)] = int(_BINOPS[type(e)](val[id(e.a)], val[id(e.b)]))
        else:
            raise ValueError(f"IndexMap: cannot evaluate {type(e).__name__} in {root}")
    return val[id(root)]


# precedence of the operators an index map prints (Python's)
_OPS = {E.Add: ("+", 11), E.Sub: ("-", 11), E.Mul: ("*", 12), E.FloorDiv: ("//", 12),
        E.FloorMod: ("%", 12)}


def _text(root: E.PrimExpr) -> str:
    """An index expression as Python text: ``c // 4``, ``i * 4 + j`` (iterative)."""
    from .printer import expr_to_str

    out: dict[int, tuple[str, int]] = {}
    for e in post_order(root):
        if isinstance(e, E.Var):
            out[id(e)] = (e.name, 15)
        elif isinstance(e, E.IntImm):
            out[id(e)] = (str(int(e.value)), 15)
        elif type(e) in _OPS:
            sym, prec = _OPS[type(e)]
            (ta, pa), (tb, pb) = out[id(e.a)], out[id(e.b)]
            ta = ta if pa >= prec else f"({ta})"
            tb = tb if pb > prec else f"({tb})"
            out[id(e)] = (f"{ta} {sym} {tb}", prec)
        else:
            out[id(e)] = (expr_to_str(e), 15)
    return out[id(root)][0]


# --------------------------------------------------------------------------- IndexMap
class IndexMap:
    """A map from ``initial_indices`` (Vars) to ``final_indices`` (expressions of them)."""

    def __init__(self, initial_indices: Sequence[E.Var], final_indices: Sequence,
                 inverse_index_map: IndexMap | Callable | None = None):
        self.initial_indices = list(initial_indices)
        dtype = self.initial_indices[0].dtype if self.initial_indices else "int64"
        self.final_indices = [_expr(x, dtype) if isinstance(x, int) else x
                              for x in final_indices]
        for x in self.final_indices:
            if not isinstance(x, E.PrimExpr):
                raise TypeError(f"IndexMap: a final index must be a PrimExpr, got {x!r}")
        if callable(inverse_index_map) and not isinstance(inverse_index_map, IndexMap):
            inverse_index_map = IndexMap.from_func(inverse_index_map,
                                                   ndim=len(self.final_indices))
        self.inverse_index_map = inverse_index_map

    @staticmethod
    def from_func(mapping_function: Callable, ndim: int | None = None,
                  inverse_index_map: IndexMap | Callable | None = None, *,
                  index_dtype: str = "int64") -> IndexMap:
        """The IndexMap of ``mapping_function``: one Var per parameter (``ndim`` of them for
        a ``*args`` function), the returned index expressions as the final indices."""
        params = list(inspect.signature(mapping_function).parameters.values())
        named = [p.name for p in params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        if ndim is None:
            if varargs:
                raise ValueError("IndexMap.from_func: a function with *args needs ndim")
            ndim = len(named)
        if ndim < len(named) or (not varargs and ndim != len(named)):
            raise ValueError(f"IndexMap.from_func: ndim={ndim} but the function takes "
                             f"{len(named)} indices")
        names = named + [f"i{k}" for k in range(len(named), ndim)]
        ivars = [E.Var(n, index_dtype) for n in names]
        out = mapping_function(*ivars)
        if isinstance(out, (E.PrimExpr, int)):
            out = [out]
        return IndexMap(ivars, list(out), inverse_index_map)

    # ------------------------------------------------------------------ printing
    def script(self, tir_prefix: str = "T") -> str:
        """TVMScript text, ``T.index_map(lambda i, j: (j, i))``."""
        params = ", ".join(v.name for v in self.initial_indices)
        outs = [_text(x) for x in self.final_indices]
        body = f"({outs[0]},)" if len(outs) == 1 else f"({', '.join(outs)})"
        return f"{tir_prefix}.index_map(lambda {params}: {body})"

    def __str__(self) -> str:
        return self.script()

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return self.is_equivalent_to(other)

    def __hash__(self) -> int:
        return hash((self.ndim, len(self.final_indices)))

    # ------------------------------------------------------------------ mapping
    @property
    def ndim(self) -> int:
        return len(self.initial_indices)

    def _check_rank(self, values, what: str) -> None:
        if len(values) != len(self.initial_indices):
            raise ValueError(f"IndexMap {self}: expects {len(self.initial_indices)} {what}, "
                             f"got {len(values)}")

    def map_indices(self, indices: Sequence, analyzer=None) -> list:
        """The final indices at ``indices``: Python ints when every index is an int."""
        self._check_rank(indices, "indices")
        if all(_as_int(i) is not None for i in indices):
            env = {v: _as_int(i) for v, i in zip(self.initial_indices, indices)}
            return [_eval_int(x, env) for x in self.final_indices]
        dtype = self.initial_indices[0].dtype
        vmap = {v: _expr(i, dtype) for v, i in zip(self.initial_indices, indices)}
        out = [substitute(x, vmap) for x in self.final_indices]
        return [analyzer.simplify(x) for x in out] if analyzer is not None else out

    def map_shape(self, shape: Sequence, analyzer=None) -> list:
        """The shape after the map: each final index's range (interval of its expression with
        every initial index in ``[0, shape[k])``) plus one."""
        self._check_rank(shape, "dims")
        dtype = self.initial_indices[0].dtype if self.initial_indices else "int64"
        dom = {v: (0, _sub(_as_int(s) if _as_int(s) is not None else s, 1, dtype))
               for v, s in zip(self.initial_indices, shape)}
        out = []
        for x in self.final_indices:
            lo, hi = self._interval(x, dom, dtype)
            if _as_int(lo) == 0 and isinstance(hi, E.FloorDiv) and isinstance(hi.a, E.Sub) \
                    and _as_int(hi.a.b) == 1 and _as_int(hi.b) is not None:
                k = _as_int(hi.b)  # ((X - 1) // k) + 1 is ceil(X / k): (X + k - 1) // k
                ext = _fdiv(_add(hi.a.a, k - 1, dtype), k, dtype)
            else:
                ext = _add(_sub(hi, lo, dtype), 1, dtype)
            ext = _expr(ext, dtype)
            out.append(analyzer.simplify(ext) if analyzer is not None else ext)
        return out

    def _interval(self, root, dom: dict, dtype: str) -> tuple:
        """(min, max) of ``root`` over ``dom`` (Var -> (0, max)), bottom-up."""
        rng: dict[int, tuple] = {}
        for e in post_order(root):
            if isinstance(e, E.Var):
                if e not in dom:
                    raise ValueError(f"IndexMap {self}: {e.name} is not an initial index")
                rng[id(e)] = dom[e]
            elif isinstance(e, E.IntImm):
                rng[id(e)] = (int(e.value), int(e.value))
            elif isinstance(e, (E.Add, E.Sub)):
                (al, ah), (bl, bh) = rng[id(e.a)], rng[id(e.b)]
                rng[id(e)] = ((_add(al, bl, dtype), _add(ah, bh, dtype)) if isinstance(e, E.Add)
                              else (_sub(al, bh, dtype), _sub(ah, bl, dtype)))
            elif isinstance(e, E.Mul):
                a, b = (e.a, e.b) if _as_int(e.b) is not None else (e.b, e.a)
                k = _as_int(b)
                if k is None:
                    raise ValueError(f"IndexMap {self}: a product needs a constant factor, "
                                     f"got {_text(e)}")
                al, ah = rng[id(a)]
                lo, hi = _mul(al, k, dtype), _mul(ah, k, dtype)
                rng[id(e)] = (lo, hi) if k >= 0 else (hi, lo)
            elif isinstance(e, E.FloorDiv):
                k = _const_divisor(e.b, f"the divisor of {_text(e)}", self)
                al, ah = rng[id(e.a)]
                rng[id(e)] = (_fdiv(al, k, dtype), _fdiv(ah, k, dtype))
            elif isinstance(e, E.FloorMod):
                k = _const_divisor(e.b, f"the divisor of {_text(e)}", self)
                al, ah = rng[id(e.a)]
                il, ih = _as_int(al), _as_int(ah)
                if il is not None and ih is not None and 0 <= il and ih < k:
                    rng[id(e)] = (il, ih)
                else:
                    rng[id(e)] = (0, k - 1)
            else:
                raise ValueError(f"IndexMap {self}: cannot bound {type(e).__name__} in "
                                 f"{_text(root)}")
        return rng[id(root)]

    # ------------------------------------------------------------------ inverse
    def _terms(self, root, ext: dict, dtype: str) -> list:
        """``root`` as a sum of ``floormod(floordiv(v, lower), extent) * scale`` terms:
        (var, lower, extent, scale); an error for a non-affine or offset index."""
        terms: dict[int, list] = {}
        for e in post_order(root):
            if isinstance(e, E.Var):
                if e not in ext:
                    raise ValueError(f"IndexMap {self}: {e.name} is not an initial index")
                terms[id(e)] = [(e, 1, ext[e], 1)]
            elif isinstance(e, E.IntImm):
                terms[id(e)] = None  # a constant: only valid as a factor / divisor
            elif isinstance(e, E.Add):
                a, b = terms[id(e.a)], terms[id(e.b)]
                if a is None or b is None:
                    raise ValueError(f"IndexMap {self}: an offset ({_text(e)}) has no "
                                     "inverse here")
                terms[id(e)] = a + b
            elif isinstance(e, E.Mul):
                a, k = (e.a, _as_int(e.b)) if terms[id(e.b)] is None else (e.b, _as_int(e.a))
                if terms.get(id(a)) is None or k is None or k <= 0:
                    raise ValueError(f"IndexMap {self}: {_text(e)} is not invertible")
                terms[id(e)] = [(v, lo, ex, s * k) for v, lo, ex, s in terms[id(a)]]
            elif isinstance(e, (E.FloorDiv, E.FloorMod)):
                k = _const_divisor(e.b, f"the divisor of {_text(e)}", self)
                a = terms[id(e.a)]
                if a is None or len(a) != 1 or a[0][3] != 1:
                    raise ValueError(f"IndexMap {self}: {_text(e)} splits a fused or scaled "
                                     "index; its inverse is not supported")
                v, lo, ex, _ = a[0]
                if isinstance(e, E.FloorDiv):
                    terms[id(e)] = [(v, lo * k, _ceildiv(ex, k, dtype), 1)]
                else:
                    iex = _as_int(ex)
                    terms[id(e)] = [(v, lo, iex if iex is not None and iex <= k else k, 1)]
            else:
                raise ValueError(f"IndexMap {self}: {type(e).__name__} in {_text(root)} has "
                                 "no inverse here")
        out = terms[id(root)]
        if out is None:
            raise ValueError(f"IndexMap {self}: a constant final index has no inverse")
        return out

    def non_surjective_inverse(self, shape: Sequence, analyzer=None) -> tuple:
        """(the inverse IndexMap over the mapped shape, the predicate true on the padding: the
        output indices that no input index maps to)."""
        self._check_rank(shape, "dims")
        dtype = self.initial_indices[0].dtype if self.initial_indices else "int64"
        ext = {v: (_as_int(s) if _as_int(s) is not None else s)
               for v, s in zip(self.initial_indices, shape)}
        out_vars, digits = [], {v: [] for v in self.initial_indices}
        for k, x in enumerate(self.final_indices):
            y = E.Var(f"i{k}", dtype)
            out_vars.append(y)
            ts = sorted(self._terms(x, ext, dtype), key=lambda t: t[3])
            scale = 1
            for n, (v, lo, ex, s) in enumerate(ts):
                if s != scale:
                    raise ValueError(f"IndexMap {self}: final index {_text(x)} is not a dense "
                                     "fusion of its parts; its inverse is not supported")
                top = n == len(ts) - 1
                d = _fdiv(y, s, dtype)
                if not top:
                    iex = _as_int(ex)
                    if iex is None:
                        raise ValueError(f"IndexMap {self}: final index {_text(x)} fuses a "
                                         "part of symbolic extent below another part")
                    d = _fmod(d, iex, dtype)
                    scale = s * iex
                digits[v].append((lo, ex, d))
        inv, pads = [], []
        for v in self.initial_indices:
            parts = sorted(digits[v], key=lambda t: t[0])
            if not parts:
                raise ValueError(f"IndexMap {self}: initial index {v.name} is not used; the "
                                 "map has no inverse")
            lower, value = 1, 0
            for n, (lo, ex, d) in enumerate(parts):
                if lo != lower:
                    raise ValueError(f"IndexMap {self}: the parts of {v.name} overlap or leave "
                                     "a gap; the map has no inverse")
                value = _add(value, _mul(d, lo, dtype), dtype)
                if n < len(parts) - 1:
                    iex = _as_int(ex)
                    if iex is None:
                        raise ValueError(f"IndexMap {self}: a part of {v.name} below another "
                                         "has a symbolic extent")
                    lower = lo * iex
            top_lo, top_ex, _ = parts[-1]
            covered = _mul(top_ex, top_lo, dtype)
            exact = _as_int(covered) is not None and _as_int(ext[v]) is not None and \
                _as_int(covered) == _as_int(ext[v])
            if not exact and top_lo == 1 and top_ex is ext[v]:
                exact = True
            if not exact and analyzer is not None and _as_int(ext[v]) is None:
                exact = analyzer.can_prove_equal(_expr(covered, dtype), ext[v])
            if not exact:
                pads.append(E.GE(_expr(value, dtype), _expr(ext[v], dtype)))
            value = _expr(value, dtype)
            inv.append(analyzer.simplify(value) if analyzer is not None else value)
        pred: E.PrimExpr = E.IntImm("bool", 0)
        for p in pads:
            p = analyzer.simplify(p) if analyzer is not None else p
            pred = p if isinstance(pred, E.IntImm) else E.Or(pred, p)
        return IndexMap(out_vars, inv), pred

    def inverse(self, shape: Sequence, analyzer=None) -> IndexMap:
        """The inverse of a bijective map over ``shape`` (an error if the map pads)."""
        if self.inverse_index_map is not None:
            return self.inverse_index_map
        inv, pred = self.non_surjective_inverse(shape, analyzer)
        if not (isinstance(pred, E.IntImm) and not pred.value):
            raise ValueError(f"IndexMap {self} is not bijective over shape {list(shape)}: it "
                             "pads; use non_surjective_inverse")
        return inv

    def is_equivalent_to(self, other: IndexMap) -> bool:
        """Same rank and the same final indices once ``other``'s indices are renamed."""
        if not isinstance(other, IndexMap) or self.ndim != other.ndim or \
                len(self.final_indices) != len(other.final_indices):
            return False
        from ..ir.structural import structural_equal

        vmap = dict(zip(other.initial_indices, self.initial_indices))
        return all(structural_equal(a, substitute(b, vmap))
                   for a, b in zip(self.final_indices, other.final_indices))
