"""SplitArgs(max_function_args): split concatenates with more inputs than a target allows
into a concatenate of concatenates, so no fused function exceeds the argument limit."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Tuple
from ..expr_functor import ExprMutator
from .function_pass import function_pass


class _Splitter(ExprMutator):
    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.concat = Op.get("concatenate")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if (self.limit <= 1 or not isinstance(new, Call) or new.op is not self.concat
                or not isinstance(new.args[0], Tuple)):
            return new
        fields = list(new.args[0].fields)
        if len(fields) < self.limit:
            return new
        self.count += 1
        step = self.limit - 1  # one argument slot is the output
        parts = [Call(self.concat, [Tuple(fields[i:i + step])], new.attrs)
                 for i in range(0, len(fields), step)]
        while len(parts) > step:
            parts = [Call(self.concat, [Tuple(parts[i:i + step])], new.attrs)
                     for i in range(0, len(parts), step)]
        return Call(self.concat, [Tuple(parts)], new.attrs, new.type_args, new.span)


def split_args(func, max_function_args: int):
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
