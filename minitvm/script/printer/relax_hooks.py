"""Relax's entries in the core's dialect hooks: its nodes and modules print as TVMScript.

Registered on Relax's own classes (``relax.Expr``, ``relax.StructInfo``) and, for modules, on
``relax.Function`` / ``relax.ExternFunc`` (a module holding one prints as ``@I.ir_module``,
with its PrimFuncs) and on ``tir.PrimFunc`` (a module of PrimFuncs only: TVM prints it the same
way; a module with Relay functions still finds Relay's hooks first).
"""

from __future__ import annotations

import warnings

from ...ir.dialect import register_hook
from ...relax.expr import Binding, BindingBlock, Expr, ExternFunc, Function
from ...relax.struct_info import StructInfo
from ...runtime.registry import register_func
from ...tir.function import PrimFunc
from .relax_printer import script


def _repr(obj) -> str:
    """``str(obj)``: the TVMScript text, or (as TVM's repr does when its printer fails) the type
    and address, so that printing a malformed node inside an error message cannot raise."""
    try:
        return script(obj)
    except Exception as err:  # noqa: BLE001 - a repr must not raise
        warnings.warn(f"TVMScript printer falls back to the basic address printer: "
                      f"{type(err).__name__}: {err}", stacklevel=2)
        return f"{type(obj).__name__}({hex(id(obj))})"


def _astext(node, show_meta_data=True, annotate=None):
    return script(node, show_meta=bool(show_meta_data))


def _module_script(mod, style=None, black_format=False, **kwargs):
    """``mod.script(**kwargs)``; ``mod.show(style, black_format)``'s two arguments are accepted
    and have no effect (plain text, not reformatted by black)."""
    return script(mod, **kwargs)


# (Binding and BindingBlock are plain nodes: their __str__ would have to ask for this hook)
for _cls in (Expr, StructInfo, Binding, BindingBlock):
    register_hook("str", _cls, _repr)
    register_hook("script", _cls, script)
    register_hook("astext", _cls, _astext)
for _cls in (Function, ExternFunc, PrimFunc):
    register_hook("module_str", _cls, _repr)
    register_hook("module_script", _cls, _module_script)
    register_hook("module_astext", _cls, _astext)
    register_hook("file_suffix", _cls, lambda mod: ".py")


def _printer_script(obj, options: dict) -> str:
    """``tvm.runtime.Scriptable.script``'s printer: the dialect's ``script`` hook of ``obj``'s
    class, an IRModule's or PrimFunc's own printer, TIR's for expressions and statements;
    anything else has no TVMScript form."""
    from ...ir.dialect import find_hook
    from ...ir.module import IRModule
    from ...ir.prim_expr import PrimExpr
    from ...tir.printer import expr_to_str, stmt_to_str
    from ...tir.stmt import Stmt

    hook = find_hook("script", type(obj))
    if hook is not None:
        return hook(obj, **options)
    if isinstance(obj, IRModule | PrimFunc):
        return type(obj).script(obj, **options)
    if isinstance(obj, PrimExpr):
        return expr_to_str(obj)
    if isinstance(obj, Stmt):
        return stmt_to_str(obj)
    raise TypeError(f"no TVMScript printer is registered for {type(obj).__name__}")


register_func("node.TVMScriptPrinterScript", _printer_script, override=True)
