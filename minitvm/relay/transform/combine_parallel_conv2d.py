"""CombineParallelConv2D(min_num_branches=3): conv2ds reading the same input with the same
strides, padding, dilation, layouts and kernel size become one conv2d over the concatenated
weights, and each branch takes its channels with a strided_slice."""

from __future__ import annotations

from ...ir.structural import structural_hash
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..op.layout import Layout
from ..op.nn.nn import conv2d
from ..op.transform import concatenate, strided_slice
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner


class Conv2DCombiner(ParallelOpCombiner):
    op_name = "nn.conv2d"

    def is_supported(self, call):
        a = call.attrs
        kernel = Layout(a.kernel_layout)
        return a.groups == 1 and kernel.factor_of("O") < 0 and kernel.index_of("O") >= 0 and \
            Layout(a.out_layout or a.data_layout).factor_of("C") < 0

    def key(self, call):
        a = call.attrs
        w = call.args[1]._checked_type
        kernel = Layout(a.kernel_layout)
        spatial = tuple(d for i, d in enumerate(w.shape) if i != kernel.index_of("O"))
        fields = {k: v for k, v in a.items() if k not in ("channels",)}
        return structural_hash(tuple(sorted(fields.items()))), spatial, w.dtype

    def combine(self, calls, visit):
        a = calls[0].attrs
        o_axis = Layout(a.kernel_layout).index_of("O")
        c_axis = Layout(a.out_layout or a.data_layout).index_of("C")
        widths = [int(c.args[1]._checked_type.shape[o_axis]) for c in calls]
        weight = concatenate([visit(c.args[1]) for c in calls], axis=o_axis)
        attrs = dict(a)
        attrs["channels"] = sum(widths)
        y = conv2d(visit(calls[0].args[0]), weight, **attrs)
        outs, offset = [], 0
        for w in widths:
            outs.append(strided_slice(y, begin=[offset], end=[offset + w], axes=[c_axis]))
            offset += w
        return outs


@register_pass("CombineParallelConv2d")
def CombineParallelConv2D(min_num_branches: int = 3):
    """Combine parallel conv2ds into one (function pass, opt_level 4, requires InferType)."""

    def transform(func, mod, ctx):
        c = Conv2DCombiner(min_num_branches)
        out = c.run(func)
        record_stat("combined groups", c.combined)
        return out

    return function_pass(transform, opt_level=4, name="CombineParallelConv2d",
                         required=["InferType"], needs=["typed"])
