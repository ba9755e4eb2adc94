"""Helpers shared by the pass modules of passes-1: building function/module passes by name.

Passes are built through the pass infrastructure's decorators when they exist
(``relay.transform.function_pass``, ``tvm.transform.module_pass``); until the function-pass
decorator lands, a function pass falls back to a module pass that maps every optimizable function.
"""

from __future__ import annotations

from types import GeneratorType

from ...ir.expr import GlobalVar
from ..expr import Function


def is_optimizable(func) -> bool:
    """A Relay Function without Compiler, nonzero Extern or nonzero SkipOptimization attrs."""
    if not isinstance(func, Function):
        return False
    attrs = func.attrs
    if not attrs:
        return True
    if attrs.get("Compiler") is not None:
        return False
    return not (_nonzero(attrs.get("Extern")) or _nonzero(attrs.get("SkipOptimization")))


def _nonzero(value) -> bool:
    if value is None:
        return False
    return bool(int(getattr(value, "value", value)))


def has_nonzero_attr(func, key: str) -> bool:
    """``func->HasNonzeroAttr(key)``: the function attribute is present and not 0."""
    attrs = getattr(func, "attrs", None)
    if not attrs:
        return False
    return _nonzero(attrs.get(key))


def make_function_pass(transform, opt_level: int, name: str, required=None):
    """A function pass named ``name`` calling ``transform(func, mod, ctx)`` per function."""
    try:
        from .function_pass import function_pass
    except ImportError:  # pass infrastructure not there yet
        function_pass = None
    if function_pass is not None:
        return function_pass(transform, opt_level=opt_level, name=name, required=required or [])
    module_pass = _module_pass_decorator()

    def run(mod, ctx):
        updates = {}
        for gv, func in list(mod.functions.items()):
            if is_optimizable(func):
                new = transform(func, mod, ctx)
                if new is not func:
                    updates[gv] = new
        for gv, func in updates.items():
            mod.update_func(gv, func)
        return mod

    return module_pass(run, opt_level=opt_level, name=name, required=required or [])


def _module_pass_decorator():
    try:
        from ...transform.decorators import module_pass
    except ImportError:  # the skeleton pass infrastructure
        from ...transform import module_pass
    return module_pass


def register(name: str):
    """Register a pass factory by name in the pass registry (a no-op until the registry exists)."""

    def deco(factory):
        try:
            from ...transform.registry import register_pass
        except ImportError:
            return factory
        return register_pass(name, factory)

    return deco


def make_module_pass(transform, opt_level: int, name: str, required=None):
    """A module pass named ``name`` calling ``transform(mod, ctx)`` on a copy of the module."""
    module_pass = _module_pass_decorator()

    return module_pass(transform, opt_level=opt_level, name=name, required=required or [])


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
