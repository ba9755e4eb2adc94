"""FirstOrderGradient(): replace every function of the module by its first-order gradient.

TVM v0.19's module pass (opt 0) behind ``gradient(mode="first_order")``: each Relay function
``fn(params) -> T`` becomes ``fn(params) -> (T, (dparams...))``, the result paired with the
gradient of the sum of its elements (a ones seed) with respect to each parameter; the new
function has that return type annotated and no attributes or type parameters. Several functions
are transformed independently (with a warning, as TVM); a non-Relay function is skipped with a
warning (TVM warns and then crashes). Polymorphic functions, closures, ``if``, references and
calls of anything but an operator are errors. The differentiation itself is
``gradient.first_order_gradient`` (our let-chain form, not TVM's statement order).
"""

from __future__ import annotations

import warnings

from ...ir.type import TupleType
from ...transform.stats import record_stat
from ..expr import Function
from ._pass_helpers import make_module_pass, register
from .gradient import first_order_gradient
from .infer_type import InferTypeLocal

__all__ = ["FirstOrderGradient", "first_order_gradient_module"]


def _grad_ret_type(func: Function) -> TupleType:
    """TVM's GradRetType: ``(result type, (parameter types...))``."""
    ret = func.checked_type.ret_type
    return TupleType([ret, TupleType([p.checked_type for p in func.params])])


def first_order_gradient_module(mod):
    """A copy of ``mod`` whose Relay functions are replaced by their first-order gradients."""
    if len(mod.functions) > 1:
        warnings.warn("FirstOrderGradient: the module holds several global functions; each "
                      "is differentiated independently", stacklevel=3)
    out = mod.shallow_copy()
    count = 0
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function):
            warnings.warn(f"FirstOrderGradient: @{gv.name_hint} is not a Relay function; "
                          "skipped", stacklevel=3)
            continue
        if func.type_params:
            raise TypeError(f"FirstOrderGradient: @{gv.name_hint} is polymorphic; first-order "
                            "AD does not support type parameters")
        InferTypeLocal(func, mod)
        grad = first_order_gradient(func, mod)
        out.update_func(gv, Function(grad.params, grad.body, _grad_ret_type(func), [], None,
                                     func.span))
        count += 1
    record_stat("differentiated functions", count)
    return out


@register("FirstOrderGradient")
def FirstOrderGradient():  # noqa: N802 - TVM's name
    """Module pass (opt 0): each function becomes ``fn(params) -> (result, (gradients...))``."""
    return make_module_pass(lambda mod, ctx: first_order_gradient_module(mod), opt_level=0,
                            name="FirstOrderGradient")
