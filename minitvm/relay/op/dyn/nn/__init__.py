"""dyn.nn.pad: padding whose widths (and value) are run-time tensors (numpy reference in
``minitvm.topi.reference.dyn``)."""

from __future__ import annotations

from .....ir.op import OpPattern
from ....expr import Call
from ...nn.attrs import PadAttrs
from ...op import Op, define_op
from ...type_relations import check_num_args, tensor_arg
from .._shape_arg import any_shape

__all__ = ["pad"]


def _pad_rel(arg_types, attrs):
    check_num_args("dyn.nn.pad", arg_types, 3)
    data = tensor_arg(arg_types, 0, "dyn.nn.pad")
    widths = tensor_arg(arg_types, 1, "dyn.nn.pad")
    if len(widths.shape) != 2 or widths.shape[1] != 2 or widths.shape[0] != len(data.shape):
        raise TypeError(f"dyn.nn.pad: pad_width must have shape ({len(data.shape)}, 2) for data "
                        f"of rank {len(data.shape)}, got {widths.shape}")
    return any_shape(len(data.shape), data.dtype)


define_op("dyn.nn.pad", _pad_rel, pattern=OpPattern.INJECTIVE, attrs_type=PadAttrs,
          num_inputs=3, describe="Pad by run-time widths.")


def pad(data, pad_width, pad_value=0.0, pad_mode: str = "constant") -> Call:
    """Pad ``data`` by the (rank, 2) integer tensor ``pad_width``."""
    from ....expr import Expr, const

    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    return Call(Op.get("dyn.nn.pad"), [data, pad_width, pad_value],
                PadAttrs(pad_width=None, pad_mode=pad_mode))


from .._more import upsampling, upsampling3d  # noqa: E402,F401
