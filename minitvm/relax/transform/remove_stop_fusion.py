"""RemoveStopFusion (minitvm's; TVM's Relax has no ``stop_fusion``): every ``y =
R.stop_fusion(x)`` binding goes, ``y``'s uses reading ``x`` (a block output keeps its name as
``y = x``). FuseOps does this after grouping, once the barriers have done their work; the
lowering pipeline runs it too, for programs built without FuseOps, before memory planning
(which must not see two names for one tensor as two tensors)."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import DataflowVar, Function, VarBinding
from .function_pass import function_pass
from .normalize import NormalizingMutator
from .utils import iter_bindings, register

__all__ = ["RemoveStopFusion", "remove_stop_fusion", "is_stop_fusion"]


def is_stop_fusion(value) -> bool:
    op = getattr(value, "op", None)
    return isinstance(op, Op) and op.name == "relax.stop_fusion"


class _Strip(NormalizingMutator):
    def __init__(self, mod=None):
        super().__init__(mod)
        self.removed = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if not is_stop_fusion(binding.value):
            super().visit_var_binding_(binding)
            return
        self.removed += 1
        data = self.visit_expr(binding.value.args[0])
        if isinstance(binding.var, DataflowVar):
            self.set_var_remap(binding.var, data)  # later uses read ``data``
        else:  # a block output: the name stays, bound to the value
            self.builder_.emit_normalized(VarBinding(binding.var, data, binding.span))


def remove_stop_fusion(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` without its ``stop_fusion`` bindings; and how many there were."""
    if not any(is_stop_fusion(b.value) for b in iter_bindings(func)):
        return func, 0  # nothing to strip: a scan, not a rebuild of every binding
    m = _Strip(mod)
    out = m.visit_expr(func)
    return (out if m.removed else func), m.removed


@register("RemoveStopFusion")
def RemoveStopFusion():  # noqa: N802 - a pass factory, named as TVM's are
    """Function pass (opt 0): drop the ``R.stop_fusion`` barriers (see the module docstring)."""

    def transform(func, mod, ctx):
        out, n = remove_stop_fusion(func, mod)
        if n:
            record_stat("fusion barriers removed", n)
        return out

    return function_pass(transform, opt_level=0, name="RemoveStopFusion")
