"""FlattenAtrousConv: ``space_to_batch_nd -> conv2d -> batch_to_space_nd`` (how TensorFlow writes a
dilated convolution) becomes one NHWC ``conv2d`` (or ``qnn.conv2d``) with ``dilation`` = the block
shape and TVM's "SAME" padding.

As in TVM, the three calls are recognised by the order the rewrite meets them (post-order: a
``space_to_batch_nd``, then a conv, then a ``batch_to_space_nd``, with no other call between), the
new conv has strides 1 and keeps groups, channels, kernel_size, layouts and out_dtype, and its
padding is ``(k - 1) * d`` split as ``before = total // 2``. TVM does not check that this padding
is the one the pattern had; here the pattern is also left alone when the space-to-batch paddings
minus the batch-to-space crops differ from it, or the conv itself is strided, dilated or padded,
since the flattened conv would compute something else.
"""

from __future__ import annotations

from ...ir.op import Op
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr import Call
from ..expr_functor import ExprMutator
from ..op.nn.nn import conv2d
from .function_pass import function_pass

_STAGES = (frozenset({"nn.space_to_batch_nd"}), frozenset({"nn.conv2d", "qnn.conv2d"}),
           frozenset({"nn.batch_to_space_nd"}))


def _name(e) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _ints(v) -> list:
    return [int(x) for x in v]


def _same_pad(kernel: int, dilation: int) -> tuple:
    total = max((kernel - 1) * dilation, 0)
    return total // 2, total - total // 2


def flatten_subgraph(b2s):
    """The dilated conv replacing ``b2s(conv(s2b(x)))``, or None when it does not apply."""
    conv = b2s.args[0] if b2s.args else None
    if _name(conv) not in _STAGES[1] or _name(conv.args[0]) != "nn.space_to_batch_nd":
        return None
    s2b = conv.args[0]
    a = conv.attrs
    if a.data_layout != "NHWC" or not a.kernel_size or len(a.kernel_size) < 2:
        return None
    block = _ints(b2s.attrs.block_shape)
    if len(block) != 2 or _ints(s2b.attrs.block_shape) != block:
        return None
    kh, kw = (int(k) for k in a.kernel_size[:2])
    top, bottom = _same_pad(kh, block[0])
    left, right = _same_pad(kw, block[1])
    # what the pattern really pads (TVM assumes it is the SAME padding above)
    pads, crops = s2b.attrs.paddings, b2s.attrs.crops
    real = (int(pads[0][0]) - int(crops[0][0]), int(pads[1][0]) - int(crops[1][0]),
            int(pads[0][1]) - int(crops[0][1]), int(pads[1][1]) - int(crops[1][1]))
    if (real != (top, left, bottom, right) or _ints(a.strides) != [1, 1]
            or _ints(a.dilation) != [1, 1] or any(_ints(a.padding))
            or float(getattr(s2b.attrs, "pad_value", 0.0)) != 0.0):
        return None
    common = dict(strides=(1, 1), padding=(top, left, bottom, right), dilation=tuple(block),
                  groups=a.groups, channels=a.channels, kernel_size=a.kernel_size,
                  data_layout=a.data_layout, kernel_layout=a.kernel_layout,
                  out_layout=a.out_layout, out_dtype=a.out_dtype)
    data, weight = s2b.args[0], conv.args[1]
    if _name(conv) == "nn.conv2d":
        return conv2d(data, weight, **common)
    from ..qnn.op import conv2d as qnn_conv2d
    return qnn_conv2d(data, weight, *conv.args[2:6], **common)


class _Flattener(ExprMutator):
    """Counts consecutive calls of the three stages in post-order, as TVM's rewriter does."""

    def __init__(self):
        super().__init__()
        self.stage = 0
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if _name(new) in _STAGES[self.stage]:
            self.stage += 1
            if self.stage == len(_STAGES):
                self.stage = 0
                flat = flatten_subgraph(new)
                if flat is not None:
                    self.count += 1
                    return flat
        else:
            self.stage = 0
        return new


def flatten_atrous_conv(func):
    f = _Flattener()
    return f.visit(func), f.count


@register_pass("FlattenAtrousConv")
def FlattenAtrousConv():
    """Fold space_to_batch/conv2d/batch_to_space into a dilated conv2d (function pass, opt 0)."""

    def transform(func, mod, ctx):
        if not all(calls_any(func, names) for names in _STAGES):
            record_stat("flattened atrous convs", 0)
            return func  # (a stage's op missing: no atrous conv)
        out, n = flatten_atrous_conv(func)
        record_stat("flattened atrous convs", n)
        return out

    return function_pass(transform, opt_level=0, name="FlattenAtrousConv",
                         required=["InferType"], needs=["typed"])
