"""CombineParallelConv2D(min_num_branches=3): conv2ds reading the same input with the same
strides, padding, dilation, layouts and kernel size become one conv2d over the concatenated
weights, and each branch takes its channels with a strided_slice."""

from __future__ import annotations

from ...ir.structural import structural_hash
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call
from ..op.layout import Layout
from ..op.nn.nn import conv2d
from ..op.transform import concatenate, strided_slice
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner, dims_eq, same_shape


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

    @staticmethod
    def _channel_pos(call) -> int:
        a = call.attrs
        return Layout(a.out_layout or a.data_layout).index_of("C")

    @staticmethod
    def _channels(call) -> int:
        return int(call.args[1]._checked_type.shape[Layout(call.attrs.kernel_layout)
                                                    .index_of("O")])

    def combine_root(self, calls, visit):
        a = calls[0].attrs
        o_axis = Layout(a.kernel_layout).index_of("O")
        weight = concatenate([visit(c.args[1]) for c in calls], axis=o_axis)
        attrs = dict(a)
        attrs["channels"] = sum(self._channels(c) for c in calls)
        return conv2d(visit(calls[0].args[0]), weight, **attrs)

    def is_arg_compatible(self, a, b, index):
        pos = self._root_channel_pos
        ta, tb = a.args[index]._checked_type, b.args[index]._checked_type
        oa, ob = a._checked_type, b._checked_type
        if ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape):
            return False
        arg_pos = pos - len(oa.shape) + len(ta.shape)
        if arg_pos < 0 or not (dims_eq(ta.shape[arg_pos], oa.shape[pos])
                               and dims_eq(tb.shape[arg_pos], ob.shape[pos])):
            return False  # the channel dim must be present, not broadcast
        return same_shape(a.args[index], b.args[index], skip=arg_pos)

    def combine_following(self, data, branches, depth, parent_index, visit):
        call = branches[0][depth]
        ndim = len(call._checked_type.shape)
        args = []
        for i, arg in enumerate(call.args):
            if i == parent_index:
                args.append(data)
                continue
            axis = self._root_channel_pos - ndim + len(arg._checked_type.shape)
            args.append(concatenate([visit(b[depth].args[i]) for b in branches], axis=axis))
        return Call(call.op, args, call.attrs)

    def split(self, data, branches, depth):
        pos = self._root_channel_pos
        outs, index = [], 0
        for br in branches:
            channels = self._channels(br[0])
            # TVM's split: size-mode slices, -1 ("to the end") before the channel axis
            outs.append(strided_slice(data, begin=[0] * pos + [index], end=[-1] * pos + [channels],
                                      strides=[1] * (pos + 1), slice_mode="size"))
            index += channels
        return outs

    def _combine_group(self, group, users, replacement, visit):
        self._root_channel_pos = self._channel_pos(group[0])
        super()._combine_group(group, users, replacement, visit)


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
