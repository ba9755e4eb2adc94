"""BindSymbolicVars (TVM's ``relax.transform.BindSymbolicVars(binding_map, func_name=None)``):
replace symbolic (TIR) variables by values.

``binding_map`` maps a TIR variable or its name (unique in the function) to a PrimExpr or a
Python int (an int64 immediate). With ``func_name`` only that function is rewritten (every key
must be one of its symbolic variables); without it every Relax function is, each with the keys
it defines, and a key no function defines is an error. A function left with symbolic variables
that nothing defines is an error.
"""

from __future__ import annotations

from ...ir.prim_expr import IntImm
from ...tir import expr as T
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import Function
from .symbolic import bind
from .utils import defined_symbolic_vars, free_symbolic_vars, register

__all__ = ["BindSymbolicVars", "function_bind_symbolic_vars"]


def _as_prim(value):
    if isinstance(value, bool):
        raise TypeError(f"cannot bind a symbolic variable to a bool ({value!r})")
    if isinstance(value, int):
        return IntImm("int64", value)
    return value


def function_bind_symbolic_vars(func: Function, binding_map, mod=None) -> Function:
    """TVM's ``relax.FunctionBindSymbolicVars``."""
    if not binding_map:
        return func
    defined = defined_symbolic_vars(func)
    by_name: dict = {}
    for v in defined:
        by_name.setdefault(v.name, []).append(v)
    remap: dict = {}
    for key, value in binding_map.items():
        if isinstance(key, str):
            found = by_name.get(key)
            if not found:
                raise ValueError(f"Function does not use symbolic var with name \"{key}\".  "
                                 f"Function has symbolic variables {defined}")
            if len(found) != 1:
                raise ValueError(f"Function contains multiple symbolic variables with name "
                                 f"\"{key}\".  The TIR variables {found} are all named "
                                 f"\"{key}\"")
            var = found[0]
        elif isinstance(key, T.Var):
            if not any(key is v for v in defined):
                raise ValueError(f"Function does not use variable {key} as a symbolic "
                                 f"variable.  Function has symbolic variables {defined}")
            var = key
        else:
            raise TypeError("Expected symbolic variable to be a tir.Var or a string name, but "
                            f"{key!r} was of type {type(key).__name__}")
        if var in remap:
            raise ValueError(f"Remap of variable {var} was defined multiple times")
        remap[var] = _as_prim(value)
    new = bind(func, None, remap, mod)
    free = free_symbolic_vars(new)
    if free:
        raise ValueError("Resulting function should not have any undefined symbolic "
                         f"variables, but TIR variables {free} were undefined.")
    return new


def _defines(func, key) -> bool:
    vars_ = defined_symbolic_vars(func)
    if isinstance(key, str):
        return any(v.name == key for v in vars_)
    if isinstance(key, T.Var):
        return any(v is key for v in vars_)
    raise TypeError("Expected symbolic variable to be a tir.Var or a string name, but "
                    f"{key!r} was of type {type(key).__name__}")


@register("relax.BindSymbolicVars")
def BindSymbolicVars(binding_map=None, func_name=None):  # noqa: N802 - TVM's name
    """Module pass (opt 1, named ``relax.BindSymbolicVars`` as in TVM): bind symbolic
    variables to values (TVM requires ``binding_map``; the default binds nothing)."""
    binding_map = {k: _as_prim(v) for k, v in dict(binding_map or {}).items()}

    def run(mod, ctx):
        changed = 0
        if not binding_map:
            return mod
        if func_name is not None:
            gv = mod.get_global_var(func_name)
            func = mod[gv]
            if not isinstance(func, Function):
                raise TypeError(f"BindSymbolicVars: @{func_name} is not a Relax function")
            new = function_bind_symbolic_vars(func, binding_map, mod)
            if new is not func:
                mod.update_func(gv, new)
                changed += 1
        else:
            used = set()
            for gv, func in list(mod.functions.items()):
                if not isinstance(func, Function):
                    continue
                keys = {}
                for k, v in binding_map.items():
                    if _defines(func, k):
                        used.add(id(k) if not isinstance(k, str) else k)
                        keys[k] = v
                new = function_bind_symbolic_vars(func, keys, mod)
                if new is not func:
                    mod.update_func(gv, new)
                    changed += 1
            unused = [k for k in binding_map
                      if (id(k) if not isinstance(k, str) else k) not in used]
            if unused:
                raise ValueError(f"Binding map contains keys {unused}, which did not "
                                 "correspond to any symbolic variables in the module.")
        if changed:
            record_stat("functions changed", changed)
        return mod

    return module_pass(run, opt_level=1, name="relax.BindSymbolicVars",
                       keeps=["relax_normalized"])
