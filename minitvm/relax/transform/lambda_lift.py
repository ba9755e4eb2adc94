"""LambdaLift (TVM's ``relax.transform.LambdaLift``): every local function (a binding
``f = R.function...`` inside a function) becomes a private global function.

- Names: the lambda's ``global_symbol`` if it has one, else ``<outer>_<var>`` (the enclosing
  global function and the bound variable), else the whole path of nested names joined by
  ``_``, else ``<outer>_<var>_<k>``; a name is taken only when no global and no other lambda
  wants it.
- A lambda without free variables is replaced by its global: the binding disappears and uses of
  the variable (calls too) refer to the global. A lambda that captures variables becomes a
  global taking them as extra trailing parameters, and the binding becomes
  ``R.make_closure(global, (captured...))``; calls of such a closure become
  ``R.invoke_pure_closure(f, (args...), sinfo_args=...)`` (``invoke_closure`` when the value
  producing the closure is impure). A recursive closure calls its global directly, passing its
  captured variables again.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..analysis.var_analysis import free_vars
from ..expr import Call, Function, If, SeqExpr, Tuple, Var, VarBinding
from ..struct_info import FuncStructInfo
from ..utils import copy_with_new_vars
from .normalize import NormalizingMutator, normalize_function
from .symbolic import SymbolicVarMutator
from .utils import register

__all__ = ["LambdaLift"]


# ----------------------------------------------------------------------------------- naming
def _global_symbol(func):
    attrs = func.attrs
    if attrs is None:
        return None
    v = attrs.get("global_symbol")
    return None if v is None else str(getattr(v, "value", v))


def _collect_lambdas(mod) -> dict:
    """id(lambda) -> (lambda, location path, public name or None), in program order."""
    found: dict = {}
    previous = {gv.name_hint for gv in mod.functions}
    public: dict = {}

    def visit_lambda(b, v, p):
        name = _global_symbol(v)
        if name is not None:
            if name in previous:
                raise ValueError(
                    f"Function {p[0]} contains a lambda with kGlobalSymbol "
                    f"(\"global_symbol\" attribute of \"{name}\"). However, the module "
                    "already contains a GlobalVar with this name. If present, the "
                    "kGlobalSymbol attribute must match the name of the GlobalVar, and "
                    "GlobalVar names must be unique across an IRModule.")
            if name in public:
                raise ValueError(
                    f"Function {p[0]} contains a lambda with kGlobalSymbol "
                    f"(\"global_symbol\" attribute of \"{name}\"). However, the function "
                    f"{public[name][0]} also contains a lambda with the same value for "
                    "kGlobalSymbol.")
            public[name] = p
        q = p + (b.var.name_hint,)
        found[id(v)] = (v, q, name)
        return q

    def walk(func, path):
        # scopes to visit, with the path of names leading to them (program order)
        stack = [(func.body, path)]
        while stack:
            e, p = stack.pop()
            if not isinstance(e, SeqExpr):
                continue
            nested = []
            for block in e.blocks:
                for b in block.bindings:
                    v = b.value
                    if isinstance(v, Function):
                        q = visit_lambda(b, v, p) if isinstance(b, VarBinding) else p
                        nested.append((v.body, q))
                    elif isinstance(v, If):
                        nested.append((v.true_branch, p))
                        nested.append((v.false_branch, p))
            stack.extend(reversed(nested))

    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            walk(func, (gv.name_hint,))
    return _assign_names(found, previous)


def _assign_names(found: dict, previous: set) -> dict:
    remaining = {k: v for k, v in found.items()}
    names: dict = {}
    unavailable = set(previous)

    def attempt(propose):
        if not remaining:
            return
        new: dict = {}
        for key, (_f, loc, public) in remaining.items():
            name = propose(loc, public)
            if name is None or name in unavailable:
                continue
            if name in new:
                new[name] = None  # not unique in this round: nobody gets it
            else:
                new[name] = key
        for name, key in new.items():
            if key is not None:
                names[key] = name
                del remaining[key]
                unavailable.add(name)

    attempt(lambda loc, public: public)
    attempt(lambda loc, public: f"{loc[0]}_{loc[-1]}")
    attempt(lambda loc, public: None if len(loc) == 2 else "_".join(loc))
    counts: dict = {}

    def fallback(loc, public):
        base = f"{loc[0]}_{loc[-1]}"
        k = counts.get(base, 0)
        counts[base] = k + 1
        return f"{base}_{k}"

    while remaining:
        before = len(remaining)
        attempt(fallback)
        if len(remaining) == before and not counts:  # pragma: no cover - defensive
            raise RuntimeError("Fallback failed to make unique names for all lifted lambdas")
    return {key: (found[key][0], name) for key, name in names.items()}


# ----------------------------------------------------------------------------------- lifting
def _op(name):
    return Op.get(name)


class _LambdaLifter(NormalizingMutator):
    def __init__(self, mod):
        super().__init__(mod)
        self.mod = mod
        self.names = _collect_lambdas(mod)
        self.current = None  # the variable the lambda being visited is bound to
        self.rebind: dict = {}  # lambda var -> global (lambdas without captures)
        self.nested_closure: dict = {}  # recursive closure var -> Call(global, captured)
        self.closures: set = set()  # globals that produce closures
        self.emitted: dict = {}  # var -> value bound in the rebuilt program
        self.lifted = 0

    # bindings ---------------------------------------------------------------------------
    def visit_var_binding_(self, binding) -> None:
        if not isinstance(binding.value, Function):
            super().visit_var_binding_(binding)
            frames = self.builder_._frames
            if frames and frames[-1].bindings:
                last = frames[-1].bindings[-1]
                self.emitted[last.var] = last.value
            return
        cache = self.current
        self.current = binding.var
        try:
            value = self.visit_expr(binding.value)
            if binding.var not in self.rebind:
                var = self.with_struct_info(binding.var, value._struct_info)
                if var is not binding.var:
                    self.set_var_remap(binding.var, var)
                self.builder_.emit_normalized(VarBinding(var, value, binding.span))
                self.emitted[var] = value
        finally:
            self.current = cache

    # lambdas ----------------------------------------------------------------------------
    def visit_function_(self, op: Function):
        if self.current is None or id(op) not in self.names:
            return super().visit_function_(op)
        lam_var = self.current
        _, name = self.names[id(op)]
        captured, recursive = [], False
        for v in free_vars(op):
            if v is lam_var:
                recursive = True
            else:
                captured.append(v)
        is_closure = bool(captured)
        typed = [Var(v.name_hint, v._struct_info, v.span) for v in captured]
        params = [self.visit_var_def(p) for p in op.params] + typed
        gvar = GlobalVar(name)
        fsinfo = op._struct_info
        if is_closure or fsinfo is None:
            ret = fsinfo.ret if isinstance(fsinfo, FuncStructInfo) else op.ret_struct_info
            fsinfo = FuncStructInfo([p._struct_info for p in params], ret, op.is_pure)
        gvar._checked_type = fsinfo
        if recursive and is_closure:
            self.nested_closure[lam_var] = Call(gvar, list(captured))
        if not is_closure:
            self.rebind[lam_var] = gvar
        body = self.visit_with_new_scope(op.body)
        ret = body._struct_info
        if captured:
            body = SymbolicVarMutator(self.mod, None, dict(zip(captured, typed))).visit_expr(
                body)
        if params == list(op.params) and body is op.body and ret is op.ret_struct_info:
            lifted = op
        else:
            lifted = Function(params, body, ret, op.is_pure, op.attrs, op.span)
        # fresh variables: the symbolic dims the lambda shares with its enclosing function
        # (``n`` of both signatures) belong to one function of a module only
        lifted = copy_with_new_vars(normalize_function(lifted, self.builder_._mod))
        if is_closure or self._is_closure(lifted):
            self.closures.add(gvar)
        gvar._checked_type = lifted._struct_info
        self.builder_.update_func(gvar, lifted)
        self.lifted += 1
        if is_closure:
            return Call(_op("relax.make_closure"), [gvar, Tuple(list(captured))])
        return gvar

    # uses -------------------------------------------------------------------------------
    def visit_var_(self, op):
        g = self.rebind.get(op)
        if g is not None:
            return g
        return self.var_remap_.get(op, op)

    visit_dataflow_var_ = visit_var_

    def visit_call_(self, op: Call):
        call = op
        if isinstance(call.op, Var):
            var = call.op
            bound = self.emitted.get(self.var_remap_.get(var, var))
            if isinstance(bound, Call) and self._is_closure(var):
                pure = self._producer_is_pure(bound)
                name = "relax.invoke_pure_closure" if pure else "relax.invoke_closure"
                call = Call(_op(name), [var, Tuple(list(call.args))], None,
                            [op._checked_type] if op._checked_type is not None else [])
        if isinstance(call.op, Var) and call.op in self.nested_closure:
            nested = self.nested_closure[call.op]
            call = Call(nested.op, list(call.args) + list(nested.args), call.attrs,
                        call.sinfo_args, call.span)
        return super().visit_call_(call)

    @staticmethod
    def _producer_is_pure(call: Call) -> bool:
        if isinstance(call.op, Op):
            return bool(call.op.get_attr("FPurity"))
        s = call.op._checked_type
        if isinstance(s, FuncStructInfo):
            return s.purity
        raise ValueError(f"Could not determine purity of call to {call.op}")

    def _is_closure(self, val, _depth=0) -> bool:
        seen = set()
        while True:
            if id(val) in seen or _depth > 10000:
                return False
            seen.add(id(val))
            if isinstance(val, Var):
                bound = self.emitted.get(self.var_remap_.get(val, val))
                if bound is None:
                    return False
                val = bound
                continue
            if isinstance(val, Call):
                op = val.op
                if isinstance(op, Var | GlobalVar):
                    val = op
                    continue
                return isinstance(op, Op) and op.name == "relax.make_closure"
            if isinstance(val, GlobalVar):
                if val in self.closures:
                    return True
                func = self.builder_._mod.functions.get(val) \
                    if val in self.builder_._mod.functions else None
                if isinstance(func, Function):
                    val = func.body
                    continue
                return False
            if isinstance(val, Function):
                val = val.body
                continue
            if isinstance(val, SeqExpr):
                val = val.body
                continue
            return False

    def lift(self):
        for gv, func in list(self.mod.functions.items()):
            if isinstance(func, Function):
                new = self.visit_expr(func)
                if new is not func:
                    new = normalize_function(new, self.builder_._mod)
                    self.builder_.update_func(gv, new)
        return self.builder_._mod


@register("LambdaLift")
def LambdaLift():  # noqa: N802 - TVM's name
    """Module pass (opt 1): lift local functions to private global functions."""

    def run(mod, ctx):
        lifter = _LambdaLifter(mod)
        if not lifter.names:
            return mod
        out = lifter.lift()
        if lifter.lifted:
            record_stat("functions lifted", lifter.lifted)
        return out

    return module_pass(run, opt_level=1, name="LambdaLift",
                       needs=["relax_normalized"], keeps=["relax_normalized"])
