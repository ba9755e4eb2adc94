"""SplitGroupedConv: a conv of two or three wide groups runs as one groups-1 conv per group on
its slice of the input channels, the outputs concatenated along the channels.

The groups-1 convs take the fastest conv schedules (Winograd for 3x3 stride-1 filters with a
constant weight, the tuned ``conv_lanes`` tiles otherwise), which a grouped conv does not: it
runs as its groups side by side in ``conv_lanes``' direct form, and with few, wide groups that
loses to the split form. Measured on an AMD EPYC Zen 4 (one thread, thread CPU time, a loaded
machine, median of 7 interleaved rounds), 3x3 / 1 conv + bias, grouped -> split, ms: 2 groups
of 32 channels at 32x32 0.503 -> 0.159 (ONNX Runtime 0.358), 2 of 64 at 16x16 0.333 -> 0.138,
2 of 128 at 8x8 0.291 -> 0.175, 3 of 32 at 32x32 0.750 -> 0.239, 3 of 64 at 16x16 0.496 ->
0.206; 2 groups of 32 with the weight computed in the graph (a hypernetwork's dynamic conv)
0.749 -> 0.347 (ONNX Runtime 0.501). Where the split does not pay it is not applied: 4 groups
of 16 or 32 channels (0.171 -> 0.181, 0.173 -> 0.174), 8 groups of 64 (0.299 -> 0.306), 2 groups
of 16 (0.086 -> 0.091); 3 groups of 16 (RegNet's first stage, 0.393 -> 0.310) is left too, to
keep one threshold (the whole regnet_like measured 0.996x with it split).

The conv must be a float32 NCHW / OIHW conv with ``MIN_GROUPS`` to ``MAX_GROUPS`` groups of at
least ``MIN_GROUP_CHANNELS`` input and output channels each (depthwise-like convs keep their own
schedules); its weight may be a constant (sliced here) or computed (sliced in the graph).
"""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType
from ...transform.stats import record_stat
from ..expr import Call, Constant, const
from ..expr_functor import ExprMutator
from ..op.nn.nn import conv2d
from ..op.transform import concatenate, strided_slice
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["SplitGroupedConv", "split_grouped_conv"]

MIN_GROUPS, MAX_GROUPS = 2, 3
MIN_GROUP_CHANNELS = 32


def _shape(e) -> tuple | None:
    try:
        t = e.checked_type
    except (AttributeError, ValueError):
        return None
    if not isinstance(t, TensorType) or str(t.dtype) != "float32":
        return None
    try:
        return tuple(int(d) for d in t.shape)
    except TypeError:
        return None


def splits(call) -> bool:
    """Does this pass split ``call``?"""
    if not isinstance(call, Call) or getattr(call.op, "name", "") != "nn.conv2d":
        return False
    a = call.attrs
    g = int(a.groups)
    if not MIN_GROUPS <= g <= MAX_GROUPS:
        return False
    if (str(a.data_layout) != "NCHW" or str(a.kernel_layout) != "OIHW" or
            str(a.out_layout or "NCHW") != "NCHW" or str(a.out_dtype or "float32") != "float32"):
        return False
    xs, ws, ys = _shape(call.args[0]), _shape(call.args[1]), _shape(call)
    if xs is None or ws is None or ys is None or len(xs) != 4 or len(ws) != 4:
        return False
    return (xs[1] % g == 0 and ws[0] % g == 0 and ws[0] // g >= MIN_GROUP_CHANNELS
            and xs[1] // g >= MIN_GROUP_CHANNELS)


class _Split(ExprMutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_call(self, call):
        if not splits(call):
            return super().visit_call(call)
        data, weight = self.visit(call.args[0]), self.visit(call.args[1])
        a = call.attrs
        g = int(a.groups)
        c, o = _shape(call.args[0])[1] // g, _shape(call.args[1])[0] // g
        w = call.args[1].data.numpy() if isinstance(call.args[1], Constant) else None
        outs = []
        for k in range(g):
            x = strided_slice(data, [k * c], [(k + 1) * c], axes=[1])
            wk = const(np.ascontiguousarray(w[k * o:(k + 1) * o]), str(w.dtype)) \
                if w is not None else strided_slice(weight, [k * o], [(k + 1) * o], axes=[0])
            outs.append(conv2d(x, wk, strides=a.strides, padding=a.padding,
                               dilation=a.dilation, groups=1, channels=o,
                               kernel_size=a.kernel_size, data_layout="NCHW",
                               kernel_layout="OIHW", out_layout=a.out_layout,
                               out_dtype=a.out_dtype))
        self.count += 1
        return concatenate(outs, axis=1)


def split_grouped_conv(func):
    """SplitGroupedConv on one function: ``(function, convs split)``."""
    m = _Split()
    return m.visit(func), m.count


@register("SplitGroupedConv")
def SplitGroupedConv():  # noqa: N802 - the pass factory's name, as TVM names passes
    """Function pass (opt 3): a conv of two or three wide groups as one conv per group."""

    def transform(func, mod, ctx):
        if func.attrs is not None and (func.attrs.get("Primitive", 0) or
                                       func.attrs.get("Compiler")):
            return func
        out, count = split_grouped_conv(func)
        record_stat("grouped convs split", count)
        return out

    return function_pass(transform, opt_level=3, name="SplitGroupedConv", required=["InferType"],
                         needs=["typed"])
