"""FoldConstant: evaluate every operator call whose arguments are all constants.

Calls of stateful (random, side-effecting) ops are never folded; ``shape_of`` of a statically
shaped tensor folds to its shape; a let bound to a constant is substituted; an ``If`` on a
constant condition becomes its branch; a TupleGetItem of a literal tuple becomes the field.
Primitive (fused) functions are left untouched.
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ...runtime.ndarray import NDArray
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Constant, Let, Tuple, const
from ..expr_functor import ExprMutator
from .function_pass import function_pass

_NEVER_FOLD = frozenset({"device_copy", "vm.shape_of", "on_device", "annotation.stop_fusion",
                         "annotation.compiler_begin", "annotation.compiler_end"})
_SHAPE_OPS = frozenset({"shape_of", "ndarray_size"})


def _const_type(c: Constant) -> TensorType:
    return TensorType(c.data.shape, c.data.dtype)


def _literal_type(e):
    if isinstance(e, Constant):
        return _const_type(e)
    return TupleType([_literal_type(f) for f in e.fields])


def _literal_value(e):
    if isinstance(e, Constant):
        return e.data.numpy()
    return tuple(_literal_value(f) for f in e.fields)


def _is_literal(e) -> bool:
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Tuple):
            stack.extend(x.fields)
        elif not isinstance(x, Constant):
            return False
    return True


def _to_expr(value, ty):
    if isinstance(ty, TupleType):
        return Tuple([_to_expr(v, t) for v, t in zip(value, ty.fields, strict=True)])
    arr = np.asarray(value)
    if isinstance(ty, TensorType) and str(arr.dtype) != ty.dtype:
        arr = arr.astype(ty.dtype)
    return Constant(NDArray(arr))  # a fresh result: no copy needed


class ConstantFolder(ExprMutator):
    """The mutator behind FoldConstant; ``folded`` counts the calls it evaluated."""

    def __init__(self):
        super().__init__()
        self.folded = 0

    def visit_function(self, fn):
        if fn.get_attr("Primitive", 0):
            return fn
        return super().visit_function(fn)

    def visit_let(self, let):
        # walk the chain iteratively, substituting lets whose value folds to a constant
        chain, node = [], let
        while isinstance(node, Let) and node not in self.memo_map:
            chain.append(node)
            node = node.body
        kept = []
        for n in chain:
            value = self.visit(n.value)
            if _is_literal(value):
                self.memo_map[n.var] = value
            else:
                kept.append((n, self.visit(n.var), value))
        body = self.visit(node)
        for n, v, value in reversed(kept):
            body = n if (v is n.var and value is n.value and body is n.body) else Let(
                v, value, body, n.span)
        return body

    def visit_if(self, ite):
        cond = self.visit(ite.cond)
        if isinstance(cond, Constant) and cond.data.numpy().size == 1:
            return self.visit(ite.true_branch if bool(cond.data.numpy()) else ite.false_branch)
        return super().visit_if(ite)

    def visit_tuple_getitem(self, op):
        tup = self.visit(op.tuple_value)
        if isinstance(tup, Tuple):
            return tup.fields[op.index]
        return op.with_fields(tup)

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        op = new.op
        if op.name in _SHAPE_OPS:
            return self._fold_shape(new)
        if not new.args or op.name in _NEVER_FOLD or op.get_attr("TOpIsStateful"):
            return new
        if op.get_attr("TNonComputational"):
            return new
        if not all(_is_literal(a) for a in new.args):
            return new
        rel, impl = op.get_attr("FTypeRelation"), op.get_attr("FNumpy")
        if rel is None or impl is None:
            return new
        try:
            out_type = rel([_literal_type(a) for a in new.args], new.attrs)
            value = impl(new.attrs, [_literal_value(a) for a in new.args], out_type)
        except (TypeError, ValueError):
            return new  # ill-typed: leave it for the type checker to report
        self.folded += 1
        return _to_expr(value, out_type)

    def _fold_shape(self, call):
        arg = call.args[0]
        t = arg._checked_type if arg._checked_type is not None else (
            _const_type(arg) if isinstance(arg, Constant) else None)
        if not isinstance(t, TensorType) or not t.is_static():
            return call
        dtype = getattr(call.attrs, "dtype", "int32") if call.attrs is not None else "int32"
        self.folded += 1
        if call.op.name == "shape_of":
            return const(np.array(t.concrete_shape, dtype=dtype), dtype)
        return const(np.array(int(np.prod(t.concrete_shape)), dtype=dtype), dtype)


def fold_constant(expr, mod=None, fold_qnn: bool = False):
    """Fold constants in one expression (``relay.transform.FoldConstantExpr``)."""
    return ConstantFolder().visit(expr)




@register_pass("FoldConstant")
def FoldConstant(fold_qnn: bool = False):
    """Fold every call whose arguments are all constants (function pass, opt_level 2).

    Parameters
    ----------
    fold_qnn : bool
        Accepted for compatibility; there are no QNN ops to fold here.
    """

    def transform(func, mod, ctx):
        folder = ConstantFolder()
        out = folder.visit(func)
        record_stat("folded constants", folder.folded)
        return out

    return function_pass(transform, opt_level=2, name="FoldConstant")


def FoldConstantExpr(expr, mod=None, fold_qnn: bool = False):
    """Fold constants in one expression, without the pass machinery."""
    return fold_constant(expr, mod, fold_qnn)
