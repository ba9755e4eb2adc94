"""DFPatternMatcher: does a pattern match an expression (TVM's matching rules).

The matcher walks the pattern (small) alongside the expression; walking the expression itself
(dominator paths, graphs) uses explicit stacks. Each pattern node is memoized to the expression
it matched, so a pattern node reused in a pattern must match the same expression each time;
failed alternatives roll the memo back. ``add`` and ``multiply`` calls also match with their
arguments swapped.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs, DictAttrs
from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.prim_expr import FloatImm, IntImm
from ...ir.structural import structural_equal
from ...ir.type import TensorType
from ..adt import Match
from ..expr import Call, Constant, Function, If, Let, Tuple, TupleGetItem, Var
from .patterns import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)

__all__ = ["DFPatternMatcher", "match", "expr_children", "post_order_all", "consumer_map"]

_COMMUTATIVE = frozenset({"add", "multiply"})


def expr_children(e) -> tuple:
    """Every sub-expression of ``e`` a graph walk visits (Ops of calls are left out)."""
    t = type(e)
    if t is Call:
        return e.args if isinstance(e.op, Op | GlobalVar) else (e.op, *e.args)
    if t is Tuple:
        return e.fields
    if t is TupleGetItem:
        return (e.tuple_value,)
    if t is Let:
        return (e.var, e.value, e.body)
    if t is If:
        return (e.cond, e.true_branch, e.false_branch)
    if t is Function:
        return (*e.params, e.body)
    if t is Match:
        return (e.data, *[c.rhs for c in e.clauses])
    if isinstance(e, Var | Constant | Op | GlobalVar):
        return ()
    ops = getattr(e, "_node_operands", ())
    return tuple(getattr(e, n.lstrip("*")) for n in ops if not n.startswith("*"))


def post_order_all(root) -> list:
    """All sub-expressions of ``root`` (into function, let and if bodies), operands first."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        e, ready = stack.pop()
        if ready:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        for c in reversed(expr_children(e)):
            if id(c) not in seen:
                stack.append((c, False))
    return order


def consumer_map(order) -> dict[int, list]:
    """id(expr) -> the expressions that use it, for the nodes of a post order."""
    users: dict[int, list] = {}
    for e in order:
        for c in expr_children(e):
            users.setdefault(id(c), []).append(e)
    return users


def _value_equal(actual, expected) -> bool:
    """Compare an attribute value with the value a pattern asks for."""
    if isinstance(actual, IntImm | FloatImm):
        actual = actual.value
    if isinstance(expected, IntImm | FloatImm):
        expected = expected.value
    if isinstance(expected, list | tuple):
        if not isinstance(actual, list | tuple | np.ndarray) or len(actual) != len(expected):
            return False
        return all(_value_equal(a, b) for a, b in zip(actual, expected))
    if isinstance(expected, str) or isinstance(actual, str):
        return str(actual) == str(expected)
    if isinstance(expected, bool | int | float) and isinstance(actual, bool | int | float
                                                                  | np.number):
        return actual == expected
    if actual is expected:
        return True
    try:
        return structural_equal(actual, expected)
    except Exception:  # values of unrelated kinds
        return bool(actual == expected)


def _attr_lookup(attrs, key):
    """(found, value) of ``key`` in call attrs or a function's DictAttrs."""
    if attrs is None:
        return False, None
    if isinstance(attrs, DictAttrs):
        if key in attrs:
            return True, attrs[key]
        return False, None
    if isinstance(attrs, Attrs):
        values = object.__getattribute__(attrs, "_values")
        if key in values:
            return True, values[key]
    return False, None


def _checked_type(e):
    t = e._checked_type
    if t is None:
        from ..transform.infer_type import InferTypeLocal

        try:
            t = InferTypeLocal(e)
        except Exception:  # an ill-typed or open expression: no type to match against
            return None
    return t


