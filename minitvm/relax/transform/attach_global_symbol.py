"""AttachGlobalSymbol (TVM's ``relax.transform.AttachGlobalSymbol``): every Relax function and
PrimFunc gets a ``global_symbol`` attribute — its GlobalVar name, prefixed for PrimFuncs with the
module's ``system_lib_prefix`` attribute. A PrimFunc whose symbol differs from its name (a
prefix) is renamed to it, and every reference to it in the module follows."""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...tir.function import PrimFunc
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import Function
from .normalize import NormalizingMutator
from .utils import has_relax_function, register

__all__ = ["AttachGlobalSymbol"]


def _symbol(func):
    attrs = func.attrs
    if not attrs:
        return None
    v = attrs.get("global_symbol")
    return None if v is None else str(getattr(v, "value", v))


class _GlobalVarReplacer(NormalizingMutator):
    def __init__(self, replacements: dict, mod=None):
        super().__init__(mod)
        self.replacements = replacements

    def visit_global_var_(self, op):
        return self.replacements.get(op, op)


def _replace_in_primfunc(func: PrimFunc, replacements: dict) -> PrimFunc:
    from ...tir import expr as T
    from ...tir.stmt_functor import transform_stmt

    def fexpr(e):
        from ...tir.stmt_functor import transform_expr

        def fpost(node):
            if isinstance(node, T.Call) and isinstance(node.op, GlobalVar) and \
                    node.op in replacements:
                from ...tir.stmt_functor import _copy

                return _copy(node, op=replacements[node.op])
            return None

        return transform_expr(e, fpost)

    body = transform_stmt(func.body, fexpr)
    if body is func.body:
        return func
    return func.with_body(body)


def _replace_global_vars(mod, replacements: dict):
    mutator = _GlobalVarReplacer(replacements, mod)
    for old, func in list(mod.functions.items()):
        new_gv = replacements.get(old, old)
        if isinstance(func, PrimFunc):
            new_func = _replace_in_primfunc(func, replacements)
        elif isinstance(func, Function):
            new_func = mutator.visit_expr(func)
        else:
            new_func = func
        if new_gv is not old and _symbol(new_func) is not None:
            new_func = new_func.with_attr("global_symbol", new_gv.name_hint)
        if new_gv is not old:
            mod.remove(old)
        if new_gv is not old or new_func is not func:
            mod.update_func(new_gv, new_func)
    return mod


@register("AttachGlobalSymbol")
def AttachGlobalSymbol():  # noqa: N802 - TVM's name
    """Module pass (opt 0): attach ``global_symbol`` to every Relax function and PrimFunc."""

    def run(mod, ctx):
        if not has_relax_function(mod) and not all(
                isinstance(f, PrimFunc) for f in mod.functions.values()):
            return mod  # a module of another dialect (Relay): left alone
        prefix = str(mod.attrs.get("system_lib_prefix", "") or "")
        renames: dict = {}
        attached = 0
        for gv, func in list(mod.functions.items()):
            old = _symbol(func)
            if isinstance(func, PrimFunc):
                name = prefix + gv.name_hint
            elif isinstance(func, Function):
                name = gv.name_hint
            else:
                continue
            if old == name:
                continue
            mod.update_func(gv, func.with_attr("global_symbol", name))
            attached += 1
            if name != gv.name_hint:
                new_gv = GlobalVar(name)
                new_gv._checked_type = gv._checked_type
                renames[gv] = new_gv
        if renames:
            mod = _replace_global_vars(mod, renames)
        if attached:
            record_stat("global symbols attached", attached)
        return mod

    return module_pass(run, opt_level=0, name="AttachGlobalSymbol",
                       keeps=["relax_normalized"])
