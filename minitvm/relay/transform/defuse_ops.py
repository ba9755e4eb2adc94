"""DefuseOps: the inverse of FuseOps — every call of a function literal is replaced by the
function's body with the parameters replaced by the arguments (``x == DefuseOps(FuseOps(x))``).

As in TVM this applies to any called function literal, not only ``Primitive`` ones, whatever its
body (a call, a tuple, a tuple projection). TVM maps parameters to arguments by name and stops when
two parameters share a name; here they are mapped by identity, so such functions are inlined
correctly too.
"""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Function
from ..expr_functor import ExprMutator
from .function_pass import function_pass


class _Substitute(ExprMutator):
    """Rebuilds a function body with its parameters bound to the call's arguments."""

    def __init__(self, binds: dict):
        super().__init__()
        self.memo_map.update(binds)


class _Defuser(ExprMutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)  # the function literal's body is defused already
        fn = new.op if isinstance(new, Call) else None
        if not isinstance(fn, Function):
            return new
        if len(fn.params) != len(new.args):
            raise ValueError(f"DefuseOps: a function of {len(fn.params)} parameters is called "
                             f"with {len(new.args)} arguments")
        self.count += 1
        return _Substitute(dict(zip(fn.params, new.args))).visit(fn.body)


def defuse_ops(expr):
    """Return ``expr`` with every call of a function literal inlined."""
    return _Defuser().visit(expr)


@register_pass("DefuseOps")
def DefuseOps():
    """Inline called function literals (fused groups) into their callers (function pass, 3)."""

    def transform(func, mod, ctx):
        d = _Defuser()
        out = d.visit(func)
        record_stat("defused functions", d.count)
        return out

    return function_pass(transform, opt_level=3, name="DefuseOps", required=["InferType"],
                         needs=["typed"], breaks=["fused"])
