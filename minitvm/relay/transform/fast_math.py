"""FastMath: replace exp, tanh, erf and nn.softmax by their fast approximations.

``exp -> fast_exp``, ``tanh -> fast_tanh``, ``erf -> fast_erf``, ``nn.softmax ->
nn.fast_softmax`` (attributes kept). The approximations are accurate to ``rtol=1e-5, atol=1e-5``
(TVM's bound, checked by its tests) for float32 inputs in [-88, 88] (exp) and [-10, 10]
(tanh, erf); outside those ranges fast_exp saturates. This is the one pass that changes numerics.
"""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["FastMath", "fast_math", "FAST_OPS"]

FAST_OPS = {"exp": "fast_exp", "tanh": "fast_tanh", "erf": "fast_erf",
            "nn.softmax": "nn.fast_softmax"}


class _FastMathMutator(ExprMutator):
    def __init__(self):
        super().__init__()
        self.table = {Op.get(k): Op.get(v) for k, v in FAST_OPS.items()}
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        fast = self.table.get(call.op)
        if fast is None:
            return new
        self.count += 1
        return Call(fast, new.args, new.attrs, new.type_args, call.span)


def fast_math(expr):
    """FastMath on one expression or function."""
    return _FastMathMutator().visit(expr)


@register("FastMath")
def FastMath():  # noqa: N802 - TVM's name
    """Function pass (opt 4, requires InferType): use fast approximate exp/tanh/erf/softmax."""

    def transform(func, mod, ctx):
        m = _FastMathMutator()
        out = m.visit(func)
        record_stat("fast ops substituted", m.count)
        return out

    return function_pass(transform, opt_level=4, name="FastMath", required=["InferType"],
                         needs=["typed"])
