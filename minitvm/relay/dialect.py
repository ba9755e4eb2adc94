"""Relay's entries in the core's dialect hooks: printing, module construction, calls, evaluation.

Registered on Relay's own base class ``ExprWithOp`` and on the nodes the dialects share (``Op``,
``GlobalVar``: they print as Relay text by default), and for modules on ``relay.Function`` (and
``IRModule``, for empty modules). Another dialect registers its hooks on its own classes.
"""

from __future__ import annotations

from ..ir.dialect import register_hook, register_text_format
from ..ir.expr import GlobalVar
from ..ir.module import IRModule
from ..ir.op import Op
from ..ir.type import TensorType, Type
from . import diagnostics as _diagnostics  # noqa: F401  registers the "describe" hook
from .expr import Call, ExprWithOp, Function
from .printer import astext, pretty_print, type_to_str


def _from_expr(expr, functions=None, type_defs=None) -> IRModule:
    """``main`` is ``expr`` closed over its free variables (what the seed tutorial shows)."""
    from .analysis.free_vars import free_vars

    mod = IRModule(functions, type_defs)
    if not isinstance(expr, Function):
        expr = Function(free_vars(expr), expr)
    else:
        extra = free_vars(expr)
        if extra:
            expr = Function(list(expr.params) + extra, expr.body, expr.ret_type,
                            expr.type_params, expr.attrs, expr.span)
    mod._add(mod._gvars.get("main") or GlobalVar("main"), expr, update=True)
    return mod


def _evaluate(mod, inputs, entry: str = "main"):
    """Run ``mod[entry]`` on ``inputs`` in the debug interpreter."""
    from .build_module import create_executor

    ex = create_executor("debug", mod=mod)
    return ex.evaluate(mod.get_global_var(entry))(*inputs)


def _input_specs(func) -> list[tuple[str, tuple, str]]:
    """(name, static shape, dtype) of each tensor parameter of a Relay function."""
    out = []
    for p in func.params:
        t = p._checked_type or p.type_annotation
        if not isinstance(t, TensorType):
            raise TypeError(f"cannot make a random input for %{p.name_hint} of type {t}; give "
                            "inputs= explicitly")
        out.append((f"%{p.name_hint}", tuple(int(d) for d in t.shape), t.dtype))
    return out


def _module_astext(mod, show_meta_data=True, annotate=None):
    return astext(mod, show_meta_data, annotate)


def _is_relay_text(text: str) -> bool:
    head = text.lstrip()
    while head.startswith("//"):
        head = head.split("\n", 1)[1].lstrip() if "\n" in head else ""
    return head.startswith(("#[version", "def @", "type ", "fn ", "%", "free_var"))


def _parse(text: str):
    from .parser import fromtext

    return fromtext(text)


# Relay's own expressions, and the nodes the dialects share (ops and global variables print as
# Relay text by default); a module of Relay functions, and an empty module, print as Relay text
for _cls in (ExprWithOp, Op, GlobalVar):
    register_hook("str", _cls, pretty_print)
    register_hook("astext", _cls, astext)
    register_hook("script", _cls, lambda node, **kw: pretty_print(node))
    register_hook("annotated_text", _cls, lambda root, note: astext(root, False, note))
for _cls in (IRModule, Function):
    register_hook("module_str", _cls, pretty_print)
    register_hook("file_suffix", _cls, lambda mod: ".relay")
    register_hook("module_astext", _cls, _module_astext)
    register_hook("module_script", _cls, lambda mod, *a, **kw: pretty_print(mod))
register_hook("annotated_text", IRModule, lambda root, note: astext(root, False, note))
register_hook("str", Type, type_to_str)
register_hook("astext", Type, lambda t, show_meta_data=True, annotate=None: type_to_str(t))
register_hook("from_expr", ExprWithOp, _from_expr)
register_hook("call", ExprWithOp, lambda callee, args: Call(callee, args))
register_hook("call", GlobalVar, lambda callee, args: Call(callee, args))
register_hook("evaluate", Function, _evaluate)
register_hook("input_specs", Function, _input_specs)
register_text_format("relay", _is_relay_text, _parse)
