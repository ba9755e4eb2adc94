"""DivToMul: rewrite division by a floating-point constant into multiplication by its inverse.

``x / c`` becomes ``x * (1 / c)`` with the reciprocal computed once, in ``c``'s dtype. Integer
division is left alone, and so is a constant whose reciprocal is not finite (a zero, or an
underflow to inf in float16) -- TVM's rules. Multiplication is cheaper than division on most
targets; the result can differ from the division in the last bit.
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...runtime.ndarray import NDArray
from ...transform.stats import record_stat
from ..expr import Call, Constant
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["DivToMul", "div_to_mul"]


class _DivToMul(ExprMutator):
    def __init__(self):
        super().__init__()
        self.divide = Op.get("divide")
        self.multiply = Op.get("multiply")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or new.op is not self.divide:
            return new
        rhs = new.args[1]
        if not isinstance(rhs, Constant):
            return new
        c = rhs.data.numpy()
        if not np.issubdtype(c.dtype, np.floating):
            return new
        with np.errstate(divide="ignore", over="ignore"):
            inv = (np.ones((), c.dtype) / c).astype(c.dtype)
        if not np.all(np.isfinite(inv)):
            return new
        self.count += 1
        return Call(self.multiply, [new.args[0], Constant(NDArray(np.asarray(inv)))], None,
                    None, new.span)


def div_to_mul(expr):
    """DivToMul on one expression or function."""
    return _DivToMul().visit(expr)


@register("DivToMul")
def DivToMul():  # noqa: N802 - TVM's name
    """Function pass (opt 0): divide by a float constant -> multiply by its reciprocal."""

    def transform(func, mod, ctx):
        m = _DivToMul()
        out = m.visit(func)
        record_stat("divisions rewritten", m.count)
        return out

    return function_pass(transform, opt_level=0, name="DivToMul")
