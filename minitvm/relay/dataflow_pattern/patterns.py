"""The pattern language of ``relay.dataflow_pattern``: DFPattern nodes and their constructors.

Patterns are small immutable objects compared by identity: the same pattern node used twice in
a pattern must match the same expression twice (``x = wildcard(); is_op("add")(x, x)``).
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import Type

__all__ = [
    "DFPattern", "ExprPattern", "VarPattern", "ConstantPattern", "WildcardPattern",
    "CallPattern", "FunctionPattern", "TuplePattern", "TupleGetItemPattern", "AltPattern",
    "TypePattern", "ShapePattern", "DataTypePattern", "AttrPattern", "DominatorPattern",
    "IfPattern", "LetPattern", "is_op", "is_expr", "is_var", "is_constant", "wildcard",
    "is_tuple", "is_tuple_get_item", "is_if", "is_let", "has_attr", "has_type", "has_shape",
    "has_dtype", "dominates",
]


class DFPattern:
    """Base of dataflow patterns: build calls with ``p(args)``, alternatives with ``|``."""

    __slots__ = ()

    def __call__(self, *args) -> CallPattern:
        """A call of this pattern; ``p(None)`` matches calls with any arguments."""
        return CallPattern(self, None if args == (None,) else list(args))

    def __or__(self, other) -> AltPattern:
        return AltPattern(self, other)

    def __add__(self, other) -> CallPattern:
        return is_op("add")(self, other)

    def __sub__(self, other) -> CallPattern:
        return is_op("subtract")(self, other)

    def __mul__(self, other) -> CallPattern:
        return is_op("multiply")(self, other)

    def __truediv__(self, other) -> CallPattern:
        return is_op("divide")(self, other)

    def has_attr(self, attrs: dict) -> AttrPattern:
        """Match this pattern with the given attribute values (op call, op or function attrs)."""
        return AttrPattern(self, attrs)

    def has_type(self, ttype: Type) -> TypePattern:
        return TypePattern(self, ttype)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        return DataTypePattern(self, dtype)

    def has_shape(self, shape) -> ShapePattern:
        return ShapePattern(self, shape)

    def match(self, expr) -> bool:
        """Whether this pattern matches ``expr``."""
        from .matcher import match

        return match(self, expr)

    def partition(self, expr, attrs: dict | None = None, check=None):
        """Partition every match of this pattern in ``expr`` into a function (see partition)."""
        from .partition import partition

        return partition(self, expr, attrs, check)

    def dominates(self, parent: DFPattern, path: DFPattern | None = None) -> DominatorPattern:
        """This pattern (the child) dominates ``parent`` through nodes matching ``path``."""
        return DominatorPattern(parent, wildcard() if path is None else path, self)

    def optional(self, option_constructor) -> AltPattern:
        """``self | option_constructor(self)``: the pattern with or without an applied op."""
        return self | option_constructor(self)

    def __repr__(self):
        return _pattern_repr(self)


def _pattern(x) -> DFPattern:
    """Lift an expression (or a pattern) into a pattern."""
    if isinstance(x, DFPattern):
        return x
    if x is None:
        return None
    from ...ir.expr import RelayExpr

    if isinstance(x, RelayExpr):
        return ExprPattern(x)
    raise TypeError(f"expected a DFPattern or a Relay expression, got {type(x).__name__}")


class ExprPattern(DFPattern):
    """Matches one expression (structurally); ``is_op(name)`` is an ExprPattern of the Op."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


class VarPattern(DFPattern):
    """Matches a Var, with the given name_hint unless it is empty."""

    __slots__ = ("name",)

    def __init__(self, name_hint: str = ""):
        self.name = name_hint or ""

    @property
    def name_hint(self) -> str:
        return self.name


class ConstantPattern(DFPattern):
    """Matches any Constant."""

    __slots__ = ()


class WildcardPattern(DFPattern):
    """Matches any expression."""

    __slots__ = ()


