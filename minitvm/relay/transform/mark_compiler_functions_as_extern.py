"""MarkCompilerFunctionsAsExtern(compiler_filter): turn global "Compiler" functions into externs.

After external codegen has compiled the global functions carrying a ``Compiler`` attribute (for
all compilers, or only the one ``compiler_filter`` names), the rest of the flow must leave them
alone: each such global function keeps its parameters, body and types but its attributes are
replaced by the single ``Extern=1`` (TVM v0.19's behaviour; ``Primitive``, ``Inline`` and even
``global_symbol`` go). Inner functions are not looked at.
"""

from __future__ import annotations

from ...ir.attrs import DictAttrs
from ...transform.stats import record_stat
from ..expr import Function
from ._pass_helpers import make_module_pass, register

__all__ = ["MarkCompilerFunctionsAsExtern", "compiler_function", "check_compiler_filter"]


def check_compiler_filter(pass_name: str, compiler_filter) -> str:
    """``compiler_filter`` as a str, or a TypeError naming the pass."""
    if not isinstance(compiler_filter, str):
        raise TypeError(f"{pass_name}: compiler_filter must be a str (\"\" for every "
                        f"compiler), got {type(compiler_filter).__name__}")
    return compiler_filter


def compiler_function(expr, compiler_filter: str):
    """``expr`` when it is a Function whose ``Compiler`` attribute passes the filter, else None.

    An empty filter accepts every compiler (TVM's AsFunctionNode).
    """
    if type(expr) is not Function or not expr.attrs:
        return None
    compiler = expr.attrs.get("Compiler")
    if compiler is None:
        return None
    name = getattr(compiler, "value", compiler)
    if compiler_filter and str(name) != compiler_filter:
        return None
    return expr


def mark_compiler_functions_as_extern(mod, compiler_filter: str = ""):
    """A copy of ``mod`` whose global "Compiler" functions carry only ``Extern=1``."""
    out = mod.shallow_copy()
    count = 0
    for gv, func in list(mod.functions.items()):
        if compiler_function(func, compiler_filter) is None:
            continue
        new = Function(func.params, func.body, func.ret_type, func.type_params,
                       DictAttrs({"Extern": 1}), func.span)
        if func._checked_type is not None:
            new._checked_type = func._checked_type
        out.update_func(gv, new)
        count += 1
    record_stat("functions marked extern", count)
    return out


@register("MarkCompilerFunctionsAsExtern")
def MarkCompilerFunctionsAsExtern(compiler_filter: str = ""):  # noqa: N802 - TVM's name
    """Module pass (opt 0): replace the attributes of global "Compiler" functions by Extern=1.

    Parameters
    ----------
    compiler_filter : str
        Only functions whose ``Compiler`` attribute equals this; "" (default) for all.
    """
    check_compiler_filter("MarkCompilerFunctionsAsExtern", compiler_filter)
    return make_module_pass(lambda mod, ctx: mark_compiler_functions_as_extern(
        mod, compiler_filter), opt_level=0, name="MarkCompilerFunctionsAsExtern")
