"""Legalization of where, argmax and argmin."""

from __future__ import annotations

from ....topi import manipulation as topi_manip
from ....topi import reduction as topi_red
from .common import call_topi, out_shape, register_legalize
from .statistical import checked_nonempty

__all__: list[str] = []


@register_legalize("relax.where")
def _where(bb, call):
    shape = out_shape(call)
    return call_topi(bb, lambda c, a, b: topi_manip.where(c, a, b, shape), *call.args,
                     name="where")


def _arg(kind: str):
    fn = topi_red.argmax if kind == "max" else topi_red.argmin

    def legalize(bb, call):
        axis, keep = call.attrs.axis, bool(call.attrs.keepdims)
        axis = None if axis is None else int(axis)
        res = call_topi(bb, lambda x: fn(x, axis, keep), call.args[0], name=f"arg{kind}")
        return checked_nonempty(bb, call, None if axis is None else [axis], res)

    return legalize


register_legalize("relax.argmax", _arg("max"))
register_legalize("relax.argmin", _arg("min"))