class CallPattern(DFPattern):
    """Matches a Call whose op and arguments match; ``args=None`` matches any arguments."""

    __slots__ = ("op", "args")

    def __init__(self, op, args):
        self.op = _pattern(op)
        self.args = None if args is None else [_pattern(a) for a in args]


class FunctionPattern(DFPattern):
    """Matches a Function whose params (None: any) and body match."""

    __slots__ = ("params", "body")

    def __init__(self, params, body):
        self.params = None if params is None else [_pattern(p) for p in params]
        self.body = _pattern(body)


class TuplePattern(DFPattern):
    """Matches a Tuple with matching fields (None: any fields)."""

    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = None if fields is None else [_pattern(f) for f in fields]


class TupleGetItemPattern(DFPattern):
    """Matches ``tuple.index``; index -1 (or None) matches any index."""

    __slots__ = ("tuple", "index")

    def __init__(self, tuple_value, index: int | None = None):
        self.tuple = _pattern(tuple_value)
        self.index = -1 if index is None else int(index)


class AltPattern(DFPattern):
    """Matches when either alternative matches (left first)."""

    __slots__ = ("left", "right")

    def __init__(self, left, right):
        self.left = _pattern(left)
        self.right = _pattern(right)


class TypePattern(DFPattern):
    """Matches ``pattern`` when the expression's type equals ``type``."""

    __slots__ = ("pattern", "type")

    def __init__(self, pattern, ttype: Type):
        self.pattern = _pattern(pattern)
        self.type = ttype


class ShapePattern(DFPattern):
    """Matches ``pattern`` when the expression is a tensor of this shape."""

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern, shape):
        self.pattern = _pattern(pattern)
        self.shape = tuple(int(s) if not hasattr(s, "value") else int(s.value) for s in shape)


class DataTypePattern(DFPattern):
    """Matches ``pattern`` when the expression is a tensor of this dtype."""

    __slots__ = ("pattern", "dtype")

    def __init__(self, pattern, dtype: str):
        self.pattern = _pattern(pattern)
        self.dtype = str(dtype)


class AttrPattern(DFPattern):
    """Matches ``pattern`` when the call/op/function attributes have the given values."""

    __slots__ = ("pattern", "attrs")

    def __init__(self, pattern, attrs: dict):
        if not isinstance(attrs, dict):
            raise TypeError(f"has_attr expects a dict of attribute values, got "
                            f"{type(attrs).__name__}")
        self.pattern = _pattern(pattern)
        self.attrs = dict(attrs)


class DominatorPattern(DFPattern):
    """``child`` whose inputs reach ``parent`` only through nodes matching ``path``, and whose
    dataflow region (parent, path nodes) is used by nothing outside it."""

    __slots__ = ("parent", "path", "child")

    def __init__(self, parent, path, child):
        self.parent = _pattern(parent)
        self.path = _pattern(path)
        self.child = _pattern(child)


class IfPattern(DFPattern):
    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond, true_branch, false_branch):
        self.cond = _pattern(cond)
        self.true_branch = _pattern(true_branch)
        self.false_branch = _pattern(false_branch)


class LetPattern(DFPattern):
    __slots__ = ("var", "value", "body")

    def __init__(self, var, value, body):
        self.var = _pattern(var)
        self.value = _pattern(value)
        self.body = _pattern(body)


# ------------------------------------------------------------------------------ constructors
def is_op(op_name: str) -> ExprPattern:
    """A pattern matching the registered operator ``op_name`` (call it to match its calls)."""
    return ExprPattern(Op.get(op_name))


def is_expr(expr) -> ExprPattern:
    """A pattern matching ``expr`` (structural equality)."""
    return ExprPattern(expr)


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    return ConstantPattern()


def wildcard() -> WildcardPattern:
    return WildcardPattern()


def is_tuple(fields) -> TuplePattern:
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond, true_branch, false_branch) -> IfPattern:
    return IfPattern(cond, true_branch, false_branch)


def is_let(var, value, body) -> LetPattern:
    return LetPattern(var, value, body)


def has_attr(attrs: dict, pattern: DFPattern | None = None) -> AttrPattern:
    return AttrPattern(wildcard() if pattern is None else pattern, attrs)


