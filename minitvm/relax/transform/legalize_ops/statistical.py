"""Legalization of the reductions: sum, max, min, prod (one ``<x>_red`` stage), mean
(sum then ``T_divide``), variance and std."""

from __future__ import annotations

from ....tir import op as tir_op
from ....topi import math as topi_math
from ....topi import reduction as topi_red
from .common import call_topi, register_legalize

__all__: list[str] = []


def _axes(call):
    axis = call.attrs.axis
    return None if axis is None else [int(a) for a in axis]


def _make(name: str, fn):
    def legalize(bb, call):
        axes, keep = _axes(call), bool(call.attrs.keepdims)
        return call_topi(bb, lambda x: fn(x, axes, keep), call.args[0], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _std(x, axes, keep):
    return topi_math.elemwise(topi_red.variance(x, axes, keep), tir_op.sqrt)


for _name, _fn in (("sum", topi_red.sum), ("max", topi_red.max), ("min", topi_red.min),
                   ("prod", topi_red.prod), ("mean", topi_red.mean),
                   ("variance", topi_red.variance), ("std", _std)):
    register_legalize("relax." + _name, _make(_name, _fn))
