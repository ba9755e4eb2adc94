"""``rewrite_call`` (TVM's ``relax.dpl.rewrite_call``): replace every binding value that matches
a pattern with what a rewriter returns, looking through the function's bindings."""

from __future__ import annotations

from collections.abc import Callable

from ..expr import Function, VarBinding
from ..expr_functor import ExprMutator
from .matcher import match_expr
from .pattern import DFPattern

__all__ = ["rewrite_call"]

MAX_ROUNDS = 100


class _CallRewriter(ExprMutator):
    def __init__(self, pattern: DFPattern, rewriter: Callable):
        super().__init__()
        self.pattern = pattern
        self.rewriter = rewriter
        self.var2val: dict = {}
        self.changed = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        matches = match_expr(self.pattern, value, self.var2val)
        if matches is not None:
            new = self.rewriter(value, matches)
            if new is not None and new is not value:
                value = self.builder_.normalize(new)
                self.changed += 1
        var = binding.var
        if value is not binding.value:
            var = self.with_struct_info(var, value.struct_info)
            if var is not binding.var:
                self.set_var_remap(binding.var, var)
            self.builder_.emit_normalized(VarBinding(var, value, binding.span))
        else:
            self.builder_.emit_normalized(binding)
        self.var2val[var] = value


def rewrite_call(pattern: DFPattern, rewriter: Callable, func: Function) -> Function:
    """``func`` with each matching binding value ``e`` replaced by ``rewriter(e, matches)``
    (``matches``: pattern -> matched expression), repeated until nothing changes."""
    for _ in range(MAX_ROUNDS):
        m = _CallRewriter(pattern, rewriter)
        new = m.visit_expr(func)
        if not m.changed:
            return new
        func = new
    raise RuntimeError(f"rewrite_call: no fixed point after {MAX_ROUNDS} rounds; the "
                       "rewriter keeps producing matches")
