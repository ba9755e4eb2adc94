"""InferType: type-check every Relay function of a module and fill ``checked_type`` in place.

All Relay functions that need checking are checked together with one solver, so recursion and
mutual recursion through GlobalVars work with or without annotations. A function already typed
by an earlier run whose callees' types are unchanged is reused without being walked again.
"""

from __future__ import annotations

import weakref

from ...ir.gc_pause import gc_paused
from ...ir.module import IRModule
from ...transform import module_pass
from ...transform.instrumented import register_bisect_exempt
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Function
from ..type_checker import TypeChecker
from .annotate_missing_types import annotate_missing_types

__all__ = ["InferType", "InferTypeLocal", "infer_type_module"]

# function -> ((GlobalVar, type of its function when this one was checked), ...)
_CHECKED_DEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _reusable(functions: dict, relay_funcs: dict) -> set:
    """GlobalVars whose functions can keep their types: typed, with unchanged callee types."""
    keep = {gv for gv, fn in relay_funcs.items()
            if fn._checked_type is not None and fn in _CHECKED_DEPS}
    changed = True
    while changed:
        changed = False
        for gv in list(keep):
            for dep, t in _CHECKED_DEPS[relay_funcs[gv]]:
                dep_fn = functions.get(dep)
                stale = dep in relay_funcs and dep not in keep
                if stale or dep_fn is None or dep_fn._checked_type != t:
                    keep.discard(gv)
                    changed = True
                    break
    return keep


@gc_paused
def infer_type_module(mod: IRModule) -> IRModule:
    """Type-check ``mod``'s Relay functions; returns a shallow copy holding the typed functions."""
    mod = mod.shallow_copy()
    relay_funcs = {gv: fn for gv, fn in mod.functions.items() if isinstance(fn, Function)}
    keep = _reusable(mod.functions, relay_funcs)
    checker = TypeChecker(mod)
    todo = []
    for gv, fn in mod.functions.items():
        if gv in keep:
            checker.set_global_type(gv, fn._checked_type)
            gv._checked_type = fn._checked_type
        elif gv in relay_funcs:
            checker.declare_global(gv, fn)
            todo.append((gv, fn))
    deps = {}
    for gv, fn in todo:
        checker.check(fn, gv)
        deps[gv] = checker.deps
    record_stat("type-checked functions", len(todo))
    if todo:
        checker.finish()
    missing = checker.missing_annotations() if todo else {}
    for gv, fn in todo:
        gv._checked_type = fn._checked_type
        if fn in missing:
            fn = _with_inferred_ret_type(mod, gv, fn, *missing[fn])
        _CHECKED_DEPS[fn] = tuple((d, mod.functions[d]._checked_type) for d in deps[gv]
                                  if d in mod.functions)
    return mod


def _with_inferred_ret_type(mod: IRModule, gv, fn: Function, vars_, fns) -> Function:
    """As TVM does, missing return types and var annotations get the inferred types."""
    if not vars_ and fns == [fn]:  # only the global function's own return type: no walk
        typed = fn.with_fields(ret_type=fn._checked_type.ret_type)
        typed._checked_type = fn._checked_type
    else:
        typed = annotate_missing_types(fn, known_missing=True)  # (the checker's list)
    if typed is not fn:
        mod.functions[gv] = typed
    return typed


def _infer_type_pass(mod, ctx):
    return infer_type_module(mod)


register_bisect_exempt("InferType")  # an analysis every pipeline depends on


@register_pass("InferType")
def InferType():
    """Infer the type of every expression in a module (``relay.transform.InferType()``).

    Returns
    -------
    ret : tvm.transform.Pass
        The registered module pass.
    """
    return module_pass(_infer_type_pass, opt_level=0, name="InferType", establishes=["typed"],
                       keeps=["anf", "gnf", "fused"])


def InferTypeLocal(expr, mod: IRModule | None = None):
    """Infer the type of one expression, reusing types already on its sub-expressions.

    Free variables are typed by their annotation (or an existing checked_type).
    Returns the expression's checked_type.
    """
    checker = TypeChecker(mod, local=True)
    if mod is not None:
        for gv, fn in mod.functions.items():
            if fn._checked_type is not None:
                checker.set_global_type(gv, fn._checked_type)
            elif isinstance(fn, Function):
                checker.declare_global(gv, fn)
    checker.check(expr)
    checker.finish()
    return expr._checked_type
