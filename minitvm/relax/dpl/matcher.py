"""The Relax dataflow pattern matcher: does an expression match a pattern, and what did each
sub-pattern match.

With ``var2val`` (variable -> bound value), a variable is looked through to its value wherever
the pattern asks for a structure (a call, tuple, tuple item, constant), which is how a pattern
spans several bindings of a dataflow block. A pattern node used twice must match the same
expression. ``relax.add`` and ``relax.multiply`` also match with their operands swapped.
The matcher recurses on the pattern only (patterns are small); the program is never walked.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.prim_expr import IntImm
from ...ir.structural import structural_equal
from ..expr import Call, Constant, DataflowVar, Function, Tuple, TupleGetItem, Var
from ..struct_info import TensorStructInfo
from . import pattern as P

__all__ = ["match_expr"]

_COMMUTATIVE = ("relax.add", "relax.multiply")


class _Matcher:
    def __init__(self, var2val):
        self.var2val = var2val or {}
        self.memo: dict = {}

    def unwrap(self, e):
        """``e``, or the value a chain of bound variables leads to."""
        seen = 0
        while isinstance(e, Var) and e in self.var2val and seen < 1_000_000:
            e = self.var2val[e]
            seen += 1
        return e

    def match(self, p, e) -> bool:
        prev = self.memo.get(p)
        if prev is not None:
            return prev is e or prev is self.unwrap(e)
        method = _DISPATCH.get(type(p))
        if method is None:
            raise TypeError(f"unknown pattern {type(p).__name__}")
        got = method(self, p, e)
        if got is None or got is False:
            return False
        self.memo[p] = e if got is True else got
        return True

    # each returns False, True (matched e itself) or the expression matched
    def wildcard(self, p, e):
        return True

    def expr(self, p, e):
        if p.expr is e:
            return True
        v = self.unwrap(e)
        if p.expr is v:
            return v
        if isinstance(p.expr, Op | GlobalVar) or isinstance(v, Op):
            return False
        return v if structural_equal(p.expr, v) else False

    def var(self, p, e):
        if not isinstance(e, Var):
            return False
        if isinstance(p, P.DataflowVarPattern) and not isinstance(e, DataflowVar):
            return False
        return not p.name or e.name_hint == p.name

    def global_var(self, p, e):
        return isinstance(e, GlobalVar) and (not p.name or e.name_hint == p.name)

    def constant(self, p, e):
        v = self.unwrap(e)
        return v if isinstance(v, Constant) else False

    def call(self, p, e):
        c = self.unwrap(e)
        if not isinstance(c, Call):
            return False
        saved = dict(self.memo)
        if self._call_args(p, c, list(c.args)):
            return c
        self.memo = saved
        if (isinstance(c.op, Op) and c.op.name in _COMMUTATIVE and len(c.args) == 2
                and p.args is not None and len(p.args) == 2):
            if self._call_args(p, c, [c.args[1], c.args[0]]):
                return c
            self.memo = saved
        return False

    def _call_args(self, p, c, args) -> bool:
        if not self.match(p.op, c.op):
            return False
        if p.args is None:
            return True
        if len(args) != len(p.args) and not (p.varg_default_wildcard
                                             and len(args) >= len(p.args)):
            return False
        return all(self.match(pa, a) for pa, a in zip(p.args, args))

    def tuple(self, p, e):
        t = self.unwrap(e)
        if not isinstance(t, Tuple) or len(t.fields) != len(p.fields):
            return False
        return t if all(self.match(pf, f) for pf, f in zip(p.fields, t.fields)) else False

    def tuple_get_item(self, p, e):
        g = self.unwrap(e)
        if not isinstance(g, TupleGetItem) or (p.index != -1 and g.index != p.index):
            return False
        return g if self.match(p.tuple, g.tuple_value) else False

    def or_(self, p, e):
        saved = dict(self.memo)
        if self.match(p.left, e):
            return True
        self.memo = saved
        return self.match(p.right, e)

    def and_(self, p, e):
        return self.match(p.left, e) and self.match(p.right, e)

    def not_(self, p, e):
        saved = dict(self.memo)
        hit = self.match(p.reject, e)
        self.memo = saved
        return not hit

    def dtype(self, p, e):
        if not self.match(p.pattern, e):
            return False
        s = _sinfo(e)
        return isinstance(s, TensorStructInfo) and s.dtype == p.dtype

    def shape(self, p, e):
        if not self.match(p.pattern, e):
            return False
        s = _sinfo(e)
        dims = s.shape.values if isinstance(s, TensorStructInfo) and s.shape is not None \
            and hasattr(s.shape, "values") else None
        if dims is None or len(dims) != len(p.shape):
            return False
        return all(_dim_equal(d, w) for d, w in zip(dims, p.shape))

    def attr(self, p, e):
        if not self.match(p.pattern, e):
            return False
        v = self.unwrap(e)
        attrs = v.attrs if isinstance(v, Call | Function) else None
        if attrs is None:
            return False
        for key, want in p.attrs.items():
            have = attrs.get(key) if isinstance(v, Function) else getattr(attrs, key, None)
            if not _value_equal(have, want):
                return False
        return True


def _sinfo(e):
    return getattr(e, "_struct_info", None)


def _dim_equal(d, want) -> bool:
    if isinstance(want, int):
        return isinstance(d, IntImm) and d.value == want
    return structural_equal(d, want)


def _value_equal(have, want) -> bool:
    if have is None:
        return False
    have = getattr(have, "value", have)
    if isinstance(have, list | tuple) and isinstance(want, list | tuple):
        return len(have) == len(want) and all(_value_equal(a, b) for a, b in zip(have, want))
    return have == want or str(have) == str(want)


_DISPATCH = {
    P.WildcardPattern: _Matcher.wildcard, P.ExprPattern: _Matcher.expr,
    P.VarPattern: _Matcher.var, P.DataflowVarPattern: _Matcher.var,
    P.GlobalVarPattern: _Matcher.global_var, P.ConstantPattern: _Matcher.constant,
    P.CallPattern: _Matcher.call, P.TuplePattern: _Matcher.tuple,
    P.TupleGetItemPattern: _Matcher.tuple_get_item, P.OrPattern: _Matcher.or_,
    P.AndPattern: _Matcher.and_, P.NotPattern: _Matcher.not_,
    P.DataTypePattern: _Matcher.dtype, P.ShapePattern: _Matcher.shape,
    P.AttrPattern: _Matcher.attr,
}


def match_expr(pattern, expr, var2val: dict | None = None) -> dict | None:
    """Pattern -> matched expression for ``pattern`` and its sub-patterns, or None."""
    m = _Matcher(var2val)
    if not m.match(pattern, expr):
        return None
    return m.memo
