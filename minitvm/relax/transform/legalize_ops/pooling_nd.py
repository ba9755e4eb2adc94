"""Legalization of ``nn.conv3d`` and the 1-D / 3-D pooling ops (``max_pool1d``,
``avg_pool3d``, ``adaptive_avg_pool3d``...) for layouts that are plain permutations of their
letters, output layout the input's."""

from __future__ import annotations

import warnings

from ....topi import nn_nd, nn_te, pooling_nd
from ...expr import Constant, const
from .common import call_topi, out_dtype, out_shape, register_legalize
from .convolution import tie_channels

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


def _static_float32(sinfo) -> bool:
    shape = getattr(sinfo, "shape", None)
    values = getattr(shape, "values", None)
    return getattr(sinfo, "dtype", None) == "float32" and values is not None and all(
        isinstance(getattr(v, "value", None), int) for v in values)


@register_legalize("relax.nn.conv3d")
def _conv3d(bb, call):
    a = call.attrs
    out = a.out_layout or a.data_layout
    if sorted(a.data_layout) != sorted("NCDHW") or sorted(out) != sorted(a.data_layout) or \
            sorted(a.kernel_layout) != sorted("OIDHW"):
        warnings.warn(f"LegalizeOps: nn.conv3d with layouts {a.data_layout}/{a.kernel_layout}/"
                      f"{out} is left as it is (packed layouts are not lowered)", stacklevel=2)
        return call
    call = tie_channels(bb, call)
    dtype = out_dtype(call)
    data, weight = call.args
    folded = (a.data_layout, a.kernel_layout, out) == ("NCDHW", "OIDHW", "NCDHW") and \
        int(a.groups) == 1 and dtype == "float32" and all(
            _static_float32(v.struct_info) for v in (data, weight))
    kd = None
    if folded and isinstance(weight, Constant) and weight.data.numpy().ndim == 5:
        # a bound weight: reshaped to conv2d's (O, C*KD, KH, KW) here, once (the kernel then
        # reads it as a constant 4-d conv weight, which the VM prepacks)
        w = weight.data.numpy()
        kd = w.shape[2]
        weight = const(w.reshape(w.shape[0], -1, *w.shape[3:]))

    def conv3d(x, w):
        # NCDHW / OIDHW, one group, float32, static shapes: one conv2d over the depth folded
        # into the batch (the conv2d schedules); otherwise the direct N-d conv
        if folded:
            fast = nn_nd.conv3d_folded(x, w, list(a.strides), list(a.padding),
                                       list(a.dilation), dtype, kernel_depth=kd)
            if fast is not None:
                return fast
        return nn_te.conv(x, w, list(a.strides), list(a.padding), list(a.dilation),
                          int(a.groups), a.data_layout, a.kernel_layout, out, dtype)

    return call_topi(bb, conv3d, data, weight, name="conv3d")
