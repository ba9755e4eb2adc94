"""AnnotateTIROpPattern (TVM's ``relax.transform.AnnotateTIROpPattern``): every PrimFunc of the
module without a non-zero ``op_pattern`` attribute (TVM's HasNonzeroAttr: an existing 0 is
recomputed) gets one, the pattern kind its blocks show
(``tir.analysis.analyze_op_pattern_kind``: 0 elementwise, 1 broadcast, 2 injective, 3 comm
reduce, 4 out-elementwise-fusable, 8 opaque). FuseOps groups calls of PrimFuncs by it."""

from __future__ import annotations

from ...tir.analysis.op_pattern_kind import analyze_op_pattern_kind
from ...tir.function import PrimFunc
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from .utils import register

__all__ = ["AnnotateTIROpPattern", "annotate_op_pattern"]


def annotate_op_pattern(func: PrimFunc) -> PrimFunc:
    """``func`` with its ``op_pattern`` attribute (itself when it has a non-zero one)."""
    old = func.attrs.get("op_pattern") if func.attrs else None
    if old is not None and int(getattr(old, "value", old)) != 0:
        return func
    return func.with_attr("op_pattern", int(analyze_op_pattern_kind(func)))


@register("AnnotateTIROpPattern")
def AnnotateTIROpPattern():  # noqa: N802 - TVM's name
    """Module pass (opt 0): annotate each PrimFunc with its ``op_pattern`` kind."""

    def run(mod, ctx):
        out = mod.shallow_copy()
        n = 0
        for gv, func in list(mod.functions.items()):
            if isinstance(func, PrimFunc):
                new = annotate_op_pattern(func)
                if new is not func:
                    out.update_func(gv, new)
                    n += 1
        if n:
            record_stat("PrimFuncs annotated", n)
        return out

    return module_pass(run, opt_level=0, name="AnnotateTIROpPattern")
