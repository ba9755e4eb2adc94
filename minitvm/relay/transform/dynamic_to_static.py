"""DynamicToStatic: turn ``dyn.*`` ops whose shape arguments are known into the static ops.

A shape argument counts as known when constant folding (which also folds ``shape_of`` of a
statically shaped tensor) reduces it to a constant: ``dyn.reshape(x, shape_of(y))`` becomes
``reshape(x, newshape=[...])``. Arguments are folded after the ops feeding them were made
static, so chains of dynamic ops resolve in one pass.
"""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Constant, Function
from ..expr_functor import ExprMutator
from ..op import tensor as _t
from ..op import transform as _tr
from ..op.nn import nn as _nn
from ._pass_helpers import register
from .fold_constant import fold_constant
from .function_pass import function_pass
from .infer_type import InferTypeLocal

__all__ = ["DynamicToStatic", "dynamic_to_static"]


def _ints(c: Constant) -> list[int]:
    return [int(v) for v in c.data.numpy().reshape(-1)]


def _int(c: Constant) -> int:
    return int(c.data.numpy().reshape(()))


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
    "dyn.nn.pad": ((1,), lambda c, a: _nn.pad(a[0], [tuple(int(w) for w in row) for row in
                                                     a[1].data.numpy()], a[2],
                                              c.attrs.pad_mode)),
}


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
        if m.count and out.ret_type is not None:
            # the inferred result type had '?' dimensions the static ops now know
            out = Function(out.params, out.body, None, out.type_params, out.attrs, out.span)
        return out

    return function_pass(transform, opt_level=3, name="DynamicToStatic")


