"""AlterOpLayout: let each op's ``FTVMAlterOpLayout`` hook replace it (typically with a
blocked-layout variant such as NCHW16c) and insert the layout transforms this needs."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..analysis.op_names import op_names
from ..expr import Call
from .function_pass import function_pass
from .layout_rewrite import LayoutRewriter


def _alter(call, attrs, args):
    """The op's FTVMAlterOpLayout hook's call (TVM's CallWithNewLayouts); the op as it was,
    with ``attrs``, when there is no hook or it returns None."""
    hook = call.op.get_attr("FTVMAlterOpLayout")
    new = None
    if hook is not None:
        tinfos = [a._checked_type for a in call.args]
        new = hook(attrs, list(args), tinfos, call._checked_type)
    if new is None:
        return Call(call.op, args, attrs, None, call.span)
    if not isinstance(new, Call):
        raise TypeError(f"AlterOpLayout: the {call.op.name} hook must return a call, got "
                        f"{type(new).__name__}")
    return new


def alter_op_layout(func):
    """Rewrite one type-checked function through the registered alter-layout hooks."""
    rw = LayoutRewriter(_alter, alter=True)
    return rw.visit(func), rw.inserted


def _nothing_to_alter(func) -> bool:
    """Whether ``func`` calls only elementwise and broadcast operators without an alter hook:
    their layout rules only pass on the layouts of their inputs, and with no operator that
    defines one every layout stays undefined, so the rewriter keeps every call as it is."""
    ops = op_names(func)
    for name in ops:
        op = Op.get(name)
        pattern = op.get_attr("TOpPattern")
        if op.get_attr("FTVMAlterOpLayout") is not None or pattern is None or \
                pattern > OpPattern.BROADCAST:
            return False
    return True


@register_pass("AlterOpLayout")
def AlterOpLayout():
    """Alter op layouts through FTVMAlterOpLayout hooks (function pass, opt_level 3)."""

    def transform(func, mod, ctx):
        if _nothing_to_alter(func):
            record_stat("layout transforms inserted", 0)
            return func
        out, inserted = alter_op_layout(func)
        record_stat("layout transforms inserted", inserted)
        return out

    return function_pass(transform, opt_level=3, name="AlterOpLayout", required=["InferType"],
                         needs=["typed"])
