"""Algebraic data types: TypeData definitions, Constructors, Match with patterns."""

from __future__ import annotations

from ..ir.node import Node
from ..ir.type import Type
from .expr import ExprWithOp


class Constructor(ExprWithOp):
    """A constructor of an ADT; calling it builds a value (``Cons(x, Nil())``)."""

    __slots__ = ("name_hint", "inputs", "belong_to", "tag")
    _node_compare = "name"

    def __init__(self, name_hint: str, inputs, belong_to, span=None):
        super().__init__(span)
        self.name_hint = name_hint
        self.inputs = tuple(inputs)
        self.belong_to = belong_to
        self.tag = -1

    def __call__(self, *args):
        from .expr import Call

        return Call(self, list(args))


class TypeData(Type):
    """``type List[A] { Cons(A, List[A]), Nil }``: an ADT definition."""

    __slots__ = ("header", "type_vars", "constructors")
    _node_binders = frozenset({"type_vars"})  # A in List[A] is bound by the definition

    def __init__(self, header, type_vars, constructors, span=None):
        self.header = header
        self.type_vars = tuple(type_vars)
        self.constructors = tuple(constructors)
        self.span = span
        for i, c in enumerate(self.constructors):
            c.tag = i

    def _key(self):
        return (id(self),)


class Pattern(Node):
    __slots__ = ("span",)


class PatternWildcard(Pattern):
    __slots__ = ()

    def __init__(self, span=None):
        self.span = span


class PatternVar(Pattern):
    __slots__ = ("var",)
    _node_binders = frozenset({"var"})

    def __init__(self, var, span=None):
        self.var = var
        self.span = span


class PatternConstructor(Pattern):
    __slots__ = ("constructor", "patterns")

    def __init__(self, constructor, patterns=None, span=None):
        self.constructor = constructor
        self.patterns = tuple(patterns or ())
        self.span = span


class PatternTuple(Pattern):
    __slots__ = ("patterns",)

    def __init__(self, patterns=None, span=None):
        self.patterns = tuple(patterns or ())
        self.span = span


class Clause(Node):
    __slots__ = ("lhs", "rhs")
    _node_operands = ("rhs",)
    _node_fields = ("lhs", "rhs")

    def __init__(self, lhs: Pattern, rhs):
        self.lhs = lhs
        self.rhs = rhs


class Match(ExprWithOp):
    """``match (data) { pattern => rhs, ... }``; ``complete=False`` prints as ``match?``."""

    __slots__ = ("data", "clauses", "complete")
    _node_operands = ("data", "*clauses")

    def __init__(self, data, clauses, complete: bool = True, span=None):
        super().__init__(span)
        self.data = data
        self.clauses = tuple(clauses)
        self.complete = complete

    def with_fields(self, data=None, clauses=None, complete=None, span=None):
        d = self.data if data is None else data
        c = self.clauses if clauses is None else tuple(clauses)
        comp = self.complete if complete is None else complete
        if d is self.data and len(c) == len(self.clauses) and all(
            a is b for a, b in zip(c, self.clauses)
        ) and comp == self.complete:
            return self
        return Match(d, c, comp, self.span)


def pattern_vars(pattern: Pattern) -> list:
    """The variables a pattern binds, left to right."""
    out, stack = [], [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            out.append(p.var)
        elif isinstance(p, PatternConstructor | PatternTuple):
            stack.extend(reversed(p.patterns))
    return out
