"""LambdaLift: lift local functions (closures) to global functions.

A local function without free variables becomes a global ``@lifted_name<hash>`` used in its place.
One that captures variables becomes a global taking the captured variables (freshly typed) and
returning the inner function; it is marked ``Closure=1`` and called with the captured variables
where the closure was. A let-bound recursive function calls its lifted global. Primitive (fused)
functions are left alone; inner closures are lifted before outer ones. Every variable a lifted
function binds is fresh: a match or let shared (graph form) by the closure and its enclosing
function must not bind the same variable in two global functions.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.structural import structural_equal, structural_hash
from ...ir.type import FuncType
from ...transform.stats import record_stat
from ..analysis.free_vars import bound_vars, free_type_vars, free_vars
from ..expr import Call, Function, Var, bind
from ..expr_functor import ExprMutator
from ..scoped_functor import ScopedMutator
from ._pass_helpers import has_nonzero_attr, make_module_pass, register

__all__ = ["LambdaLift", "lambda_lift"]


def _var_type(v):
    return v._checked_type if v._checked_type is not None else v.type_annotation


def _func_type_annotation(fn):
    """The FuncType spelled by ``fn``'s annotations, or None when some are missing."""
    args = [p.type_annotation for p in fn.params]
    if fn.ret_type is None or any(a is None for a in args):
        return None
    return FuncType(args, fn.ret_type, fn.type_params)


class _Renamer(ExprMutator):
    """Substitutes variables (binders included) by a mapping."""

    def __init__(self, mapping: dict):
        super().__init__()
        self.mapping = mapping

    def visit_var(self, v):
        return self.mapping.get(v, v)


def _fresh_binders(fn: Function) -> Function:
    """``fn`` with a fresh variable for each one it binds (its parameters included)."""
    mapping = {}
    for v in bound_vars(fn):
        new = Var(v.name_hint, v.type_annotation, v.span)
        new._checked_type = v._checked_type
        mapping[v] = new
    return _Renamer(mapping).visit(fn) if mapping else fn


class _LambdaLifter(ScopedMutator):
    """Lifts closures innermost first. Each is named and analysed after its body is lifted (the
    inner closures are then calls of globals), so nesting N deep costs time linear in the
    program; a recursive call is first a placeholder, bound to the global once it is named."""

    def __init__(self, mod):
        super().__init__()
        self.mod = mod
        self.nesting = 0
        self.letrec: list = []
        self.lambda_map: dict = {}

    def gen_let(self, let):
        chain = self._let_chain(let)
        parts = []
        for node in chain:
            value = node.value
            is_lambda = isinstance(value, Function) and not has_nonzero_attr(value, "Primitive")
            if is_lambda:
                self.letrec.append((node.var, value))
            try:
                parts.append((yield value))
            finally:
                if is_lambda:
                    self.letrec.pop()
        body = yield chain[-1].body
        for node, value in zip(reversed(chain), reversed(parts), strict=True):
            body = node.with_fields(value=value, body=body)
        return body

    def visit_call(self, call):
        new = super().visit_call(call)
        op = call.op
        if isinstance(op, Var) and self.letrec and op is self.letrec[-1][0]:
            target = self.lambda_map.get(op)
            if target is not None:
                return Call(target, new.args, call.attrs, call.type_args, call.span)
        return new

    def gen_function(self, fn):
        if has_nonzero_attr(fn, "Primitive"):
            return fn
        if self.nesting == 0:
            self.nesting += 1
            try:
                body = yield fn.body
            finally:
                self.nesting -= 1
            return fn if body is fn.body else fn.with_fields(body=body)
        return (yield from self._lift(fn))

    def _lift(self, fn):
        # only the function a let binds is that let's recursive function (a closure nested in
        # it that calls the let's variable captures the enclosing function's global instead)
        recursive_var = self.letrec[-1][0] if self.letrec and self.letrec[-1][1] is fn else None
        placeholder = None
        if recursive_var is not None:
            placeholder = Var(recursive_var.name_hint, recursive_var.type_annotation)
            placeholder._checked_type = recursive_var._checked_type
            self.lambda_map[recursive_var] = placeholder
        self.nesting += 1
        try:
            body = yield fn.body
        finally:
            self.nesting -= 1
        shallow = fn if body is fn.body else fn.with_fields(body=body)
        found = free_vars(shallow)
        captured = [v for v in found if v is not recursive_var and v is not placeholder]
        recursive = placeholder is not None and placeholder in found
        name = f"lifted_name{structural_hash(shallow)}"
        gv = self.mod.get_global_var(name) if name in self.mod else GlobalVar(name)
        if placeholder is not None:
            del self.lambda_map[recursive_var]
        if recursive:
            body = bind(body, {placeholder: Call(gv, list(captured)) if captured else gv})
        tvars = free_type_vars(shallow, self.mod)
        fresh = [Var(v.name_hint, _var_type(v)) for v in captured]
        if not captured and not tvars:
            lifted = fn.with_fields(body=body)
        else:
            inner = fn.with_fields(body=bind(body, dict(zip(captured, fresh, strict=True))))
            lifted = Function(fresh, inner, _func_type_annotation(fn), tvars,
                              {"Closure": 1}, fn.span)
        lifted = _fresh_binders(lifted)
        if name in self.mod:
            existing = self.mod[name]
            if not structural_equal(lifted, existing):
                raise ValueError(f"LambdaLift: lifted function hash collision for @{name}")
        else:
            self.mod[gv] = lifted
        return Call(gv, list(captured)) if captured else gv


def lambda_lift(mod):
    """A copy of ``mod`` with every local (non-primitive) function lifted to a global."""
    new = mod.shallow_copy()
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or func.get_attr("Compiler") is not None:
            continue
        out = _LambdaLifter(new).visit(func)
        if out is not func:
            new.update_func(gv, out)
    return new


@register("LambdaLift")
def LambdaLift():  # noqa: N802 - TVM's name
    """Module pass (opt 1): lift closures to global functions."""

    def run(mod, ctx):
        out = lambda_lift(mod)
        record_stat("lifted functions", len(out.functions) - len(mod.functions))
        return out

    return make_module_pass(run, opt_level=1, name="LambdaLift")
