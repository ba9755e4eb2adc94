"""RewriteAnnotatedOps: remove ``on_device`` annotations once every expression has a device.

Each annotated expression runs on its annotation's device, anything else on
``fallback_device``. An edge between two devices would need a ``device_copy``; minitvm executes
on the CPU only, so a program placing anything on another device is a clear error instead (as
in PlanDevices). What remains is
the program without device annotations, ready for fusion and code generation.
"""

from __future__ import annotations

from ...ir.op import Op
from ..expr_functor import ExprMutator
from ._pass_helpers import make_function_pass, register

__all__ = ["RewriteAnnotatedOps"]

_CPU = 1


def _device_type(dev) -> int:
    """Device type of a Device, a VirtualDevice, a device name or an int."""
    if dev is None:
        return _CPU
    if isinstance(dev, str):
        from ...runtime.ndarray import device

        return device(dev).device_type
    for attr in ("device_type_int", "device_type"):
        v = getattr(dev, attr, None)
        if isinstance(v, int):
            return v
    if isinstance(dev, int):
        return dev
    raise TypeError(f"RewriteAnnotatedOps: cannot read a device type from {dev!r}")


class _Rewriter(ExprMutator):
    def __init__(self, fallback: int):
        super().__init__()
        self.fallback = fallback
        self.device: dict[int, int] = {}
        self.keep: list = []

    def visit_call(self, call):
        new = super().visit_call(call)
        if isinstance(new.op, Op) and new.op.name == "on_device":
            dev = _device_type(getattr(new.attrs, "virtual_device", None))
            inner = new.args[0]
            self.device[id(inner)] = dev
            self.keep.append(inner)
            return inner
        return new


@register("RewriteAnnotatedOps")
def RewriteAnnotatedOps(fallback_device):  # noqa: N802 - TVM's name
    """Rewrite a program with ``on_device`` annotations for execution (function pass, opt 1).

    Parameters
    ----------
    fallback_device : int or Device
        The device of expressions without an annotation.
    """
    fallback = _device_type(fallback_device)

    def run(func, mod, ctx):
        rw = _Rewriter(fallback)
        out = rw.visit(func)
        for d in set(rw.device.values()) | {fallback}:
            if d not in (_CPU, 0, -1):
                raise ValueError(f"RewriteAnnotatedOps: device type {d} is not available; "
                                 "minitvm executes on the CPU (device type 1) only")
        return out

    return make_function_pass(run, opt_level=1, name="RewriteAnnotatedOps")
