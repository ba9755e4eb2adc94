"""Pieces shared by the two automatic-differentiation modes of ``gradient``."""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import FuncType, RelayRefType, TensorType, TupleType, TypeCall
from ..expr import Let, Tuple, Var
from ..expr_functor import ExprMutator


def grad_rule(op: Op):
    """The op's ``FPrimalGradient`` rule, or a clear error naming the op."""
    rule = op.get_attr("FPrimalGradient") if op.has_attr("FPrimalGradient") else None
    if rule is None:
        raise ValueError(f"gradient: operator {op.name} has no registered gradient "
                         "(FPrimalGradient); register one with relay.op.register_gradient")
    return rule


def differentiable(t) -> bool:
    """Whether values of type ``t`` carry gradients: float tensors, or tuples holding one."""
    if isinstance(t, TensorType):
        return t.dtype.startswith(("float", "bfloat"))
    if isinstance(t, TupleType):
        return any(differentiable(f) for f in t.fields)
    return False


def lets(bindings: list, body):
    """``let v1 = e1; ...; body`` built innermost first (no recursion)."""
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return body


class Replace(ExprMutator):
    """Replace one node (by identity) in a small expression, e.g. a recomputed forward call
    inside a gradient rule's result by the variable already holding it."""

    def __init__(self, target, replacement):
        super().__init__()
        self.target = target
        self.replacement = replacement

    def visit(self, expr):
        if expr is self.target:
            return self.replacement
        return super().visit(expr)


def bind_rule(rule, orig, out_var, out_grad):
    """Apply a gradient rule to ``orig`` and refer to ``out_var`` wherever it reuses ``orig``."""
    grads = rule(orig, out_grad)
    fixer = Replace(orig, out_var)
    return [fixer.visit(g) for g in grads]


def new_var(name: str, type_annotation=None) -> Var:
    return Var(name, type_annotation)


def ad_type(t):
    """The type of a value in reverse mode: a tensor T becomes ``(T, ref(T))``."""
    if isinstance(t, TensorType):
        return TupleType([t, RelayRefType(t)])
    if isinstance(t, TupleType):
        return TupleType([ad_type(f) for f in t.fields])
    if isinstance(t, FuncType):
        return FuncType([ad_type(a) for a in t.arg_types], ad_type(t.ret_type), t.type_params,
                        t.type_constraints)
    if isinstance(t, RelayRefType):
        return RelayRefType(ad_type(t.value))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, [ad_type(a) for a in t.args])
    return t


def tuple_of(fields) -> Tuple:
    return Tuple(list(fields))
