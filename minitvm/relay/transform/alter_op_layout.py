"""AlterOpLayout: let each op's ``FTVMAlterOpLayout`` hook replace it (typically with a
blocked-layout variant such as NCHW16c) and insert the layout transforms this needs."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from .function_pass import function_pass
from .layout_rewrite import LayoutRewriter


def _alter(call, args, tinfos):
    hook = call.op.get_attr("FTVMAlterOpLayout")
    if hook is None:
        return None
    return hook(call.attrs, args, tinfos, call._checked_type)


def alter_op_layout(func):
    """Rewrite one type-checked function through the registered alter-layout hooks."""
    rw = LayoutRewriter(_alter)
    return rw.visit(func), rw.inserted


@register_pass("AlterOpLayout")
def AlterOpLayout():
    """Alter op layouts through FTVMAlterOpLayout hooks (function pass, opt_level 3)."""

    def transform(func, mod, ctx):
        out, inserted = alter_op_layout(func)
        record_stat("layout transforms inserted", inserted)
        return out

    return function_pass(transform, opt_level=3, name="AlterOpLayout", required=["InferType"],
                         needs=["typed"])
