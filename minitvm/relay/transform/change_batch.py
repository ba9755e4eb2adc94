"""ChangeBatch(data, batch_size=16): rewrite the batch dimension of chosen parameters.

``data`` maps parameters (``relay.Var``) to the index of their batch dimension; each is replaced
by a var of the same name whose annotation has ``batch_size`` there. The function's return type
annotation is dropped so that InferType (run after every function pass) recomputes it.
"""

from __future__ import annotations

from ...ir.type import TensorType
from ...transform.stats import record_stat
from ..expr import Function, Var
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["ChangeBatch"]


@register("ChangeBatch")
@function_pass(opt_level=1, name="ChangeBatch")
class ChangeBatch:
    """Change the batch size of the given parameters (a class-form function pass, opt 1).

    Parameters
    ----------
    data : Dict[relay.Var, int]
        The parameters to change and, for each, which dimension holds the batch.
    batch_size : int
        The batch size to change to.
    """

    def __init__(self, data, batch_size: int = 16):
        self.data = dict(data)
        self.batch_size = batch_size

    def transform_function(self, func, mod, ctx):
        func = Function(func.params, func.body, None, func.type_params, func.attrs, func.span)
        data, size = self.data, self.batch_size
        changed = []

        class _Mutator(ExprMutator):
            def visit_var(self, var):
                if var not in data:
                    return var
                ty = var.type_annotation
                if not isinstance(ty, TensorType):
                    raise TypeError(f"ChangeBatch: %{var.name_hint} has no tensor type "
                                    "annotation to change")
                shape = list(ty.shape)
                shape[data[var]] = size
                changed.append(var)
                return Var(var.name_hint, TensorType(shape, ty.dtype))

        out = _Mutator().visit(func)
        record_stat("changed parameters", len(changed))
        return out
