"""ConvertLayout(desired_layouts): convert layout-sensitive ops (conv2d, pooling, ...) to the
desired layouts through their ``FTVMConvertOpLayout`` hooks; layout-agnostic ops (elementwise)
follow their inputs, lightly sensitive ones (broadcast) adapt their other operands, and
everything else gets its inputs transformed back to the original layout."""

from __future__ import annotations

from ...ir.type import TupleType
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call
from .function_pass import function_pass
from .layout_rewrite import LayoutRewriter


class LayoutConfig:
    """``with relay.transform.LayoutConfig(skip_layers=[0]):`` skips the listed conv layers."""

    current = None

    def __init__(self, skip_layers=None):
        self.skip_counter = 0
        self.skip_layers = list(skip_layers or [])

    def check_skip(self) -> bool:
        skip = self.skip_counter in self.skip_layers
        self.skip_counter += 1
        return skip

    def reset(self):
        self.skip_counter = 0

    def __enter__(self):
        self._old = LayoutConfig.current
        LayoutConfig.current = self
        return self

    def __exit__(self, *exc):
        LayoutConfig.current = self._old


def _tinfos(call) -> list:
    """The tensor types of ``call``'s arguments, tuple fields flattened (TVM's tinfos)."""
    out = []
    for a in call.args:
        t = a._checked_type
        out.extend(t.fields if isinstance(t, TupleType) else [t])
    return out


def convert_layout(func, desired_layouts: dict):
    """Rewrite one type-checked function to the desired layouts."""

    def convert(call, attrs, args):
        wanted = desired_layouts.get(call.op.name)
        hook = call.op.get_attr("FTVMConvertOpLayout")
        new = None
        if wanted is not None and hook is not None:
            new = hook(attrs, args, _tinfos(call), [str(w) for w in wanted])
        if new is None:
            return Call(call.op, args, attrs, None, call.span)
        if not isinstance(new, Call):
            raise TypeError(f"ConvertLayout: the {call.op.name} hook must return a call, got "
                            f"{type(new).__name__}")
        return Call(new.op, new.args, new.attrs, new.type_args, call.span)

    rw = LayoutRewriter(convert)
    return rw.visit(func), rw.inserted


@register_pass("ConvertLayout")
def ConvertLayout(desired_layouts: dict):
    """Convert op layouts (function pass, opt_level 3, requires InferType and CanonicalizeOps).

    Parameters
    ----------
    desired_layouts : dict[str, list[str]] or str
        Op name to its desired layouts, e.g. ``{"nn.conv2d": ["NHWC", "default"]}``; a bare
        layout string (TVM's older API, seed 004's ``ConvertLayout('NCHW')``) means that data
        layout for conv2d with the default kernel layout.
    """
    if isinstance(desired_layouts, str):
        desired_layouts = {"nn.conv2d": [desired_layouts, "default"]}
    if not isinstance(desired_layouts, dict):
        raise TypeError("ConvertLayout expects a dict of op name -> list of desired layouts "
                        "(or a data layout string)")

    def transform(func, mod, ctx):
        out, inserted = convert_layout(func, desired_layouts)
        record_stat("layout transforms inserted", inserted)
        return out

    return function_pass(transform, opt_level=3, name="ConvertLayout",
                         required=["InferType", "CanonicalizeOps"], needs=["typed"])
