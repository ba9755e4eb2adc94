"""Helpers shared by the Relay pass modules: building registered function/module passes, and a
generator-driven functor for traversals that need their own order."""

from __future__ import annotations

from types import GeneratorType

from ...ir.attrs import nonzero_attr
from ...ir.expr import GlobalVar
from ...transform.decorators import module_pass
from ...transform.registry import register_pass
from ..expr import Function
from ..expr_functor import dataflow_children, dataflow_post_order
from .function_pass import function_pass, is_optimizable


def has_nonzero_attr(func, key: str) -> bool:
    """``func->HasNonzeroAttr(key)``: the function attribute is present and not 0."""
    attrs = getattr(func, "attrs", None)
    if not attrs:
        return False
    return nonzero_attr(attrs.get(key))


def dataflow_use_counts(body) -> dict[int, int]:
    """id(expr) -> how many dataflow nodes read it (the body counts once). The walk stays out
    of Let and Function scopes: a value inside one has no count, and the passes that use the
    counts (FuseAttention, SplitConvPool) leave it alone."""
    counts: dict[int, int] = {id(body): 1}
    for e in dataflow_post_order(body):
        for kid in dataflow_children(e):
            counts[id(kid)] = counts.get(id(kid), 0) + 1
    return counts


def make_function_pass(transform, opt_level: int, name: str, required=None, **contracts):
    """A function pass named ``name`` calling ``transform(func, mod, ctx)`` per function."""
    return function_pass(transform, opt_level=opt_level, name=name, required=required or [],
                         **contracts)


def make_module_pass(transform, opt_level: int, name: str, required=None, **contracts):
    """A module pass named ``name`` calling ``transform(mod, ctx)`` on a copy of the module."""
    return module_pass(transform, opt_level=opt_level, name=name, required=required or [],
                       **contracts)


def register(name: str):
    """Register a pass factory by name in the pass registry."""
    return lambda factory: register_pass(name, factory)


def map_functions(mod, fn, skip=None):
    """A shallow copy of ``mod`` with ``fn(func)`` applied to every Relay Function.

    ``skip(func)`` returning True leaves a function as it is.
    """
    new = mod.shallow_copy()
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and not (skip and skip(func)):
            out = fn(func)
            if out is not func:
                new.update_func(gv, out)
    return new


__all__ = ["GlobalVar", "is_optimizable", "has_nonzero_attr", "make_function_pass",
           "make_module_pass", "map_functions", "GeneratorFunctor", "register"]


class GeneratorFunctor:
    """A memoizing visitor whose handlers may be generators yielding child expressions.

    ``dispatch(e)`` returns the result for ``e`` or a generator that yields sub-expressions and
    receives their results; the driver runs it on an explicit stack, so deep programs never
    recurse. Results for the types in ``no_memo`` are recomputed at every visit.
    """

    no_memo: tuple = ()

    def __init__(self):
        self.memo: dict = {}

    def dispatch(self, e):
        raise NotImplementedError

    def _start(self, e):
        memo = self.memo
        if e in memo:
            return memo[e]
        res = self.dispatch(e)
        if type(res) is not GeneratorType and not isinstance(e, self.no_memo):
            memo[e] = res
        return res

    def visit(self, expr):
        value = self._start(expr)
        if type(value) is not GeneratorType:
            return value
        stack = [(value, expr)]
        value = None
        memo = self.memo
        while stack:
            gen, e = stack[-1]
            try:
                child = gen.send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                if not isinstance(e, self.no_memo):
                    memo[e] = value
                continue
            value = self._start(child)
            if type(value) is GeneratorType:
                stack.append((value, child))
                value = None
        return value
