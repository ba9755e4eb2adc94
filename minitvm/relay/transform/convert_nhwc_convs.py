"""ConvertNHWCConvs: a function with NHWC ``nn.conv2d`` calls (TFLite's and TensorFlow's
layout, as ``from_tflite`` imports them) is moved to NCHW whole by ConvertLayout
(``{"nn.conv2d": ["NCHW", "default"]}``), before Legalize.

Only NCHW / OIHW convs have native kernels, so Legalize gives each NHWC conv a transform of its
input to NCHW and of its output back; the bias add and activation between two convs then sit
between two transforms, which neither cancel nor fuse with the convs (a MobileNetV2-like model
at 112x112 spent 16% of its time in them). ConvertLayout carries NCHW through those ops
instead: one transform at the input, one where the layout ends. minitvm's own pass (opt_level
3): TVM keeps NHWC and computes it with NHWC kernels.

A function holding ``nn.space_to_batch_nd`` (TensorFlow's dilated conv, flattened by
FlattenAtrousConv in the conv's own layout) is left as it is."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..analysis.properties import walk
from ..expr import Call
from ._pass_helpers import register
from .convert_layout import convert_layout
from .function_pass import function_pass

__all__ = ["ConvertNHWCConvs", "convert_nhwc_convs"]

_DESIRED = {"nn.conv2d": ["NCHW", "default"]}


def _wants_conversion(func) -> bool:
    """Does ``func`` call an NHWC conv2d, and no space_to_batch_nd?"""
    nhwc = False
    for e in walk(func, enter=lambda f: f is func):
        if isinstance(e, Call) and isinstance(e.op, Op):
            if e.op.name == "nn.space_to_batch_nd":
                return False
            if e.op.name == "nn.conv2d" and str(e.attrs.data_layout) == "NHWC":
                nhwc = True
    return nhwc


def convert_nhwc_convs(func):
    """(function, layout transforms inserted): ``func`` in NCHW when it has NHWC convs."""
    if not _wants_conversion(func):
        return func, 0
    return convert_layout(func, _DESIRED)


@register("ConvertNHWCConvs")
def ConvertNHWCConvs():  # noqa: N802 - the pass factory's name, as TVM names passes
    """Function pass (opt 3): NHWC conv2d models to NCHW by ConvertLayout."""

    def transform(func, mod, ctx):
        if func.attrs is not None and (func.attrs.get("Primitive", 0) or
                                       func.attrs.get("Compiler")):
            return func
        out, inserted = convert_nhwc_convs(func)
        record_stat("layout transforms inserted", inserted)
        return out

    return function_pass(transform, opt_level=3, name="ConvertNHWCConvs",
                         required=["InferType"], needs=["typed"])
