"""RemovePurityChecking (TVM's ``relax.transform.RemovePurityChecking``): every pure Relax
function (nested ones included) gets ``"relax.force_pure": True`` — no purity check is done on
it any more — and the purity overrides become the plain calls they stand for:
``R.call_pure_packed(f, args, sinfo_args)`` -> ``R.call_packed(f, args, sinfo_args)`` and
``R.invoke_pure_closure`` -> ``R.invoke_closure``. Run before lowering passes that emit impure
calls into functions still declared pure."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Function
from .function_pass import function_pass
from .normalize import NormalizingMutator
from .utils import register

__all__ = ["RemovePurityChecking", "remove_purity_checking"]

FORCE_PURE = "relax.force_pure"


class _Unwrap(NormalizingMutator):
    """Adds the force-pure attribute and unwraps the purity overrides, counting the changes."""

    def __init__(self, mod=None):
        super().__init__(mod)
        self.changed = 0

    def visit_call_(self, op: Call):
        call = super().visit_call_(op)
        if not isinstance(call.op, Op):
            return call
        if call.op.name == "relax.call_pure_packed":
            self.changed += 1
            new = Call(call.args[0], list(call.args[1:]), call.attrs, list(call.sinfo_args),
                       call.span)
        elif call.op.name == "relax.invoke_pure_closure":
            self.changed += 1
            new = Call(Op.get("relax.invoke_closure"), list(call.args), call.attrs,
                       list(call.sinfo_args), call.span)
        else:
            return call
        new._checked_type = op._checked_type
        return new

    def visit_function_(self, op: Function):
        func = super().visit_function_(op)
        if func.is_pure and not (func.attrs or {}).get(FORCE_PURE):
            self.changed += 1
            func = func.with_attr(FORCE_PURE, True)
        return func


def remove_purity_checking(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` with purity checking removed (see the module docstring); and the number of
    functions marked plus calls unwrapped."""
    m = _Unwrap(mod)
    out = m.visit_expr(func)
    return (out if m.changed else func), m.changed


@register("RemovePurityChecking")
def RemovePurityChecking():  # noqa: N802 - TVM's name
    """Function pass (opt 0): mark pure functions ``relax.force_pure`` and unwrap
    ``call_pure_packed`` / ``invoke_pure_closure``."""

    def transform(func, mod, ctx):
        out, n = remove_purity_checking(func, mod)
        if n:
            record_stat("purity overrides removed", n)
        return out

    return function_pass(transform, opt_level=0, name="RemovePurityChecking")
