"""Inline (registered as "InlineGlobals"): inline global functions marked ``Inline=1``.

Callees are processed before callers (reverse topological order of the call graph). A function is
inlined when it carries a nonzero ``Inline`` attribute, is not recursive and calls no global
function that is left after its own inlining. A call is replaced by the callee's body with the
parameters bound to the arguments; a reference used as a value becomes the function itself;
functions for an external compiler (``Compiler`` attr) are inlined as a called local function.
Inlined functions that were not entry points (referenced by nobody) are then removed.

Difference from TVM: a function marked Inline that could not be inlined everywhere is kept
instead of failing a check.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...transform.stats import record_stat
from ..expr import Call, Function, bind
from ..expr_functor import ExprMutator
from ._pass_helpers import has_nonzero_attr, make_module_pass, register
from .remove_unused_functions import global_refs

__all__ = ["Inline", "inline_globals"]


def _post_order(mod, callees) -> list:
    """Global vars with callees before callers (cycles broken where first met)."""
    order, seen = [], set()
    for root in mod.get_global_vars():
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(callees.get(root, ())))]
        while stack:
            gv, it = stack[-1]
            for callee in it:
                if callee not in seen and callee in callees:
                    seen.add(callee)
                    stack.append((callee, iter(callees[callee])))
                    break
            else:
                stack.pop()
                order.append(gv)
    return order


class _Inliner(ExprMutator):
    def __init__(self, mod, current, callees, can_inline):
        super().__init__()
        self.mod = mod
        self.current = current
        self.callees = callees
        self.can_inline = can_inline
        self.count = 0

    def _target(self, gv):
        return self.mod.get_global_var(gv.name_hint) if gv.name_hint in self.mod else None

    def visit_function_body(self, fn):
        body = self.visit(fn.body)
        return fn if body is fn.body else fn.with_fields(body=body)

    def visit_global_var(self, gv):
        target = self._target(gv)
        if target is not None and self.can_inline(target):
            self.callees[self.current].discard(target)
            self.count += 1
            return self.mod[target]
        return gv

    def visit_call(self, call):
        op = call.op
        if isinstance(op, GlobalVar):
            target = self._target(op)
            if target is not None and self.can_inline(target):
                self.callees[self.current].discard(target)
                self.count += 1
                args = [self.visit(a) for a in call.args]
                fn = self.mod[target]
                if fn.get_attr("Compiler") is not None:
                    return Call(fn, args, call.attrs, call.type_args, call.span)
                if len(fn.params) != len(args):
                    raise ValueError(f"Inline: @{op.name_hint} takes {len(fn.params)} arguments "
                                     f"but is called with {len(args)}")
                return bind(fn.body, dict(zip(fn.params, args)))
        return super().visit_call(call)


def inline_globals(mod):
    """A copy of ``mod`` with the ``Inline``-marked global functions inlined into their callers."""
    return _inline_counted(mod)[0]


def _inline_counted(mod):
    """``inline_globals`` plus the number of uses inlined."""
    if not any(isinstance(f, Function) and has_nonzero_attr(f, "Inline")
               for f in mod.functions.values()):
        # nothing to inline, nothing to remove: skip the two walks of every function for
        # GlobalVar references (a second of a 100,000-node main)
        return mod.shallow_copy(), 0
    new = mod.shallow_copy()
    inlined = 0
    callees = {gv: {new.get_global_var(r.name_hint) for r in global_refs(f) if r.name_hint in new}
               for gv, f in mod.functions.items()}
    recursive = {gv for gv, cs in callees.items() if gv in cs}
    referenced = {c for cs in callees.values() for c in cs}

    def can_inline(gv) -> bool:
        fn = new.functions.get(gv)
        return (isinstance(fn, Function) and not callees.get(gv) and gv not in recursive
                and has_nonzero_attr(fn, "Inline"))

    for gv in _post_order(new, callees):
        cs = callees[gv]
        if not cs or (gv in recursive and len(cs) == 1):
            continue
        fn = new.functions[gv]
        if isinstance(fn, Function):
            inliner = _Inliner(new, gv, callees, can_inline)
            out = inliner.visit_function_body(fn)
            inlined += inliner.count
            if out is not fn:
                new.update_func(gv, out)
    still_used = {r.name_hint for f in new.functions.values() for r in global_refs(f)}
    for gv in list(new.functions):
        fn = new.functions[gv]
        if (gv in recursive or gv not in referenced or not isinstance(fn, Function)
                or not has_nonzero_attr(fn, "Inline")):
            continue
        if gv.name_hint not in still_used:
            new.remove(gv)
    return new, inlined


@register("InlineGlobals")
def Inline():  # noqa: N802 - TVM's name
    """Module pass (opt 1, named "InlineGlobals"): inline global functions marked Inline=1."""

    def run(mod, ctx):
        out, n = _inline_counted(mod)
        record_stat("inlined uses", n)
        return out

    return make_module_pass(run, opt_level=1, name="InlineGlobals")
