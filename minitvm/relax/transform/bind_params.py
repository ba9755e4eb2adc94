"""BindParams (TVM's ``relax.transform.BindParams(func_name, params)``): parameters of one
function become constants.

``params`` maps parameter names (unique among the function's parameters) or parameter Vars to
numpy arrays, NDArrays or Relax constants / expressions. The bound parameters disappear from
the signature, their uses become the constants, and symbolic variables the constants' shapes
pin down are replaced everywhere (``x: R.Tensor((n, 4))`` bound to a (16, 4) array makes ``n``
16). The function is found by its ``global_symbol`` when it has one, else by its GlobalVar name.
"""

from __future__ import annotations

import numpy as np

from ...runtime.ndarray import NDArray
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..expr import Constant, Expr, Function, Var
from .symbolic import bind
from .utils import infer_symbolic_var_map, register

__all__ = ["BindParams", "function_bind_params"]


def _normalize_bindings(func: Function, params) -> tuple[dict, dict]:
    by_name: dict = {}
    for p in func.params:
        by_name.setdefault(p.name_hint, []).append(p)
    relax_map: dict = {}
    for key, value in params.items():
        if isinstance(key, str):
            found = by_name.get(key)
            if not found:
                raise ValueError(f"Function does not have parameter with name \"{key}\".  "
                                 "Function parameters are named "
                                 f"{[p.name_hint for p in func.params]}")
            if len(found) != 1:
                raise ValueError(f"Function contains multiple parameters with name \"{key}\".  "
                                 f"The Relax variables {found} are all named \"{key}\"")
            var = found[0]
        elif isinstance(key, Var):
            if not any(key is p for p in func.params):
                raise ValueError(f"Function does not use Relax variable {key.name_hint} as a "
                                 "parameter.")
            var = key
        else:
            raise TypeError("Expected bound parameter to be a relax.Var, or a string that "
                            "uniquely identifies a relax.Var param within the function. "
                            f"However, received {key!r} of type {type(key).__name__}")
        if var in relax_map:
            raise ValueError(f"Remap of variable {var.name_hint} was defined multiple times")
        relax_map[var] = _as_expr(value)
    prim_map = infer_symbolic_var_map(list(relax_map.items()))
    return relax_map, prim_map


def _as_expr(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, np.ndarray):
        value = NDArray(value)
    if isinstance(value, NDArray):
        return Constant(value)
    raise TypeError("param values are expected to be NDArray, numpy.ndarray or "
                    f"relax.Constant, but got {type(value).__name__}")


def function_bind_params(func: Function, params, mod=None) -> Function:
    """TVM's ``relax.FunctionBindParams``."""
    relax_map, prim_map = _normalize_bindings(func, params)
    if not relax_map and not prim_map:
        return func
    return bind(func, relax_map, prim_map, mod)


def _global_symbol(func):
    attrs = func.attrs
    if not attrs:
        return None
    v = attrs.get("global_symbol")
    return None if v is None else str(getattr(v, "value", v))


@register("BindParams")
def BindParams(func_name: str = "main", params=None):  # noqa: N802 - TVM's name
    """Module pass (opt 0): bind parameters of ``func_name`` to constants (TVM requires both
    arguments; the defaults, ``"main"`` and no parameters, bind nothing)."""
    params = dict(params or {})
    for v in params.values():  # checked when the pass is built, as TVM does
        if not isinstance(v, np.ndarray | NDArray | Constant | Expr):
            raise TypeError("param values are expected to be NDArray, numpy.ndarray or "
                            f"relax.Constant, but got {type(v)}")

    def run(mod, ctx):
        bound = 0
        for gv, func in list(mod.functions.items()):
            if not isinstance(func, Function):
                continue
            symbol = _global_symbol(func)
            name = symbol if symbol is not None else gv.name_hint
            if name == func_name:
                new = function_bind_params(func, params, mod)
                bound += len(func.params) - len(new.params)
                mod.update_func(gv, new)
        if bound:
            record_stat("parameters bound", bound)
        return mod

    return module_pass(run, opt_level=0, name="BindParams", keeps=["relax_normalized"])
