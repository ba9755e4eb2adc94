"""Legalization of the creation ops: full, ones, zeros (and their ``_like``), arange, tril,
triu."""

from __future__ import annotations

from ....topi import manipulation as topi_manip
from .common import call_topi, out_dtype, out_shape, prim_arg, register_legalize

__all__: list[str] = []


@register_legalize("relax.full")
def _full(bb, call):
    shape, dtype = out_shape(call), out_dtype(call)
    return call_topi(bb, lambda v: topi_manip.full(shape, dtype, v), call.args[1], name="full")


@register_legalize("relax.full_like")
def _full_like(bb, call):
    shape, dtype = out_shape(call), out_dtype(call)
    return call_topi(bb, lambda v: topi_manip.full(shape, dtype, v), call.args[1], name="full")


def _const_fill(value: int, name: str):
    def legalize(bb, call):
        shape, dtype = out_shape(call), out_dtype(call)
        return call_topi(bb, lambda: topi_manip.full(shape, dtype, value), name=name)

    return legalize


register_legalize("relax.zeros", _const_fill(0, "zeros"))
register_legalize("relax.ones", _const_fill(1, "ones"))
register_legalize("relax.zeros_like", _const_fill(0, "zeros"))
register_legalize("relax.ones_like", _const_fill(1, "ones"))


@register_legalize("relax.arange")
def _arange(bb, call):
    start, end, step = (prim_arg(call, k) for k in range(3))
    shape, dtype = out_shape(call), out_dtype(call)
    return call_topi(bb, lambda: topi_manip.arange(start, end, step, dtype, shape),
                     name="arange")


def _trilu(upper: bool):
    def legalize(bb, call):
        k = int(call.attrs.k)
        return call_topi(bb, lambda x: topi_manip.trilu(x, k, upper), call.args[0],
                         name="triu" if upper else "tril")

    return legalize


register_legalize("relax.tril", _trilu(False))
register_legalize("relax.triu", _trilu(True))
