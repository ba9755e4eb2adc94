"""FoldConstant: evaluate every operator call whose arguments are all constants.

As TVM's pass: calls of stateful (random, side-effecting) ops and of non-computational ops
(annotations; ``qnn.*`` unless ``fold_qnn``) are never folded; ``shape_of`` / ``ndarray_size`` of
a statically shaped tensor fold to a constant; a let bound to a constant is substituted (with the
``on_device`` annotation wrapping it, if any); an ``If`` on a constant condition becomes its
branch; a TupleGetItem of a literal tuple becomes the field (re-wrapped in the tuple's
``on_device``). ``on_device`` around a constant does not stop folding. Calls inside primitive
(fused) functions are left untouched.

Where TVM v0.19 is wrong we differ on purpose: ``shape_of`` of a rank-0 tensor folds to the
empty shape ``[]`` (TVM builds a rank-0 constant, which does not match the op's type) and
``ndarray_size`` of a rank-0 tensor folds to 1 (TVM folds it to 0).
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ...runtime.ndarray import NDArray
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Constant, Let, Tuple, const
from ..scoped_functor import ScopedMutator
from .function_pass import function_pass

_NEVER_FOLD = frozenset({"device_copy", "on_device", "annotation.stop_fusion",
                         "annotation.compiler_begin", "annotation.compiler_end"})
_SHAPE_OPS = frozenset({"shape_of", "vm.shape_of", "ndarray_size"})


def _on_device_body(e):
    """``e`` with an ``on_device`` annotation around it removed (TVM's AsIgnoringOnDevice)."""
    if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "on_device":
        return e.args[0]
    return e


def _is_simple_constant(e) -> bool:
    """A Constant, possibly wrapped in ``on_device``."""
    return isinstance(_on_device_body(e), Constant)


def _const_type(c: Constant) -> TensorType:
    return TensorType(c.data.shape, c.data.dtype)


def _literal_type(e):
    e = _on_device_body(e)
    if isinstance(e, Constant):
        return _const_type(e)
    return TupleType([_literal_type(f) for f in e.fields])


def _literal_value(e):
    e = _on_device_body(e)
    if isinstance(e, Constant):
        return e.data.numpy()
    return tuple(_literal_value(f) for f in e.fields)


def _is_literal(e) -> bool:
    """A constant or a (nested) tuple of constants, any of them wrapped in ``on_device``
    (TVM's IsComplexConstant)."""
    stack = [e]
    while stack:
        x = _on_device_body(stack.pop())
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


class ConstantFolder(ScopedMutator):
    """The mutator behind FoldConstant; ``folded`` counts the calls it evaluated."""

    def __init__(self, fold_qnn: bool = False):
        super().__init__()
        self.folded = 0
        self.fold_qnn = fold_qnn
        self._inside_primitive = False

    def gen_function(self, fn):
        if not fn.get_attr("Primitive", 0):
            return (yield from self.base_gen_function(fn))
        # as TVM: inside a primitive function calls stay as they are (lets, ifs and tuple
        # projections around them are still simplified)
        outer, self._inside_primitive = self._inside_primitive, True
        try:
            return (yield from self.base_gen_function(fn))
        finally:
            self._inside_primitive = outer

    def gen_let(self, let):
        # walk the chain iteratively, substituting lets whose value folds to a constant
        chain, node = [], let
        while isinstance(node, Let) and node not in self.memo_map:
            chain.append(node)
            node = node.body
        kept = []
        for n in chain:
            value = yield n.value
            if _is_simple_constant(value):
                self.memo_map[n.var] = value
            else:
                kept.append((n, (yield n.var), value))
        body = yield node
        for n, v, value in reversed(kept):
            body = n if (v is n.var and value is n.value and body is n.body) else Let(
                v, value, body, n.span)
        return body

    def visit_if(self, ite):
        cond = _on_device_body(self.visit(ite.cond))
        if isinstance(cond, Constant) and cond.data.numpy().size == 1:
            return self.visit(ite.true_branch if bool(cond.data.numpy()) else ite.false_branch)
        return super().visit_if(ite)

    def visit_tuple_getitem(self, op):
        tup = self.visit(op.tuple_value)
        inner = _on_device_body(tup)
        if isinstance(inner, Tuple):
            field = inner.fields[op.index]
            if inner is tup:
                return field
            # on_device((x, y), D).1 ==> on_device(y, D)
            return Call(tup.op, [field], tup.attrs, tup.type_args, tup.span)
        return op.with_fields(tup)

    def visit_call(self, call):
        if self._inside_primitive:
            return call
        new = super().visit_call(call)
        if not isinstance(new, Call) or not isinstance(new.op, Op) or not new.args:
            return new
        op = new.op
        literal = all(_is_literal(a) for a in new.args)
        if not literal and op.name not in _SHAPE_OPS:
            return new  # (every check below leaves it: skip their op attribute lookups)
        if op.get_attr("TOpIsStateful"):
            return new
        if op.name in _SHAPE_OPS:
            return self._fold_shape(call, new)
        if op.name in _NEVER_FOLD:
            return new
        if op.get_attr("TNonComputational") and not (
                self.fold_qnn and op.get_attr("FTVMQnnCanonicalize") is not None):
            return new
        if not literal:
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

    def _fold_shape(self, pre, call):
        """``shape_of``/``ndarray_size`` of a tensor of static shape (the type of the argument
        before rewriting, as TVM reads it, or of the rewritten argument)."""
        t = None
        for arg in (pre.args[0], call.args[0]):
            body = _on_device_body(arg)
            if isinstance(body, Constant):
                t = _const_type(body)
            elif arg._checked_type is not None:
                t = arg._checked_type
            if t is not None:
                break
        if not isinstance(t, TensorType) or not t.is_static():
            return call
        dtype = getattr(call.attrs, "dtype", "int32") if call.attrs is not None else "int32"
        self.folded += 1
        if call.op.name != "ndarray_size":
            return const(np.array(t.concrete_shape, dtype=dtype), dtype)
        return const(np.array(int(np.prod(t.concrete_shape)), dtype=dtype), dtype)


def fold_constant(expr, mod=None, fold_qnn: bool = False):
    """Fold constants in one expression (``relay.transform.FoldConstantExpr``)."""
    return ConstantFolder(fold_qnn).visit(expr)




@register_pass("FoldConstant")
def FoldConstant(fold_qnn: bool = False):
    """Fold every call whose arguments are all constants (function pass, opt_level 2).

    Parameters
    ----------
    fold_qnn : bool
        Also fold ``qnn.*`` calls whose arguments are all constants (TVM folds them only then,
        as they are non-computational until canonicalized).
    """

    def transform(func, mod, ctx):
        folder = ConstantFolder(fold_qnn)
        out = folder.visit(func)
        record_stat("folded constants", folder.folded)
        return out

    return function_pass(transform, opt_level=2, name="FoldConstant")


def FoldConstantExpr(expr, mod=None, fold_qnn: bool = False):
    """Fold constants in one expression, without the pass machinery."""
    return fold_constant(expr, mod, fold_qnn)
