"""A mutator that substitutes symbolic (TIR) variables everywhere in a Relax function — the
struct info of every variable, shape and prim values, call struct-info arguments, match_cast
patterns, return struct info — and optionally Relax variables (TVM's ExprBinder / ``Bind``).
Used by BindParams, BindSymbolicVars and CanonicalizeBindings."""

from __future__ import annotations

from ..expr import (
    Call,
    DataflowVar,
    Function,
    MatchCast,
    PrimValue,
    ShapeExpr,
    Var,
)
from .normalize import NormalizingMutator
from .utils import substitute_prim, substitute_sinfo

__all__ = ["SymbolicVarMutator", "bind"]


class SymbolicVarMutator(NormalizingMutator):
    """Replace TIR variables by ``self.lookup_prim(var)`` (None: keep) and Relax variables by
    ``relax_map[var]``; parameters found in ``relax_map`` are dropped from their function."""

    def __init__(self, mod=None, prim_map=None, relax_map=None):
        super().__init__(mod)
        self.prim_map = dict(prim_map or {})
        self.relax_map = dict(relax_map or {})

    # ------------------------------------------------------------------ substitution
    def lookup_prim(self, var):
        return self.prim_map.get(var)

    def _active(self) -> bool:
        return bool(self.prim_map)

    def prim(self, e):
        if not self._active():
            return e
        return substitute_prim(e, self.lookup_prim)

    def sinfo(self, s):
        if s is None:
            return None
        if not self._active() and not self.var_remap_ and not self.relax_map:
            return s
        return substitute_sinfo(s, self.lookup_prim if self._active() else _none,
                                self._shape_var)

    def _shape_var(self, v):
        rep = self.relax_map.get(v)
        if rep is not None:
            return rep
        return self.var_remap_.get(v)

    # ------------------------------------------------------------------ variables
    def _new_def(self, var):
        s = self.sinfo(var._struct_info)
        if s is var._struct_info:
            return var
        new = type(var)(var.name_hint, s, var.span)
        self.set_var_remap(var, new)
        return new

    def visit_var_def_(self, var: Var) -> Var:
        return self._new_def(var)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> DataflowVar:
        return self._new_def(var)

    def visit_var_(self, op):
        rep = self.relax_map.get(op)
        if rep is not None:
            return self.visit_expr(rep) if not isinstance(rep, Var) else rep
        return self.var_remap_.get(op, op)

    visit_dataflow_var_ = visit_var_

    # ------------------------------------------------------------------ leaves with prims
    def visit_shape_expr_(self, op: ShapeExpr):
        if not self._active():
            return op
        values = [self.prim(v) for v in op.values]
        if all(a is b for a, b in zip(values, op.values)):
            return op
        return ShapeExpr(values, op.span)

    def visit_prim_value_(self, op: PrimValue):
        v = self.prim(op.value)
        return op if v is op.value else PrimValue(v, op.span)

    # ------------------------------------------------------------------ composites
    def visit_call_(self, op: Call):
        new = super().visit_call_(op)
        sargs = [self.sinfo(s) for s in op.sinfo_args]
        if all(a is b for a, b in zip(sargs, op.sinfo_args)):
            return new
        return Call(new.op, new.args, new.attrs, sargs, new.span)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        sinfo = self.sinfo(binding.struct_info)
        var = binding.var
        if sinfo is not binding.struct_info:
            var = type(var)(var.name_hint, sinfo, var.span)
            self.set_var_remap(binding.var, var)
        else:
            var = self.visit_var_def(var)
        if value is binding.value and var is binding.var and sinfo is binding.struct_info:
            self.builder_.emit_normalized(binding)
            return
        self.builder_.emit_normalized(MatchCast(var, value, sinfo, binding.span))

    def visit_function_(self, op: Function):
        params = []
        changed = False
        for p in op.params:
            if p in self.relax_map:
                changed = True
                continue
            q = self.visit_var_def(p)
            changed |= q is not p
            params.append(q)
        body = self.visit_with_new_scope(op.body)
        ret = self.sinfo(op.ret_struct_info)
        if not changed and body is op.body and ret is op.ret_struct_info:
            return op
        if ret is None:
            ret = body._struct_info
        return Function(params, body, ret, op.is_pure, op.attrs, op.span)


def _none(_v):
    return None


def bind(func: Function, relax_map=None, prim_map=None, mod=None) -> Function:
    """TVM's ``relax.Bind``: replace parameters / variables and symbolic variables."""
    from .normalize import normalize_function

    m = SymbolicVarMutator(mod, prim_map, relax_map)
    return normalize_function(m.visit_expr(func), mod)
