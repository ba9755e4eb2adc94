"""Annotation and marker ops: on_device, annotation.stop_fusion, annotation.compiler_begin/end,
annotation.checkpoint, annotation.cast_hint. All are identities at run time (their ``FNumpy``
comes from ``minitvm.topi.reference.annotation``) and opaque to fusion.

``relay.annotation.on_device(x, tvm.cpu())`` wraps the device in a ``VirtualDevice`` when
``tvm.target.VirtualDevice`` exists; otherwise the device object itself is stored.
"""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ..expr import Call, Expr, Function
from .op import define_op
from .type_relations import check_num_args

# Not star-exported into relay.op: TVM reaches these as relay.annotation.* only.
__all__: list[str] = []


class OnDeviceAttrs(Attrs):
    """Attributes of ``on_device``: the virtual device and which side it constrains."""

    __slots__ = ()
    _fields = (("virtual_device", None), ("constrain_result", False), ("constrain_body", True))


class CompilerAttrs(Attrs):
    """Attributes of ``annotation.compiler_begin``/``compiler_end``: the external compiler."""

    __slots__ = ()
    _fields = (("compiler", None),)


class CastHintAttrs(Attrs):
    """Attributes of ``annotation.cast_hint``."""

    __slots__ = ()
    _fields = (("dtype", None),)


def _identity_rel(op_name: str):
    def rel(arg_types, attrs=None):
        check_num_args(op_name, arg_types, 1)
        return arg_types[0]

    rel.__name__ = f"identity_rel[{op_name}]"
    return rel


def _define(name: str, attrs_type, describe: str, non_computational: bool = False) -> None:
    op = define_op(name, _identity_rel(name), pattern=OpPattern.OPAQUE, attrs_type=attrs_type,
                   num_inputs=1, describe=describe)
    op.set_attr("TOpIsStateful", False)
    if non_computational:
        op.set_attr("TNonComputational", True)


_define("on_device", OnDeviceAttrs, "Annotate an expression with a virtual device.", True)
_define("annotation.stop_fusion", None, "Prevent fusion of the expression with what follows.")
_define("annotation.checkpoint", None, "Mark a checkpoint for memory optimization.")
_define("annotation.compiler_begin", CompilerAttrs, "Begin a region for an external compiler.")
_define("annotation.compiler_end", CompilerAttrs, "End a region for an external compiler.")
_define("annotation.cast_hint", CastHintAttrs, "Hint that an expression is cast to a dtype.")


def _make_virtual_device(device):
    """Device, device name or VirtualDevice -> the value stored in OnDeviceAttrs."""
    from ...runtime.ndarray import Device
    from ...runtime.ndarray import device as make_device

    try:
        from ...target import VirtualDevice
    except ImportError:
        VirtualDevice = None
    if VirtualDevice is not None and isinstance(device, VirtualDevice):
        return device
    if isinstance(device, str):
        device = make_device(device)
    if isinstance(device, Device):
        return VirtualDevice(device) if VirtualDevice is not None else device
    if device is None:
        raise ValueError("on_device: a device (tvm.cpu(), 'cuda', or a VirtualDevice) is required")
    return device


def on_device(body: Expr, device, constrain_result: bool = False,
              constrain_body: bool = True) -> Call:
    """Mark ``body`` as computed on ``device`` (a Device, a device name or a VirtualDevice)."""
    attrs = OnDeviceAttrs(virtual_device=_make_virtual_device(device),
                          constrain_result=constrain_result, constrain_body=constrain_body)
    return Call(Op.get("on_device"), [body], attrs)


def function_on_device(function: Function, param_devices, result_device) -> Function:
    """Attach parameter and result virtual devices to a function, as TVM's helper does."""
    return function.with_attrs({
        "param_virtual_devices": [_make_virtual_device(d) for d in param_devices],
        "result_virtual_device": _make_virtual_device(result_device),
    })


def stop_fusion(data: Expr) -> Call:
    """Stop fusion of ``data`` with the ops that consume it."""
    return Call(Op.get("annotation.stop_fusion"), [data])


def checkpoint(data: Expr) -> Call:
    return Call(Op.get("annotation.checkpoint"), [data])


def compiler_begin(data: Expr, compiler: str) -> Call:
    """Start of a region to be handled by the external ``compiler``."""
    return Call(Op.get("annotation.compiler_begin"), [data], CompilerAttrs(compiler=compiler))


def compiler_end(data: Expr, compiler: str) -> Call:
    """End of a region to be handled by the external ``compiler``."""
    return Call(Op.get("annotation.compiler_end"), [data], CompilerAttrs(compiler=compiler))


def cast_hint(data: Expr, dtype: str) -> Call:
    return Call(Op.get("annotation.cast_hint"), [data], CastHintAttrs(dtype=dtype))
