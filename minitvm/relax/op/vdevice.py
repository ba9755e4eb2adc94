"""``to_vdevice``: copy a tensor to another virtual device (TVM's ``relax.op.to_vdevice``).

The result has the input's shape and dtype and the destination ``VDevice`` in its struct info;
TVMScript writes it ``R.to_vdevice(x, dst_vdevice="cuda:0")``, naming a device of the module's
``I.module_global_infos``. The VM runs it as ``vm.builtin.to_device`` (VMBuiltinLower)."""

from __future__ import annotations

from ...ir.attrs import make_attrs_class
from ...ir.global_info import VDevice
from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from ._common import arg_sinfo, fail, fmt_sinfo
from .base import register_op_rule

__all__ = ["to_vdevice", "ToVDeviceAttrs"]

ToVDeviceAttrs = make_attrs_class("ToVDeviceAttrs", [("dst_vdevice", None)],
                                  "relax.attrs.ToVDeviceAttrs")
ToVDeviceAttrs.__doc__ = "Attributes of to_vdevice: the destination virtual device."


def _infer_to_vdevice(call: Call, ctx) -> StructInfo:
    if len(call.args) != 1:
        fail(call, f"expects one argument, got {len(call.args)}")
    data = arg_sinfo(call, 0)
    if not isinstance(data, TensorStructInfo):
        fail(call, f"expects a tensor, got {fmt_sinfo(data)}", type_error=True)
    dst = call.attrs.dst_vdevice if call.attrs is not None else None
    if not isinstance(dst, VDevice):
        fail(call, "needs its destination (attribute dst_vdevice) to be a VDevice",
             type_error=True)
    shape = data.shape
    return TensorStructInfo(shape, data.dtype, dst, data.ndim if shape is None else -1)


register_op_rule("relax.to_vdevice", _infer_to_vdevice, pattern=OpPattern.OPAQUE,
                 num_inputs=1, arguments=("data",), attrs_type=ToVDeviceAttrs)


def to_vdevice(data: Expr, dst_vdevice: VDevice) -> Call:
    """``data`` copied to the virtual device ``dst_vdevice``."""
    if not isinstance(dst_vdevice, VDevice):
        raise TypeError(f"to_vdevice: dst_vdevice must be a VDevice (in TVMScript also a "
                        f"'kind:index' string), got {type(dst_vdevice).__name__}")
    return Call(Op.get("relax.to_vdevice"), [data], ToVDeviceAttrs(dst_vdevice=dst_vdevice))
