"""Legalize: replace op calls by what the op's registered legalize hook returns.

For each call of an op with a ``legalize_map_attr_name`` attribute (``FTVMLegalize`` by default,
registered with ``relay.op.register_legalize``), the hook is called as
``fn(attrs, new_args, arg_types)`` where ``arg_types`` holds the checked types of the arguments
followed by the call's own type. A returned expression replaces the call; None keeps it. Hooks
may read ``tvm.target.Target.current()`` to act per target. Needs types (InferType first).

Difference from TVM: a hook may return any expression, not only a call.
"""

from __future__ import annotations

from ...ir.expr import RelayExpr
from ...ir.op import Op
from ...transform.stats import record_stat
from ..analysis.op_names import calls_op_with_attr
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["Legalize", "legalize", "legalize_transform"]


class _Legalizer(ExprMutator):
    def __init__(self, attr_name: str):
        super().__init__()
        self.attr_name = attr_name
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        op = call.op
        if not isinstance(op, Op):
            return new
        hook = op.get_attr(self.attr_name)
        if hook is None:
            return new
        types = [a._checked_type for a in call.args] + [call._checked_type]
        if any(t is None for t in types):
            raise ValueError(f"Legalize needs the types of the call of {op.name} and its "
                             "arguments; run relay.transform.InferType() first")
        out = hook(call.attrs, list(new.args), types)
        if out is None:
            return new
        if not isinstance(out, RelayExpr):
            raise TypeError(f"the {self.attr_name} hook of {op.name} returned "
                            f"{type(out).__name__}, expected a Relay expression or None")
        self.count += 1
        return out


def legalize(expr, legalize_map_attr_name: str = "FTVMLegalize"):
    """Legalize one (type-checked) expression or function."""
    return _Legalizer(legalize_map_attr_name).visit(expr)


def legalize_transform(attr_name: str):
    """The per-function body of a legalize pass; records the "legalized calls" statistic."""

    def transform(func, mod, ctx):
        if not calls_op_with_attr(func, attr_name):  # (no op with a hook: the same function)
            record_stat("legalized calls", 0)
            return func
        m = _Legalizer(attr_name)
        out = m.visit(func)
        record_stat("legalized calls", m.count)
        return out

    return transform


@register("Legalize")
def Legalize(legalize_map_attr_name: str = "FTVMLegalize"):  # noqa: N802 - TVM's name
    """Function pass (opt 1, requires InferType): apply the ops' legalize hooks.

    Parameters
    ----------
    legalize_map_attr_name : str
        The op attribute holding the legalize function.
    """
    return function_pass(legalize_transform(legalize_map_attr_name), opt_level=1,
                         name="Legalize", required=["InferType"], needs=["typed"])
