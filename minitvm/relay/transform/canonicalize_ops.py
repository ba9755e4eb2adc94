"""CanonicalizeOps: rewrite special operators into basic ones.

``nn.bias_add(x, b, axis)`` becomes ``add(x, expand_dims(b, 1, ndim - axis - 1))`` (no
expand_dims when ``axis`` is the last dimension), which later passes and fusion treat as a plain
broadcast add. Needs the type of ``x`` (run InferType first). A bias_add whose channel count
is symbolic stays: its type relation states that the bias length matches it, which a symbolic
kernel checks at each call (a broadcast add would silently take a bias of length 1).
"""

from __future__ import annotations

from ...ir.op import Op
from ...topi.utils import is_static_dim
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr_functor import ExprMutator
from ..op import tensor as _t
from ._pass_helpers import register
from .function_pass import function_pass
from .simplify_inference import expand_bias_to_match_axis

__all__ = ["CanonicalizeOps", "canonicalize_ops"]


class _BiasAddSimplifier(ExprMutator):
    def __init__(self):
        super().__init__()
        self.bias_add = Op.get("nn.bias_add")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if call.op is not self.bias_add:
            return new
        t = call.args[0]._checked_type
        if t is None:
            raise ValueError("CanonicalizeOps needs the type of the data of nn.bias_add; "
                             "run relay.transform.InferType() first")
        ndim = len(t.shape)
        axis = call.attrs.axis + ndim if call.attrs.axis < 0 else call.attrs.axis
        b = call.args[1]._checked_type
        if b is None or not all(is_static_dim(d) for d in (t.shape[axis], *b.shape)):
            return new  # (a broadcast add would take a bias of 1 for any channel count)
        out = _t.add(new.args[0], expand_bias_to_match_axis(new.args[1], ndim, axis))
        out._checked_type = call._checked_type
        self.count += 1
        return out


def canonicalize_ops(expr):
    """CanonicalizeOps on one (type-checked) expression or function."""
    return _BiasAddSimplifier().visit(expr)


@register("CanonicalizeOps")
def CanonicalizeOps():  # noqa: N802 - TVM's name
    """Function pass (opt 3, requires InferType): expand nn.bias_add into expand_dims + add."""

    def transform(func, mod, ctx):
        if not calls_any(func, ("nn.bias_add",)):  # (nothing to expand: the same function)
            record_stat("expanded bias_adds", 0)
            return func
        m = _BiasAddSimplifier()
        out = m.visit(func)
        record_stat("expanded bias_adds", m.count)
        return out

    return function_pass(transform, opt_level=3, name="CanonicalizeOps",
                         required=["InferType"], needs=["typed"])