class DFPatternMatcher:
    """Match patterns against expressions; ``memo`` maps each matched pattern to its exprs."""

    def __init__(self, root=None):
        self.root = root
        self.memo: dict[DFPattern, list] = {}
        self._log: list[DFPattern] = []
        self.memoize = True
        self._users = None
        self._users_nodes: set = set()

    # ------------------------------------------------------------------ driver
    def match(self, pattern: DFPattern, expr) -> bool:
        self.memo = {}
        self._log = []
        self.memoize = True
        return self.visit(pattern, expr)

    def _rollback(self, mark: int) -> None:
        while len(self._log) > mark:
            p = self._log.pop()
            lst = self.memo[p]
            lst.pop()
            if not lst:
                del self.memo[p]

    def visit(self, p: DFPattern, e) -> bool:
        if self.memoize and p in self.memo:
            return self.memo[p][0] is e
        mark = len(self._log)
        method = _DISPATCH.get(type(p))
        if method is None:
            raise TypeError(f"{type(p).__name__} is not a dataflow pattern")
        ok = method(self, p, e)
        if ok:
            self.memo.setdefault(p, []).append(e)
            self._log.append(p)
        else:
            self._rollback(mark)
        return ok

    # ------------------------------------------------------------------ rules
    def _expr(self, p: ExprPattern, e) -> bool:
        if p.expr is e:
            return True
        if isinstance(p.expr, Op) or isinstance(e, Op):
            return False
        return structural_equal(p.expr, e)

    def _var(self, p: VarPattern, e) -> bool:
        return isinstance(e, Var) and (not p.name or p.name == e.name_hint)

    def _constant(self, p, e) -> bool:
        return isinstance(e, Constant)

    def _wildcard(self, p, e) -> bool:
        return True

    def _args(self, pats, args) -> bool:
        if pats is None:
            return True
        if len(pats) != len(args):
            return False
        mark = len(self._log)
        for pa, a in zip(pats, args):
            if not self.visit(pa, a):
                self._rollback(mark)
                return False
        return True

    def _call(self, p: CallPattern, e) -> bool:
        if not isinstance(e, Call):
            return False
        if not self.visit(p.op, e.op):
            return False
        if self._args(p.args, e.args):
            return True
        if (p.args is not None and len(p.args) == 2 and isinstance(e.op, Op)
                and e.op.name in _COMMUTATIVE):
            return self._args(p.args[::-1], e.args)
        return False

    def _function(self, p: FunctionPattern, e) -> bool:
        if not isinstance(e, Function):
            return False
        return self._args(p.params, e.params) and self.visit(p.body, e.body)

    def _tuple(self, p: TuplePattern, e) -> bool:
        return isinstance(e, Tuple) and self._args(p.fields, e.fields)

    def _tuple_get_item(self, p: TupleGetItemPattern, e) -> bool:
        return (isinstance(e, TupleGetItem) and (p.index == -1 or p.index == e.index)
                and self.visit(p.tuple, e.tuple_value))

    def _alt(self, p: AltPattern, e) -> bool:
        return self.visit(p.left, e) or self.visit(p.right, e)

    def _type(self, p: TypePattern, e) -> bool:
        if not self.visit(p.pattern, e):
            return False
        t = _checked_type(e)
        return t is not None and structural_equal(t, p.type)

    def _shape(self, p: ShapePattern, e) -> bool:
        if not self.visit(p.pattern, e):
            return False
        t = _checked_type(e)
        if not isinstance(t, TensorType) or len(t.shape) != len(p.shape):
            return False
        return all(_value_equal(a, b) for a, b in zip(t.shape, p.shape))

    def _dtype(self, p: DataTypePattern, e) -> bool:
        if not self.visit(p.pattern, e):
            return False
        t = _checked_type(e)
        return isinstance(t, TensorType) and str(t.dtype) == p.dtype

    def _attr(self, p: AttrPattern, e) -> bool:
        if not self.visit(p.pattern, e):
            return False
        for key, want in p.attrs.items():
            if isinstance(e, Op):
                if not e.has_attr(key):
                    return False
                found, have = True, e.get_attr(key)
            elif isinstance(e, Call):
                found, have = _attr_lookup(e.attrs, key)
            elif isinstance(e, Function):
                found, have = _attr_lookup(e.attrs, key)
            else:
                return False
            if not found or not _value_equal(have, want):
                return False
        return True

    def _if(self, p: IfPattern, e) -> bool:
        return (isinstance(e, If) and self.visit(p.cond, e.cond)
                and self.visit(p.true_branch, e.true_branch)
                and self.visit(p.false_branch, e.false_branch))

    def _let(self, p: LetPattern, e) -> bool:
        return (isinstance(e, Let) and self.visit(p.var, e.var) and self.visit(p.value, e.value)
                and self.visit(p.body, e.body))

    def _dominator(self, p: DominatorPattern, e) -> bool:
        """``child`` matches ``e``; every input chain from ``e`` reaches ``parent`` (one
        expression) through ``path`` nodes, and nothing outside that region uses them."""
        if not self.visit(p.child, e):
            return False
        region = {id(e)}
        inner, parent = [], None
        stack, seen = [e], {id(e)}
        while stack:
            node = stack.pop()
            for inp in expr_children(node):
                if id(inp) in seen:
                    continue
                seen.add(id(inp))
                if self.visit(p.parent, inp):
                    parent = inp
                    continue
                was = self.memoize
                self.memoize = False
                try:
                    on_path = self.visit(p.path, inp)
                finally:
                    self.memoize = was
                if not on_path:
                    return False
                region.add(id(inp))
                inner.append(inp)
                stack.append(inp)
        if parent is None:
            return False
        users = self._consumers(e)
        for n in [parent, *inner]:
            for u in users.get(id(n), ()):
                if id(u) not in region:
                    return False
        return True

    def _consumers(self, e) -> dict:
        if self._users is None or id(e) not in self._users_nodes:
            order = post_order_all(self.root if self.root is not None else e)
            self._users_nodes = {id(x) for x in order}
            if id(e) not in self._users_nodes:
                order = post_order_all(e)
                self._users_nodes = {id(x) for x in order}
            self._users = consumer_map(order)
        return self._users


_DISPATCH = {
    ExprPattern: DFPatternMatcher._expr, VarPattern: DFPatternMatcher._var,
    ConstantPattern: DFPatternMatcher._constant, WildcardPattern: DFPatternMatcher._wildcard,
    CallPattern: DFPatternMatcher._call, FunctionPattern: DFPatternMatcher._function,
    TuplePattern: DFPatternMatcher._tuple, TupleGetItemPattern: DFPatternMatcher._tuple_get_item,
    AltPattern: DFPatternMatcher._alt, TypePattern: DFPatternMatcher._type,
    ShapePattern: DFPatternMatcher._shape, DataTypePattern: DFPatternMatcher._dtype,
    AttrPattern: DFPatternMatcher._attr, DominatorPattern: DFPatternMatcher._dominator,
    IfPattern: DFPatternMatcher._if, LetPattern: DFPatternMatcher._let,
}


def match(pattern: DFPattern, expr) -> bool:
    """Whether ``pattern`` matches ``expr``."""
    if not isinstance(pattern, DFPattern):
        raise TypeError(f"match expects a DFPattern, got {type(pattern).__name__}")
    return DFPatternMatcher(expr).match(pattern, expr)
