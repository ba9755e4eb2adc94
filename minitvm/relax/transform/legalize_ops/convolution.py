"""Legalization of ``nn.conv1d`` / ``nn.conv2d`` (any layout letters, groups, dilation) and
``nn.conv1d_transpose`` / ``nn.conv2d_transpose`` (NC[H]W data, IO[H]W kernels)."""

from __future__ import annotations

import warnings

from ....topi import nn_te
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


def _plain_layouts(call, spatial: str) -> bool:
    """Whether the layouts are plain permutations of their letters (packed layouts such as
    NCHW4c are not lowered here: the call is left as it is, with a warning)."""
    a = call.attrs
    out = a.out_layout or a.data_layout
    ok = (sorted(a.data_layout) == sorted("NC" + spatial) and sorted(out) == sorted(a.data_layout)
          and sorted(a.kernel_layout) == sorted("OI" + spatial))
    if not ok:
        warnings.warn(f"LegalizeOps: {call.op.name} with layouts {a.data_layout}/"
                      f"{a.kernel_layout}/{out} is left as it is (packed layouts are not "
                      "lowered)", stacklevel=3)
    return ok


def _conv(name: str):
    spatial = "W" if name == "conv1d" else "HW"

    def legalize(bb, call):
        a = call.attrs
        if not _plain_layouts(call, spatial):
            return call
        dtype = out_dtype(call)
        return call_topi(bb, lambda x, w: nn_te.conv(
            x, w, list(a.strides), list(a.padding), list(a.dilation), int(a.groups),
            a.data_layout, a.kernel_layout, a.out_layout or a.data_layout, dtype),
            call.args[0], call.args[1], name=name)

    return legalize


register_legalize("relax.nn.conv1d", _conv("conv1d"))
register_legalize("relax.nn.conv2d", _conv("conv2d"))


def _conv_transpose(name: str, data_layout: str, kernel_layout: str):
    def legalize(bb, call):
        a = call.attrs
        if a.data_layout != data_layout or a.kernel_layout != kernel_layout or \
                (a.out_layout or data_layout) != data_layout:
            warnings.warn(f"LegalizeOps: {name} is lowered for {data_layout}/{kernel_layout} "
                          f"only; a call with {a.data_layout}/{a.kernel_layout} is left as it "
                          "is", stacklevel=2)
            return call
        shape, dtype = out_shape(call), out_dtype(call)
        return call_topi(bb, lambda x, w: nn_te.conv_transpose(
            x, w, list(a.strides), list(a.padding), list(a.output_padding), list(a.dilation),
            int(a.groups), shape, dtype), call.args[0], call.args[1], name=name)

    return legalize


register_legalize("relax.nn.conv1d_transpose",
                  _conv_transpose("conv1d_transpose", "NCW", "IOW"))
register_legalize("relax.nn.conv2d_transpose",
                  _conv_transpose("conv2d_transpose", "NCHW", "IOHW"))
