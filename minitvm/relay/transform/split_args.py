"""SplitArgs(max_function_args): split a concatenate whose kernel would take more arguments
than the target allows (TVM v0.19's form).

A kernel takes one argument per input and one for the output; a tensor with ``Any`` dims also
passes its shape and strides (an input: ``any dims + rank`` more, the output: ``rank`` more).
When the inputs need at least ``max_function_args`` minus the output's share, the inputs are
concatenated in a left-leaning chain: each link is
``concatenate(stop_fusion(Tuple([previous link, next inputs...])))``, every link filling the
limit, so FuseOps keeps each link a kernel of its own. ``0`` (or less) means no limit.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.prim_expr import Any
from ...ir.type import TensorType
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Tuple
from ..expr_functor import ExprMutator
from .function_pass import function_pass


def _dynamic_extra(ty, is_output: bool) -> int:
    """Extra kernel arguments for a tensor with Any dims: its shape and strides."""
    if not isinstance(ty, TensorType):
        return 0
    n_any = sum(isinstance(d, Any) for d in ty.shape)
    if n_any == 0:
        return 0
    return len(ty.shape) if is_output else n_any + len(ty.shape)


class _Splitter(ExprMutator):
    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.concat = Op.get("concatenate")
        self.stop = Op.get("annotation.stop_fusion")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or new.op is not self.concat \
                or not isinstance(new.args[0], Tuple):
            return new
        out_ty = call._checked_type
        outputs = 1 + _dynamic_extra(out_ty, True)
        if self.limit <= outputs:
            raise ValueError(f"SplitArgs: max_function_args={self.limit} leaves no room for the "
                             f"inputs of a concatenate whose output takes {outputs} arguments")
        limit = self.limit - outputs
        old_fields = call.args[0].fields
        fields = list(new.args[0].fields)
        costs = [1 + _dynamic_extra(f._checked_type, False) for f in old_fields]
        if sum(costs) < limit:
            return new
        self.count += 1
        link, used = [], 0
        for f, cost in zip(fields, costs, strict=True):
            if used + cost > limit:
                chained = self._link(link, new)
                link, used = [chained], cost  # the previous link is one more argument
            used += cost
            link.append(f)
        return self._link(link, new)

    def _link(self, fields, concat):
        return Call(self.concat, [Call(self.stop, [Tuple(fields)])], concat.attrs)


def split_args(func, max_function_args: int):
    """``func`` with its concatenates split for ``max_function_args`` (needs checked types)."""
    return _Splitter(max_function_args).visit(func) if max_function_args > 0 else func


@register_pass("SplitArgs")
def SplitArgs(max_function_args: int = 0):
    """Split concatenates with too many inputs (function pass, opt_level 1); 0 = no limit."""

    def transform(func, mod, ctx):
        if max_function_args <= 0:
            return func
        m = _Splitter(max_function_args)
        out = m.visit(func)
        record_stat("split concatenates", m.count)
        return out

    return function_pass(transform, opt_level=1, name="SplitArgs", required=["InferType"],
                         needs=["typed"])
