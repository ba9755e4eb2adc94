"""EliminateCommonSubexpr: reuse an earlier call with the same op, attrs and arguments.

Arguments match when they are the same node, or equal scalar constants. Stateful ops, calls
with no arguments and whatever ``fskip(expr)`` returns True for are kept. TupleGetItems of the
same tuple and index are shared too.
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.structural import structural_equal
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Constant, TupleGetItem
from ..scoped_functor import ScopedMutator
from .function_pass import function_pass


def _same_arg(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, Constant) and isinstance(b, Constant):
        x, y = a.data.numpy(), b.data.numpy()
        return x.ndim == 0 and y.ndim == 0 and x.dtype == y.dtype and bool(np.array_equal(x, y))
    return False


def _arg_key(a):
    if isinstance(a, Constant) and a.data.ndim == 0:
        return ("scalar", a.data.dtype, a.data.numpy().item())
    return id(a)


class CommonSubexprEliminator(ScopedMutator):
    """The mutator behind EliminateCommonSubexpr; ``eliminated`` counts the reused calls."""

    def __init__(self, fskip=None):
        super().__init__()
        self.fskip = fskip
        self.calls: dict[tuple, list[Call]] = {}
        self.items: dict[tuple, TupleGetItem] = {}
        self.eliminated = 0

    def gen_function(self, fn):
        if fn.get_attr("Primitive", 0):
            return fn
        return (yield from self.base_gen_function(fn))

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or not new.args:
            return new
        if isinstance(new.op, Op) and new.op.get_attr("TOpIsStateful"):
            return new
        if self.fskip is not None and self.fskip(new):
            return new
        key = (id(new.op), tuple(_arg_key(a) for a in new.args))
        for cand in self.calls.get(key, ()):
            if cand.op is new.op and all(_same_arg(a, b) for a, b in zip(cand.args, new.args)) \
                    and _attrs_equal(cand.attrs, new.attrs):
                self.eliminated += 1
                return cand
        self.calls.setdefault(key, []).append(new)
        return new

    def visit_tuple_getitem(self, op):
        new = super().visit_tuple_getitem(op)
        if not isinstance(new, TupleGetItem):
            return new
        key = (id(new.tuple_value), new.index)
        cand = self.items.get(key)
        if cand is not None:
            self.eliminated += 1
            return cand
        self.items[key] = new
        return new


def _attrs_equal(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    return structural_equal(a, b)


def eliminate_common_subexpr(expr, fskip=None):
    """Run common-subexpression elimination on one expression."""
    return CommonSubexprEliminator(fskip).visit(expr)




@register_pass("EliminateCommonSubexpr")
def EliminateCommonSubexpr(fskip=None):
    """Reuse earlier identical calls (function pass, opt_level 3, requires InferType).

    Parameters
    ----------
    fskip : Callable[[Expr], bool], optional
        Calls for which it returns True are never replaced or reused.
    """

    def transform(func, mod, ctx):
        cse = CommonSubexprEliminator(fskip)
        out = cse.visit(func)
        record_stat("eliminated expressions", cse.eliminated)
        return out

    return function_pass(transform, opt_level=3, name="EliminateCommonSubexpr",
                         required=["InferType"], needs=["typed"])
