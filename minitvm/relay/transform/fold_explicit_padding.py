"""FoldExplicitPadding: fold an explicit ``nn.pad`` into the padding of the op consuming it.

``conv(pad(x, 0))`` becomes ``conv(x)`` with the pad widths added to the convolution's padding
(conv1d/2d/3d; ``qnn.conv2d`` when the pad value is its input zero point), and likewise for
max pooling (1-D to 3-D) when the pad value is the dtype's lowest value (or -inf) and for
average pooling when it is 0 (the pool then counts the padded elements, as the explicit pad did:
``count_include_pad=True``; not folded when the pool already pads without counting). Only
constant-mode pads that leave the batch and channel axes alone are folded.
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Constant
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["FoldExplicitPadding", "fold_explicit_padding"]

# op name -> (layout attribute, spatial axis letters, kind)
_CONSUMERS = {
    "nn.conv1d": ("data_layout", "W", "conv"),
    "nn.conv2d": ("data_layout", "HW", "conv"),
    "nn.max_pool1d": ("layout", "W", "max"),
    "nn.max_pool2d": ("layout", "HW", "max"),
    "nn.avg_pool1d": ("layout", "W", "avg"),
    "nn.avg_pool2d": ("layout", "HW", "avg"),
    "nn.conv3d": ("data_layout", "DHW", "conv"),
    "nn.max_pool3d": ("layout", "DHW", "max"),
    "nn.avg_pool3d": ("layout", "DHW", "avg"),
    "qnn.conv2d": ("data_layout", "HW", "qconv"),
}


def _pad_value(pad_call):
    v = pad_call.args[1] if len(pad_call.args) > 1 else None
    if not isinstance(v, Constant) or v.data.numpy().size != 1:
        return None
    return v.data.numpy().reshape(()).item()


def _value_ok(kind: str, value, dtype: str, call=None) -> bool:
    if kind in ("conv", "avg"):
        return value == 0
    if kind == "qconv":  # the padded values must read as zero: the input zero point
        zp = call.args[2] if len(call.args) > 2 else None
        return isinstance(zp, Constant) and zp.data.numpy().size == 1 and \
            value == zp.data.numpy().reshape(()).item()
    lowest = np.finfo(dtype).min if np.issubdtype(np.dtype(dtype), np.floating) else \
        np.iinfo(dtype).min
    return value == -np.inf or value == lowest


def _old_padding(padding, nd: int) -> list[int]:
    p = [int(x) for x in padding]
    if len(p) == nd:
        p = p + p
    return p


class _FoldPad(ExprMutator):
    def __init__(self):
        super().__init__()
        self.pad = Op.get("nn.pad")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        rule = _CONSUMERS.get(new.op.name)
        data = new.args[0] if new.args else None
        if rule is None or not isinstance(data, Call) or data.op is not self.pad:
            return new
        folded = self._fold(new, data, *rule)
        if folded is not None:
            self.count += 1
            return folded
        return new

    def _fold(self, call, pad, layout_key, spatial, kind):
        if pad.attrs.pad_mode != "constant":
            return None
        layout = getattr(call.attrs, layout_key)
        widths = [tuple(int(w) for w in pw) for pw in pad.attrs.pad_width]
        if len(widths) != len(layout) or not all(a.isupper() for a in layout):
            return None
        value = _pad_value(pad)
        t = pad.args[0]._checked_type
        dtype = t.dtype if t is not None else "float32"
        if value is None or not _value_ok(kind, value, dtype, call):
            return None
        for axis, w in zip(layout, widths, strict=True):
            if axis not in spatial and w != (0, 0):
                return None
        nd = len(spatial)
        old = _old_padding(call.attrs.padding, nd)
        changes = {}
        if kind == "avg":
            if not call.attrs.count_include_pad and any(old):
                return None
            changes["count_include_pad"] = True
        begin = [widths[layout.index(a)][0] for a in spatial]
        end = [widths[layout.index(a)][1] for a in spatial]
        changes["padding"] = tuple(o + b for o, b in zip(old[:nd], begin, strict=True)) + tuple(
            o + e for o, e in zip(old[nd:], end, strict=True))
        return Call(call.op, [pad.args[0]] + list(call.args[1:]), call.attrs.with_fields(
            **changes), call.type_args, call.span)


def fold_explicit_padding(expr):
    """FoldExplicitPadding on one expression or function."""
    return _FoldPad().visit(expr)


@register("FoldExplicitPadding")
def FoldExplicitPadding():  # noqa: N802 - TVM's name
    """Function pass (opt 0): fold nn.pad into the padding of convolutions and pools."""

    def transform(func, mod, ctx):
        m = _FoldPad()
        out = m.visit(func)
        record_stat("pads folded", m.count)
        return out

    return function_pass(transform, opt_level=0, name="FoldExplicitPadding")
