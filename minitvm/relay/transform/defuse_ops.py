"""DefuseOps: inline every call of a Primitive (fused) function back into its caller."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Function
from ..expr_functor import ExprMutator
from .function_pass import function_pass


class _Substitute(ExprMutator):
    def __init__(self, binds: dict):
        super().__init__()
        self.memo_map.update(binds)


class _Defuser(ExprMutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        fn = new.op if isinstance(new, Call) else None
        if isinstance(fn, Function) and fn.get_attr("Primitive", 0):
            self.count += 1
            body = _Defuser().visit(fn.body)
            return _Substitute(dict(zip(fn.params, new.args, strict=True))).visit(body)
        return new


def defuse_ops(expr):
    """Return ``expr`` with every fused primitive function call inlined."""
    return _Defuser().visit(expr)


@register_pass("DefuseOps")
def DefuseOps():
    """Inline fused Primitive functions back into their callers (function pass, opt_level 3)."""

    def transform(func, mod, ctx):
        d = _Defuser()
        out = d.visit(func)
        record_stat("defused functions", d.count)
        return out

    return function_pass(transform, opt_level=3, name="DefuseOps", required=["InferType"],
                         needs=["typed"], breaks=["fused"])
