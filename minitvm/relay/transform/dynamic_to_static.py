"""DynamicToStatic: turn ``dyn.*`` ops whose shape arguments are known into the static ops.

A shape argument counts as known when constant folding (which also folds ``shape_of`` of a
statically shaped tensor) reduces it to a constant: ``dyn.reshape(x, shape_of(y))`` becomes
``reshape(x, newshape=[...])``. Arguments are folded after the ops feeding them were made
static, so chains of dynamic ops resolve in one pass. As in TVM, the pass (opt level 2) ends by
constant-folding the whole function and drops its return-type annotation.
"""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Constant, Function
from ..expr_functor import ExprMutator
from ..op import image as _img
from ..op import indexing as _ix
from ..op import tensor as _t
from ..op import transform as _tr
from ..op.algorithm import TopKAttrs
from ..op.nn import _pool_nd as _nd
from ..op.nn import nn as _nn
from ._pass_helpers import register
from .fold_constant import fold_constant
from .function_pass import function_pass
from .infer_type import InferTypeLocal

__all__ = ["DynamicToStatic", "dynamic_to_static", "shape_arguments"]


def _ints(c: Constant) -> list[int]:
    return [int(v) for v in c.data.numpy().reshape(-1)]


def _int(c: Constant) -> int:
    return int(c.data.numpy().reshape(()))


def _scalar(c: Constant) -> float:
    return c.data.numpy().reshape(-1)[0].item()


def _topk(c, a):
    at = c.attrs
    return Call(Op.get("topk"), [a[0]], TopKAttrs(k=int(_scalar(a[1])), axis=int(at.axis),
                                                  ret_type=at.ret_type,
                                                  is_ascend=bool(at.is_ascend), dtype=at.dtype))


def _resize2d(c, a):
    at = c.attrs
    return _img.resize2d(a[0], _ints(a[1]), [float(r) for r in a[2].data.numpy().reshape(-1)],
                         at.layout, at.method, at.coordinate_transformation_mode,
                         at.rounding_method, at.cubic_alpha, at.cubic_exclude,
                         at.extrapolation_value, at.out_dtype)


def _dtype(attrs, default):
    return getattr(attrs, "dtype", None) or default


# op name -> (argument positions that must be constant, rewrite(call, args) -> static call)
_RULES = {
    "dyn.reshape": ((1,), lambda c, a: _tr.reshape(a[0], _ints(a[1]),
                                                   bool(c.attrs.allowzero))),
    "dyn.broadcast_to": ((1,), lambda c, a: _tr.broadcast_to(a[0], _ints(a[1]))),
    "dyn.tile": ((1,), lambda c, a: _tr.tile(a[0], _ints(a[1]))),
    "dyn.full": ((1,), lambda c, a: _t.full(a[0], _ints(a[1]), _dtype(
        c.attrs, a[0].checked_type.dtype if a[0]._checked_type is not None else "float32"))),
    "dyn.zeros": ((0,), lambda c, a: _t.zeros(_ints(a[0]), _dtype(c.attrs, "float32"))),
    "dyn.ones": ((0,), lambda c, a: _t.ones(_ints(a[0]), _dtype(c.attrs, "float32"))),
    "dyn.strided_slice": ((1, 2, 3), lambda c, a: _tr.strided_slice(
        a[0], _ints(a[1]), _ints(a[2]), _ints(a[3]), slice_mode=c.attrs.slice_mode)),
    "dyn.expand_dims": ((1,), lambda c, a: _tr.expand_dims(a[0], _int(a[1]),
                                                           int(c.attrs.num_newaxis))),
    "dyn.one_hot": ((3,), lambda c, a: _tr.one_hot(a[0], a[1], a[2], _int(a[3]),
                                                   int(c.attrs.axis), _dtype(c.attrs, None)
                                                   or a[1].checked_type.dtype)),
    "dyn.nn.pad": ((1, 2), lambda c, a: _nn.pad(a[0], [tuple(int(w) for w in row) for row in
                                                        a[1].data.numpy()], a[2],
                                                 c.attrs.pad_mode)),
    "dyn.squeeze": ((1,), lambda c, a: _tr.squeeze(a[0], _ints(a[1]))),
    "dyn.topk": ((1,), _topk),
    "dyn.sparse_to_dense": ((3,), lambda c, a: _ix.sparse_to_dense(a[0], _ints(a[3]), a[1],
                                                                   a[2])),
    "dyn.nn.upsampling": ((1, 2), lambda c, a: _nn.upsampling(
        a[0], _scalar(a[1]), _scalar(a[2]), c.attrs.layout, c.attrs.method,
        bool(c.attrs.align_corners))),
    "dyn.nn.upsampling3d": ((1, 2, 3), lambda c, a: _nd.upsampling3d(
        a[0], _scalar(a[1]), _scalar(a[2]), _scalar(a[3]), c.attrs.layout, c.attrs.method,
        c.attrs.coordinate_transformation_mode)),
    "dyn.image.resize2d": ((1, 2), _resize2d),
}


def shape_arguments(call: Call) -> list:
    """The arguments of ``call`` that must be constants for this pass to make it static (a
    ``dyn.reshape``'s new shape); none for an op it does not rewrite."""
    rule = _RULES.get(getattr(call.op, "name", None)) if isinstance(call.op, Op) else None
    if rule is None:
        return []
    return [call.args[i] for i in rule[0] if i < len(call.args)]


class _DynamicToStatic(ExprMutator):
    def __init__(self, mod=None):
        super().__init__()
        self.mod = mod
        self.count = 0

    def _known(self, arg):
        if isinstance(arg, Constant):
            return arg
        try:
            InferTypeLocal(arg, self.mod)
        except (TypeError, ValueError):
            return None
        folded = fold_constant(arg, self.mod)
        return folded if isinstance(folded, Constant) else None

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        rule = _RULES.get(new.op.name)
        if rule is None:
            return new
        positions, build = rule
        if len(new.args) <= max(positions):
            return new
        args = list(new.args)
        for i in positions:
            known = self._known(args[i])
            if known is None:
                return new
            args[i] = known
        for i, a in enumerate(args):
            if i not in positions and a._checked_type is None:
                try:
                    InferTypeLocal(a, self.mod)
                except (TypeError, ValueError):
                    pass
        self.count += 1
        return build(new, args)


def dynamic_to_static(expr, mod=None):
    """DynamicToStatic on one expression or function."""
    return _DynamicToStatic(mod).visit(expr)


@register("DynamicToStatic")
def DynamicToStatic():  # noqa: N802 - TVM's name
    """Function pass (opt 3): dyn.* ops with constant shape arguments become static ops."""

    def transform(func, mod, ctx):
        m = _DynamicToStatic(mod)
        out = m.visit(func)
        record_stat("dynamic ops made static", m.count)
        # TVM folds the whole function at the end (a constant `if` condition picks its branch)
        # and leaves the return type unannotated: it had '?' dimensions the static ops now know
        out = fold_constant(out, mod)
        InferTypeLocal(out, mod)
        out = fold_constant(out, mod)
        return Function(out.params, out.body, None, out.type_params, out.attrs, out.span)

    return function_pass(transform, opt_level=2, name="DynamicToStatic")


