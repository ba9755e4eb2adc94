"""Legalization of the elementwise unary ops (exp, sqrt, relu, ...) and ``clip``: one
``compute`` stage, as TVM's Python topi writes them."""

from __future__ import annotations

from ....tir import expr as E
from ....topi import math as topi_math
from ....topi.tensor import clip_bounds
from ...op.unary import __all__ as _UNARY_NAMES
from .common import call_topi, prim_arg, register_legalize

__all__: list[str] = []


def _make(name: str):
    def legalize(bb, call):
        return call_topi(bb, lambda x: topi_math.unary(name, x), call.args[0], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


for _name in _UNARY_NAMES:
    if _name in topi_math.UNARY_FUNCS:
        register_legalize("relax." + _name, _make(_name))


@register_legalize("relax.clip")
def _clip(bb, call):
    lo, hi = prim_arg(call, 1), prim_arg(call, 2)
    dtype = call.args[0].struct_info.dtype
    consts = isinstance(lo, E.IntImm | E.FloatImm) and isinstance(hi, E.IntImm | E.FloatImm)
    if consts:
        # constant bounds as immediates of the data's dtype (as Relay's clip: a float max of
        # an immediate needs no NaN test of its bound), saturated into an integer range (a
        # float max must not wrap around)
        lo, hi = clip_bounds(float(lo.value), float(hi.value), dtype)

    def te_func(x):
        def f(v):
            a = lo if lo.dtype == v.dtype else E.Cast(v.dtype, lo)
            b = hi if hi.dtype == v.dtype else E.Cast(v.dtype, hi)
            return E.Min(E.Max(v, a), b)

        return topi_math.elemwise(x, f)

    return call_topi(bb, te_func, call.args[0], name="clip")


