"""InlineCompilerFunctionsBoundTo(global_vars): inline chosen global "Compiler" functions back.

The undo of outlining for the global functions an external codegen declined: every call of one
of ``global_vars`` in the module's optimizable functions is replaced by the callee's body with
its parameters bound to the call's arguments, and the ``Composite`` functions called directly
inside that body are inlined the same way, so the operators come back as plain Relay. The named
global functions are then removed from the module. An empty list leaves the module unchanged
(TVM v0.19's behaviour).
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...transform.stats import record_stat
from ..expr import Call, Function, bind
from ..expr_functor import ExprMutator
from ._pass_helpers import is_optimizable, make_module_pass, register

__all__ = ["InlineCompilerFunctionsBoundTo", "inline_compiler_functions_bound_to"]


def _bind_call(func: Function, call: Call, what: str):
    """``func``'s body with its parameters replaced by ``call``'s arguments."""
    if len(func.params) != len(call.args):
        raise ValueError(f"InlineCompilerFunctionsBoundTo: {what} takes {len(func.params)} "
                         f"arguments but is called with {len(call.args)}")
    return bind(func.body, dict(zip(func.params, call.args, strict=True)))


class _CompositeInliner(ExprMutator):
    """Inlines the calls of ``Composite`` function literals in a compiler function's body."""

    def visit_call(self, call):
        new = super().visit_call(call)
        if type(new.op) is not Function:
            return new
        attrs = new.op.attrs
        if not attrs or attrs.get("Composite") is None:
            raise ValueError("InlineCompilerFunctionsBoundTo: a function literal called inside "
                             "an inlined compiler function has no 'Composite' attribute")
        return _bind_call(new.op, new, f"composite {attrs.get('Composite')!r}")


class _CallInliner(ExprMutator):
    """Replaces calls of the chosen global functions by their (composite-inlined) bodies."""

    def __init__(self, mod, names: frozenset):
        super().__init__()
        self.mod = mod
        self.names = names
        self.bodies: dict = {}
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        op = new.op
        if not isinstance(op, GlobalVar) or op.name_hint not in self.names:
            return new
        func = self.mod[op.name_hint]
        if not isinstance(func, Function) or not func.attrs or \
                func.attrs.get("Compiler") is None:
            raise ValueError(f"InlineCompilerFunctionsBoundTo: @{op.name_hint} is not a Relay "
                             "function with a 'Compiler' attribute")
        body = self.bodies.get(op.name_hint)
        if body is None:
            body = self.bodies[op.name_hint] = _CompositeInliner().visit(func.body)
        self.count += 1
        return _bind_call(Function(func.params, body), new, f"@{op.name_hint}")


def inline_compiler_functions_bound_to(mod, global_vars):
    """A copy of ``mod`` with the global functions ``global_vars`` inlined and removed."""
    names = []
    for gv in global_vars:
        name = gv.name_hint if isinstance(gv, GlobalVar) else gv
        if not isinstance(name, str):
            raise TypeError("InlineCompilerFunctionsBoundTo: global_vars must hold GlobalVars, "
                            f"got {type(gv).__name__}")
        if name not in mod:
            raise ValueError(f"InlineCompilerFunctionsBoundTo: @{name} is not in the module")
        names.append(name)
    if not names:
        return mod
    chosen = frozenset(names)
    out = mod.shallow_copy()
    count = 0
    for gv, func in list(mod.functions.items()):
        if gv.name_hint in chosen:
            out.remove(gv)
        elif is_optimizable(func):
            inliner = _CallInliner(mod, chosen)
            body = inliner.visit(func.body)
            count += inliner.count
            if body is not func.body:
                out.update_func(gv, Function(func.params, body, func.ret_type,
                                             func.type_params, func.attrs, func.span))
    record_stat("inlined calls", count)
    return out


@register("InlineCompilerFunctionsBoundTo")
def InlineCompilerFunctionsBoundTo(global_vars):  # noqa: N802 - TVM's name
    """Module pass (opt 0): inline the global "Compiler" functions ``global_vars`` and drop them.

    Parameters
    ----------
    global_vars : list of GlobalVar
        The global functions to inline at their call sites and remove.
    """
    chosen = list(global_vars)
    return make_module_pass(lambda mod, ctx: inline_compiler_functions_bound_to(mod, chosen),
                            opt_level=0, name="InlineCompilerFunctionsBoundTo")
