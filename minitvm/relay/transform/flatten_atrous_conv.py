"""FlattenAtrousConv: ``batch_to_space_nd(conv2d(space_to_batch_nd(x)))`` — how TensorFlow
expresses a dilated convolution — becomes one conv2d with ``dilation`` = the block shape and the
padding the space-to-batch pads minus the batch-to-space crops."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call
from ..expr_functor import ExprMutator
from ..op.nn.nn import conv2d
from .function_pass import function_pass


def _is(e, name) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


class _Flattener(ExprMutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if not _is(new, "nn.batch_to_space_nd") or not _is(new.args[0], "nn.conv2d"):
            return new
        conv = new.args[0]
        if not _is(conv.args[0], "nn.space_to_batch_nd"):
            return new
        s2b = conv.args[0]
        a = conv.attrs
        block = tuple(int(b) for b in s2b.attrs.block_shape)
        if (len(block) != 2 or tuple(new.attrs.block_shape) != block or a.groups != 1
                or tuple(a.strides) != (1, 1) or tuple(a.dilation) != (1, 1)
                or any(int(p) for p in a.padding) or float(s2b.attrs.pad_value) != 0.0):
            return new
        pads, crops = s2b.attrs.paddings, new.attrs.crops
        top, bottom = pads[0][0] - crops[0][0], pads[0][1] - crops[0][1]
        left, right = pads[1][0] - crops[1][0], pads[1][1] - crops[1][1]
        if min(top, bottom, left, right) < 0:
            return new
        attrs = dict(a)
        attrs.update(dilation=block, padding=(top, left, bottom, right))
        self.count += 1
        return conv2d(s2b.args[0], conv.args[1], **attrs)


def flatten_atrous_conv(func):
    f = _Flattener()
    return f.visit(func), f.count


@register_pass("FlattenAtrousConv")
def FlattenAtrousConv():
    """Fold space_to_batch/conv2d/batch_to_space into a dilated conv2d (function pass, opt 0)."""

    def transform(func, mod, ctx):
        out, n = flatten_atrous_conv(func)
        record_stat("flattened atrous convs", n)
        return out

    return function_pass(transform, opt_level=0, name="FlattenAtrousConv",
                         required=["InferType"], needs=["typed"])
