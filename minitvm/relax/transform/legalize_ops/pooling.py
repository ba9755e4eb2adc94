"""Legalization of ``nn.max_pool2d``, ``nn.avg_pool2d`` and ``nn.adaptive_avg_pool2d`` (any
layout with H and W letters; output layout the input's)."""

from __future__ import annotations

import warnings

from ....topi import nn_te
from .common import call_topi, out_shape, register_legalize

__all__: list[str] = []


def _same_layout(call) -> bool:
    a = call.attrs
    if (a.out_layout or a.layout) != a.layout or "H" not in a.layout or "W" not in a.layout:
        warnings.warn(f"LegalizeOps: {call.op.name} with layout {a.layout} -> {a.out_layout} "
                      "is left as it is", stacklevel=3)
        return False
    return True


def _pool(kind: str):
    def legalize(bb, call):
        if not _same_layout(call):
            return call
        a = call.attrs
        shape = out_shape(call)
        return call_topi(bb, lambda x: nn_te.pool2d(
            x, kind, list(a.pool_size), list(a.strides), list(a.dilation), list(a.padding),
            bool(a.count_include_pad), a.layout, shape), call.args[0], name=f"{kind}_pool2d")

    return legalize


register_legalize("relax.nn.max_pool2d", _pool("max"))
register_legalize("relax.nn.avg_pool2d", _pool("avg"))


@register_legalize("relax.nn.adaptive_avg_pool2d")
def _adaptive_avg_pool2d(bb, call):
    if not _same_layout(call):
        return call
    shape = out_shape(call)
    layout = call.attrs.layout
    return call_topi(bb, lambda x: nn_te.adaptive_avg_pool2d(x, layout, shape), call.args[0],
                     name="adaptive_avg_pool2d")
