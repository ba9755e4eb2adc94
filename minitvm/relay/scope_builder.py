"""ScopeBuilder: build Let chains and If expressions imperatively (``relay.ScopeBuilder``)."""

from __future__ import annotations

import contextlib

from .expr import If, Let, Var
from .expr import var as make_var


class ScopeBuilder:
    """``sb.let(...)`` binds values, ``with sb.if_scope(c)`` / ``with sb.else_scope()`` branch,
    ``sb.ret(v)`` sets the scope's result and ``sb.get()`` returns the whole expression."""

    def __init__(self):
        self._bindings: list[list] = [[]]
        self._ret: list = [None]
        self._pending_if = None

    def _enter(self):
        self._bindings.append([])
        self._ret.append(None)

    def _exit(self):
        bindings, ret = self._bindings.pop(), self._ret.pop()
        if ret is None:
            raise ValueError("a ScopeBuilder scope ended without sb.ret(...)")
        for v, value in reversed(bindings):
            ret = Let(v, value, ret)
        return ret

    def let(self, var, value) -> Var:
        """Bind ``value`` to ``var`` (a Var, a name, or a (name, type) pair)."""
        if isinstance(var, str):
            var = make_var(var)
        elif isinstance(var, tuple):
            var = make_var(*var)
        self._bindings[-1].append((var, value))
        return var

    @contextlib.contextmanager
    def if_scope(self, cond):
        self._enter()
        yield
        self._pending_if = (cond, self._exit(), len(self._bindings))

    @contextlib.contextmanager
    def else_scope(self):
        if self._pending_if is None or self._pending_if[2] != len(self._bindings):
            raise ValueError("else_scope must directly follow an if_scope")
        cond, true_branch, _ = self._pending_if
        self._pending_if = None
        self._enter()
        yield
        false_branch = self._exit()
        if self._ret[-1] is not None:
            raise ValueError("the enclosing scope already has a return value")
        self._ret[-1] = If(cond, true_branch, false_branch)

    def type_of(self, expr):
        return expr.checked_type

    def ret(self, value) -> None:
        if self._ret[-1] is not None:
            raise ValueError("ret() was already called in this scope")
        self._ret[-1] = value

    def get(self):
        """The built expression; every scope must have been closed."""
        if len(self._bindings) != 1:
            raise ValueError("a ScopeBuilder scope is still open")
        if self._pending_if is not None:
            raise ValueError("if_scope without else_scope")
        return self._exit_outer()

    def _exit_outer(self):
        ret = self._ret[0]
        if ret is None:
            raise ValueError("ScopeBuilder.get() before sb.ret(...)")
        for v, value in reversed(self._bindings[0]):
            ret = Let(v, value, ret)
        return ret
