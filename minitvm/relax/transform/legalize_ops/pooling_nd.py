"""Legalization of ``nn.conv3d`` and the 1-D / 3-D pooling ops (``max_pool1d``,
``avg_pool3d``, ``adaptive_avg_pool3d``...) for layouts that are plain permutations of their
letters, output layout the input's."""

from __future__ import annotations

import warnings

from ....topi import nn_te, pooling_nd
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


def _same_layout(call, letters: str) -> bool:
    a = call.attrs
    if (a.out_layout or a.layout) != a.layout or sorted(a.layout) != sorted(letters):
        warnings.warn(f"LegalizeOps: {call.op.name} with layout {a.layout} -> {a.out_layout} "
                      "is left as it is", stacklevel=3)
        return False
    return True


def _pool(kind: str, nd: int):
    letters = "NCW" if nd == 1 else "NCDHW"

    def legalize(bb, call):
        if not _same_layout(call, letters):
            return call
        a = call.attrs
        shape = out_shape(call)
        return call_topi(bb, lambda x: pooling_nd.pool_nd(
            x, kind, list(a.pool_size), list(a.strides), list(a.dilation), list(a.padding),
            bool(a.count_include_pad), a.layout, shape), call.args[0],
            name=f"{kind}_pool{nd}d")

    return legalize


def _adaptive(nd: int):
    letters = "NCW" if nd == 1 else "NCDHW"

    def legalize(bb, call):
        if not _same_layout(call, letters):
            return call
        shape = out_shape(call)
        layout = call.attrs.layout
        return call_topi(bb, lambda x: pooling_nd.adaptive_avg_pool_nd(x, layout, shape),
                         call.args[0], name=f"adaptive_avg_pool{nd}d")

    return legalize


for _nd in (1, 3):
    register_legalize(f"relax.nn.max_pool{_nd}d", _pool("max", _nd))
    register_legalize(f"relax.nn.avg_pool{_nd}d", _pool("avg", _nd))
    register_legalize(f"relax.nn.adaptive_avg_pool{_nd}d", _adaptive(_nd))
del _nd


@register_legalize("relax.nn.conv3d")
def _conv3d(bb, call):
    a = call.attrs
    out = a.out_layout or a.data_layout
    if sorted(a.data_layout) != sorted("NCDHW") or sorted(out) != sorted(a.data_layout) or \
            sorted(a.kernel_layout) != sorted("OIDHW"):
        warnings.warn(f"LegalizeOps: nn.conv3d with layouts {a.data_layout}/{a.kernel_layout}/"
                      f"{out} is left as it is (packed layouts are not lowered)", stacklevel=2)
        return call
    dtype = out_dtype(call)
    return call_topi(bb, lambda x, w: nn_te.conv(
        x, w, list(a.strides), list(a.padding), list(a.dilation), int(a.groups), a.data_layout,
        a.kernel_layout, out, dtype), call.args[0], call.args[1], name="conv3d")
