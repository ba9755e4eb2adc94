"""DefuseOps: inline every call of a Primitive (fused) function back into its caller."""

from __future__ import annotations

from ..expr import Call, Function
from ..expr_functor import ExprMutator


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