def has_type(ttype: Type, pattern: DFPattern | None = None) -> TypePattern:
    return TypePattern(wildcard() if pattern is None else pattern, ttype)


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    return DataTypePattern(wildcard() if pattern is None else pattern, dtype)


def has_shape(shape, pattern: DFPattern | None = None) -> ShapePattern:
    return ShapePattern(wildcard() if pattern is None else pattern, shape)


def dominates(parent: DFPattern, path: DFPattern, child: DFPattern) -> DominatorPattern:
    return DominatorPattern(parent, path, child)


# ------------------------------------------------------------------------------ printing
def _pattern_repr(p) -> str:
    """A short text form of a pattern (iterative over the pattern's nodes)."""
    names = {}
    out = []
    stack = [(p, False)]
    while stack:
        node, done = stack.pop()
        if node is None:
            continue
        if not done:
            if id(node) in names:
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(_children(node)))
            continue
        if id(node) in names:
            continue
        names[id(node)] = _describe(node, names)
        out.append(names[id(node)])
    return names.get(id(p), "?")


def _children(p) -> list:
    if isinstance(p, CallPattern):
        return [p.op] + list(p.args or [])
    if isinstance(p, FunctionPattern):
        return list(p.params or []) + [p.body]
    if isinstance(p, TuplePattern):
        return list(p.fields or [])
    if isinstance(p, TupleGetItemPattern):
        return [p.tuple]
    if isinstance(p, AltPattern):
        return [p.left, p.right]
    if isinstance(p, TypePattern | ShapePattern | DataTypePattern | AttrPattern):
        return [p.pattern]
    if isinstance(p, DominatorPattern):
        return [p.parent, p.path, p.child]
    if isinstance(p, IfPattern):
        return [p.cond, p.true_branch, p.false_branch]
    if isinstance(p, LetPattern):
        return [p.var, p.value, p.body]
    return []


def _describe(p, names) -> str:
    n = lambda c: names.get(id(c), "?")  # noqa: E731
    if isinstance(p, ExprPattern):
        return f"is_op({p.expr.name!r})" if isinstance(p.expr, Op) else "is_expr(...)"
    if isinstance(p, VarPattern):
        return f"is_var({p.name!r})" if p.name else "is_var()"
    if isinstance(p, ConstantPattern):
        return "is_constant()"
    if isinstance(p, WildcardPattern):
        return "wildcard()"
    if isinstance(p, CallPattern):
        args = "*" if p.args is None else ", ".join(n(a) for a in p.args)
        return f"{n(p.op)}({args})"
    if isinstance(p, FunctionPattern):
        params = "*" if p.params is None else ", ".join(n(a) for a in p.params)
        return f"FunctionPattern([{params}], {n(p.body)})"
    if isinstance(p, TuplePattern):
        return "is_tuple(" + ("*" if p.fields is None else ", ".join(n(f) for f in p.fields)) + ")"
    if isinstance(p, TupleGetItemPattern):
        return f"is_tuple_get_item({n(p.tuple)}, {p.index})"
    if isinstance(p, AltPattern):
        return f"({n(p.left)} | {n(p.right)})"
    if isinstance(p, TypePattern):
        return f"{n(p.pattern)}.has_type({p.type})"
    if isinstance(p, ShapePattern):
        return f"{n(p.pattern)}.has_shape({list(p.shape)})"
    if isinstance(p, DataTypePattern):
        return f"{n(p.pattern)}.has_dtype({p.dtype!r})"
    if isinstance(p, AttrPattern):
        return f"{n(p.pattern)}.has_attr({p.attrs!r})"
    if isinstance(p, DominatorPattern):
        return f"dominates({n(p.parent)}, {n(p.path)}, {n(p.child)})"
    if isinstance(p, IfPattern):
        return f"is_if({n(p.cond)}, {n(p.true_branch)}, {n(p.false_branch)})"
    if isinstance(p, LetPattern):
        return f"is_let({n(p.var)}, {n(p.value)}, {n(p.body)})"
    return type(p).__name__

