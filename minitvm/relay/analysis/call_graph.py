"""``relay.analysis.CallGraph``: which global functions of a module reference which.

As TVM builds it: every GlobalVar appearing in a function's body (once per distinct GlobalVar)
is a callee of that function; ``ref_count(f)`` is how many functions reference ``f`` and
``global_call_count(f)`` how many distinct globals ``f`` references.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ..expr import Function
from ..expr_functor import post_order_visit

__all__ = ["CallGraph"]


class CallGraph:
    """The call graph of an IRModule's Relay functions."""

    def __init__(self, module):
        self.module = module
        self._callees: dict[str, list[GlobalVar]] = {}
        self._refs: dict[str, int] = {}
        for gv, func in module.functions.items():
            self._refs.setdefault(gv.name_hint, 0)
            callees: list[GlobalVar] = []
            if isinstance(func, Function):
                seen: set[str] = set()

                def note(e, callees=callees, seen=seen):
                    if isinstance(e, GlobalVar) and e.name_hint not in seen:
                        seen.add(e.name_hint)
                        callees.append(e)

                post_order_visit(func.body, note)
            self._callees[gv.name_hint] = callees
        for callees in self._callees.values():
            for c in callees:
                self._refs[c.name_hint] = self._refs.get(c.name_hint, 0) + 1

    def _name(self, var) -> str:
        name = var if isinstance(var, str) else getattr(var, "name_hint", None)
        if name not in self._callees:
            raise KeyError(f"CallGraph: {var!r} is not a global function of the module")
        return name

    def ref_count(self, var) -> int:
        """How many functions of the module reference ``var`` (a GlobalVar or its name)."""
        return self._refs[self._name(var)]

    def global_call_count(self, var) -> int:
        """How many distinct global functions ``var`` references."""
        return len(self._callees[self._name(var)])

    def is_recursive(self, var) -> bool:
        """Does ``var`` reference itself?"""
        name = self._name(var)
        return any(c.name_hint == name for c in self._callees[name])

    def print_var(self, var) -> str:
        """The call graph node of ``var`` as text."""
        name = self._name(var)
        lines = [f"Call graph node: {name}, #ref = {self._refs[name]}"]
        lines += [f"  call site: {name} calls {c.name_hint}" for c in self._callees[name]]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return "".join(self.print_var(n) for n in self._callees)

    __repr__ = __str__
