"""Well-formedness: every variable bound once, used only inside its scope, and (in a module)
every free variable, GlobalVar and constructor accounted for.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ..adt import Constructor, Match, pattern_vars
from ..expr import Function, Let, Var
from ..expr_functor import dataflow_children

__all__ = ["well_formed", "check_well_formed"]


class _Checker:
    def __init__(self, mod=None, allow_free_vars: bool = True, where: str = ""):
        self.mod = mod
        self.allow_free_vars = allow_free_vars
        self.prefix = f"{where}: " if where else ""
        self.problems: list[str] = []
        self.in_scope: dict = {}  # var -> number of enclosing binders (a var may be bound twice)
        self.ever_bound: set = set()
        self.free: set = set()
        self.seen: set = set()
        self.reported: set = set()

    def report(self, key, msg: str) -> None:
        if key not in self.reported:
            self.reported.add(key)
            self.problems.append(self.prefix + msg)

    def bind(self, v: Var) -> None:
        if v in self.ever_bound or v in self.free:
            self.report(("twice", v), f"variable %{v.name_hint} is bound more than once")
        self.in_scope[v] = self.in_scope.get(v, 0) + 1
        self.ever_bound.add(v)

    def unbind(self, vs) -> None:
        for v in vs:
            n = self.in_scope[v] - 1
            if n:
                self.in_scope[v] = n
            else:
                del self.in_scope[v]

    def use(self, v: Var) -> None:
        if v in self.in_scope:
            return
        if v in self.ever_bound:
            self.report(("scope", v), f"variable %{v.name_hint} is used outside the scope "
                                      "that binds it")
        else:
            self.free.add(v)
            if not self.allow_free_vars:
                self.report(("free", v), f"variable %{v.name_hint} is free (unbound)")

    def run(self, root) -> None:
        stack = [(0, root)]
        while stack:
            kind, node = stack.pop()
            if kind == 1:  # leave a scope
                self.unbind(node)
                continue
            if kind == 2:  # enter a match clause
                vs = pattern_vars(node.lhs)
                for v in vs:
                    self.bind(v)
                stack.append((1, vs))
                stack.append((0, node.rhs))
                continue
            t = type(node)
            if t is Var:
                self.use(node)
                continue
            if node in self.seen:
                continue
            self.seen.add(node)
            if t is Let:
                self.bind(node.var)
                stack.append((1, (node.var,)))
                stack.append((0, node.body))
                stack.append((0, node.value))
            elif t is Function:
                for p in node.params:
                    self.bind(p)
                stack.append((1, node.params))
                stack.append((0, node.body))
            elif t is Match:
                for c in reversed(node.clauses):
                    stack.append((2, c))
                stack.append((0, node.data))
            elif t is GlobalVar:
                if self.mod is not None and node not in self.mod.functions:
                    self.report(("gv", node), f"@{node.name_hint} is not defined in the module")
            elif t is Constructor:
                if self.mod is not None and node.belong_to not in self.mod.type_definitions:
                    self.report(("ctor", node), f"constructor {node.name_hint} belongs to "
                                                f"{node.belong_to.name_hint}, which is not "
                                                "defined in the module")
            else:
                for c in reversed(dataflow_children(node)):
                    stack.append((0, c))


def check_well_formed(expr_or_mod, allow_free_vars: bool | None = None) -> list[str]:
    """The problems found in an expression or in every Relay function of a module.

    Free variables are allowed in a bare expression (as TVM's well_formed does) and are a
    problem in a module's global functions; ``allow_free_vars`` overrides either default.
    """
    from ...ir.module import IRModule

    if isinstance(expr_or_mod, IRModule):
        allow = False if allow_free_vars is None else allow_free_vars
        problems = []
        for gv, fn in expr_or_mod.functions.items():
            if isinstance(fn, Function):
                c = _Checker(expr_or_mod, allow, f"@{gv.name_hint}")
                c.run(fn)
                problems.extend(c.problems)
        return problems
    c = _Checker(None, True if allow_free_vars is None else allow_free_vars)
    c.run(expr_or_mod)
    return c.problems


def well_formed(expr) -> bool:
    """True when no variable is bound twice or used outside its scope (``relay.analysis``)."""
    return not check_well_formed(expr)
