"""Variable analyses: free, bound and all variables of an expression, in TVM's order.

TVM lists variables in the order a left-to-right depth-first walk first meets them (a call's
operator before its arguments, a function's parameters before its body, a let's variable before
its value); ``relay.Function(free_vars(e), e)`` then has the parameter order TVM gives it.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import (
    FuncType,
    GlobalTypeVar,
    PointerType,
    RelayRefType,
    TupleType,
    Type,
    TypeCall,
    TypeRelation,
    TypeVar,
)
from ..adt import Constructor, Match, TypeData, pattern_vars
from ..expr import (
    Call,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)

_BIND = object()  # a stack marker: the item under it is a list of variables to mark bound


class _VarCollector:
    """Records variables in first-occurrence order: ``all`` (used or bound), ``bound``,
    ``used``. Iterative, so any depth of program is fine."""

    def __init__(self):
        self.bound: dict = {}
        self.used: dict = {}
        self.all: dict = {}

    def _mark_bound(self, vs):
        for v in vs:
            self.bound.setdefault(v, None)
            self.all.setdefault(v, None)

    def run(self, expr) -> None:
        seen: set[int] = set()
        stack: list = [expr]
        while stack:
            e = stack.pop()
            if e is _BIND:
                self._mark_bound(stack.pop())
                continue
            if id(e) in seen:
                continue
            seen.add(id(e))
            if type(e) is Call:  # the common node, inline; an operator holds no variables
                stack.extend(reversed(e.args))
                if type(e.op) is not Op:
                    stack.append(e.op)
                continue
            if isinstance(e, Var):
                self.used.setdefault(e, None)
                self.all.setdefault(e, None)
                continue
            children = self._children(e)
            stack.extend(reversed(children))

    def _children(self, e) -> list:
        t = type(e)
        if t is Call:
            return [e.op, *e.args]
        if t is Tuple:
            return list(e.fields)
        if t is TupleGetItem:
            return [e.tuple_value]
        if t is Function:
            self._mark_bound(e.params)
            return [e.body]
        if t is Let:
            self._mark_bound([e.var])
            return [e.value, e.body]
        if t is If:
            return [e.cond, e.true_branch, e.false_branch]
        if t is RefCreate:
            return [e.value]
        if t is RefRead:
            return [e.ref]
        if t is RefWrite:
            return [e.ref, e.value]
        if t is Match:
            out = [e.data]
            for c in e.clauses:
                # the clause's pattern variables are bound when the walk reaches the clause
                out.extend([_BIND, pattern_vars(c.lhs), c.rhs])
            return out
        return []


def _collect(expr) -> _VarCollector:
    c = _VarCollector()
    c.run(expr)
    return c


def free_vars(expr) -> list:
    """Variables used in ``expr`` but not bound in it, in post-DFS order."""
    c = _collect(expr)
    return [v for v in c.used if v not in c.bound]


def bound_vars(expr) -> list:
    """Variables bound in ``expr`` (function params, let vars, pattern vars)."""
    return list(_collect(expr).bound)


def all_vars(expr) -> list:
    """Every variable bound or used in ``expr``, in first-occurrence order."""
    return list(_collect(expr).all)


class _TypeVarCollector:
    """TVM's type-variable walk: records every type variable met (``all``) and those a function,
    a function type or a constructor's ADT binds (``bound``), in first-occurrence order.

    The order is TVM's: a call's operator and arguments before its type arguments, a function's
    type parameters before its parameters' annotations and body (not its return type), a let's
    variable before its value; match patterns are not read. Explicit stacks, any depth."""

    def __init__(self, mod):
        self.mod = mod
        self.all: dict = {}
        self.bound: dict = {}
        self.seen: set[int] = set()

    def _bind(self, tvs) -> None:
        for tv in tvs:
            self.all.setdefault(tv, None)
            self.bound.setdefault(tv, None)

    def _adt_vars(self, ctor) -> tuple:
        tds = getattr(self.mod, "type_definitions", None) or {}
        td = tds.get(ctor.belong_to)
        if td is None:
            raise ValueError(f"type variables of constructor {ctor.name_hint!r}: its ADT "
                             f"{getattr(ctor.belong_to, 'name_hint', ctor.belong_to)!r} is not "
                             "in the module; pass the module that defines it as `mod`")
        return td.type_vars

    def run(self, root) -> None:
        stack: list = [root]
        seen = self.seen
        while stack:
            item = stack.pop()
            if isinstance(item, Type):
                if id(item) in seen:
                    continue
                seen.add(id(item))
                stack.extend(reversed(self._type_children(item)))
                continue
            if isinstance(item, _TypeArgs):  # a call's type arguments, after its operands
                stack.extend(reversed(item.types))
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(reversed(self._expr_children(item)))

    def _type_children(self, t) -> list:
        if isinstance(t, TypeVar):
            if not isinstance(t, GlobalTypeVar):
                self.all.setdefault(t, None)
            return []
        if isinstance(t, FuncType):
            self._bind(t.type_params)
            return [*t.type_params, *t.type_constraints, *t.arg_types, t.ret_type]
        if isinstance(t, TupleType):
            return list(t.fields)
        if isinstance(t, TypeCall):
            return [t.func, *t.args]
        if isinstance(t, RelayRefType):
            return [t.value]
        if isinstance(t, TypeRelation):
            return list(t.args)
        if isinstance(t, TypeData):
            return [t.header, *t.type_vars, *(i for c in t.constructors for i in c.inputs)]
        if isinstance(t, PointerType):
            return [t.element_type]
        return []

    def _expr_children(self, e) -> list:
        t = type(e)
        if t is Var:
            return [] if e.type_annotation is None else [e.type_annotation]
        if t is Call:
            out = [e.op, *e.args]
            if e.type_args:
                out.append(_TypeArgs(e.type_args))
            return out
        if t is Tuple:
            return list(e.fields)
        if t is TupleGetItem:
            return [e.tuple_value]
        if t is Function:
            self._bind(e.type_params)
            return [*e.params, e.body]
        if t is Let:
            return [e.var, e.value, e.body]
        if t is If:
            return [e.cond, e.true_branch, e.false_branch]
        if t is RefCreate:
            return [e.value]
        if t is RefRead:
            return [e.ref]
        if t is RefWrite:
            return [e.ref, e.value]
        if t is Match:
            return [e.data, *(c.rhs for c in e.clauses)]
        if t is Constructor:
            self._bind(self._adt_vars(e))
            return [*e.inputs, e.belong_to]
        return []


class _TypeArgs:
    """A stack marker: the type arguments of a call, visited once its operands are."""

    __slots__ = ("types",)

    def __init__(self, types):
        self.types = list(types)


def _type_vars(expr, mod) -> _TypeVarCollector:
    if expr is None:
        raise ValueError("type variables of None: pass a Relay expression or type")
    c = _TypeVarCollector(mod)
    c.run(expr)
    return c


def free_type_vars(expr, mod=None) -> list:
    """Type variables used in ``expr`` (an expression or a type) and not bound in it, in the
    order TVM's walk first meets them; ``mod`` gives the ADTs of constructors."""
    c = _type_vars(expr, mod)
    return [t for t in c.all if t not in c.bound]


def bound_type_vars(expr, mod=None) -> list:
    """Type variables bound in ``expr`` (function and function-type type parameters, the type
    variables of the ADTs its constructors belong to), in first-occurrence order."""
    return list(_type_vars(expr, mod).bound)


def all_type_vars(expr, mod=None) -> list:
    """Every type variable of ``expr``, bound or free, in first-occurrence order."""
    return list(_type_vars(expr, mod).all)
