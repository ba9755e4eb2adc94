"""DecomposeOpsForInference (TVM's ``relax.transform.DecomposeOpsForInference``): composite
operators whose inference-time result is plain arithmetic are rewritten into it, so later
passes (fusion, constant folding of the statistics) see the arithmetic.

``R.nn.batch_norm(x, gamma, beta, mean, var, axis, epsilon, center, scale)`` becomes the
tuple ``((x - mean') / sqrt(var' + epsilon) * gamma' + beta', mean, var)`` where ``t'`` is
the 1-D statistic expanded to ``x``'s rank along ``axis`` (the ``* gamma'`` only with
``scale``, the ``+ beta'`` only with ``center``), as TVM decomposes it: the moving statistics
are used and returned unchanged."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Tuple, const
from ..op import binary, unary
from ..op.manipulate import expand_dims
from ..struct_info import TensorStructInfo
from .function_pass import function_pass
from .normalize import NormalizingMutator
from .utils import register

__all__ = ["DecomposeOpsForInference"]


class _Decompose(NormalizingMutator):
    def __init__(self, mod=None):
        super().__init__(mod)
        self.changed = 0

    def visit_call_(self, op: Call):
        call = super().visit_call_(op)
        if not (isinstance(call.op, Op) and call.op.name == "relax.nn.batch_norm"):
            return call
        x, gamma, beta, mean, var = call.args
        sinfo = x.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.ndim < 0:
            return call  # the rank is needed to expand the statistics
        a = call.attrs
        axis = a.axis if a.axis >= 0 else a.axis + sinfo.ndim
        others = [k for k in range(sinfo.ndim) if k != axis]
        emit = self.builder_.emit

        def expand(t):
            return emit(expand_dims(t, others)) if others else t

        eps = const(a.epsilon, sinfo.dtype)
        out = emit(binary.divide(emit(binary.subtract(x, expand(mean))),
                                 emit(unary.sqrt(emit(binary.add(expand(var), eps))))))
        if a.scale:
            out = emit(binary.multiply(out, expand(gamma)))
        if a.center:
            out = emit(binary.add(out, expand(beta)))
        self.changed += 1
        return Tuple([out, mean, var])


@register("DecomposeOpsForInference")
def DecomposeOpsForInference(func_name: str | None = None):  # noqa: N802 - TVM's name
    """Function pass (opt 0): rewrite batch_norm into its inference arithmetic, in every
    function or only in ``func_name``."""

    def transform(func, mod, ctx):
        if func_name is not None:
            gv = next((g for g, f in mod.functions.items() if f is func), None)
            if gv is None or gv.name_hint != func_name:
                return func
        m = _Decompose(mod)
        out = m.visit_expr(func)
        if not m.changed:
            return func
        record_stat("batch_norms decomposed", m.changed)
        return out

    return function_pass(transform, opt_level=0, name="DecomposeOpsForInference")
