"""Scope hooks written as generators, run on one explicit stack.

A pass whose Function/Let/Match hook does something before, between or after visiting the
children (enter a scope, bind a variable, skip a primitive function) cannot let the worklist of
``expr_functor`` visit the children first. Written as a generator (``gen_function``, ``gen_let``,
``gen_match``) that ``yield``s a child and receives its visited result, the hook runs on the
driver's explicit stack instead of the Python stack, so closures and lets nested to any depth
never raise RecursionError. Dataflow nodes are visited as the base engine visits them: every
operand (in the hook's order) before the node's own hook. A class that keeps the base hook of
a scope kind gets the base behaviour as a generator too.
"""

from __future__ import annotations

from ..ir.op import Op
from .adt import Match
from .expr import Function, Let
from .expr_functor import (
    _DATAFLOW,
    ExprMutator,
    ExprVisitor,
    _method_name,
    dataflow_children,
)

__all__ = ["ScopedMutator", "ScopedVisitor"]

_MISSING = object()
_KINDS = ((Function, "function"), (Let, "let"), (Match, "match"))


class _ScopedDriver:
    """The driver shared by ScopedVisitor and ScopedMutator (mixed in before the base)."""

    _base: type = ExprVisitor
    _gen_table: dict | None = None

    @classmethod
    def _generators(cls) -> dict:
        """Scope class -> generator hook, for the kinds this class runs on the stack."""
        table = cls.__dict__.get("_gen_table")
        if table is not None:
            return table
        table = {}
        for kind, name in _KINDS:
            gen = getattr(cls, "gen_" + name, None)
            if gen is not None:
                table[kind] = gen
            elif getattr(cls, "visit_" + name) is getattr(cls._base, "visit_" + name) and (
                    kind is not Match or getattr(cls, "visit_clause", None)
                    is getattr(cls._base, "visit_clause", None)):
                table[kind] = getattr(cls, "base_gen_" + name)
        cls._gen_table = table
        return table

    def visit(self, expr):
        res = self.memo_map.get(expr, _MISSING)
        if res is not _MISSING:
            return res
        return self._drive(expr)

    def _drive(self, root):
        memo = self.memo_map
        gens = type(self)._generators()
        stack = [[root, None, None]]  # [node, running generator, child it waits for]
        while stack:
            frame = stack[-1]
            node, gen, child = frame
            if gen is None:
                if node in memo:
                    stack.pop()
                    continue
                t = type(node)
                make = gens.get(t)
                if make is None:
                    if t in _DATAFLOW:
                        pending = [c for c in dataflow_children(node)
                                   if type(c) is not Op and c not in memo]
                        if pending:
                            stack.extend([c, None, None] for c in reversed(pending))
                            continue
                    memo[node] = getattr(self, _method_name(t))(node)
                    stack.pop()
                    continue
                gen = frame[1] = make(self, node)
                send = None
            else:
                send = memo[child]
            while True:
                try:
                    c = gen.send(send)
                except StopIteration as stop:
                    memo[node] = stop.value
                    stack.pop()
                    break
                got = memo.get(c, _MISSING)
                if got is _MISSING:
                    frame[2] = c
                    stack.append([c, None, None])
                    break
                send = got
        return memo[root]


class ScopedVisitor(_ScopedDriver, ExprVisitor):
    """ExprVisitor whose scope hooks may be generators (``gen_function``/``gen_let``/...)."""

    _base = ExprVisitor

    def base_gen_function(self, fn):
        yield from fn.params
        yield fn.body

    def base_gen_let(self, let):
        node = let
        inner = []
        while True:
            yield node.var
            yield node.value
            body = node.body
            if type(body) is not Let or body in self.memo_map:
                break
            inner.append(body)
            node = body
        yield body
        for n in inner:
            self.memo_map[n] = None

    def base_gen_match(self, m):
        yield m.data
        for c in m.clauses:
            self.visit_pattern(c.lhs)
            yield c.rhs


class ScopedMutator(_ScopedDriver, ExprMutator):
    """ExprMutator whose scope hooks may be generators (``gen_function``/``gen_let``/...)."""

    _base = ExprMutator

    def base_gen_function(self, fn):
        params = []
        for p in fn.params:
            params.append((yield p))
        body = yield fn.body
        if body is fn.body and all(a is b for a, b in zip(params, fn.params, strict=True)):
            return fn
        return fn.with_fields(params=params, body=body)  # keeps its virtual device

    def base_gen_let(self, let):
        chain = [let]
        while type(chain[-1].body) is Let and chain[-1].body not in self.memo_map:
            chain.append(chain[-1].body)
        parts = []
        for n in chain:
            v = yield n.var
            parts.append((v, (yield n.value)))
        body = yield chain[-1].body
        for n, (v, value) in zip(reversed(chain), reversed(parts), strict=True):
            body = n if (v is n.var and value is n.value and body is n.body) else Let(
                v, value, body, n.span)
            self.memo_map[n] = body
        return body

    def base_gen_match(self, m):
        data = yield m.data
        clauses = []
        for c in m.clauses:
            lhs = self.visit_pattern(c.lhs)
            rhs = yield c.rhs
            clauses.append(c if (lhs is c.lhs and rhs is c.rhs) else type(c)(lhs, rhs))
        return m.with_fields(data, clauses)
