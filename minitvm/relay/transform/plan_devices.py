"""PlanDevices: assign every expression a device. minitvm executes on one device (the CPU), so
planning resolves to that device: ``on_device`` annotations are dropped and ``device_copy``
calls between the same device removed; a program asking for another device is an error."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call
from ..expr_functor import ExprMutator
from .function_pass import function_pass

_CPU = 1


def _device_type(vd) -> int:
    if vd is None:
        return _CPU
    for attr in ("device_type_int", "device_type"):
        v = getattr(vd, attr, None)
        if isinstance(v, int):
            return v
    return int(vd) if isinstance(vd, int) else _CPU


class _Planner(ExprMutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        name = new.op.name
        if name == "on_device":
            dev = _device_type(getattr(new.attrs, "virtual_device", None))
            if dev not in (_CPU, -1, 0):
                raise ValueError(f"PlanDevices: on_device asks for device type {dev}, but "
                                 "minitvm only executes on the CPU")
            self.count += 1
            return new.args[0]
        if name == "device_copy":
            self.count += 1
            return new.args[0]
        return new


@register_pass("PlanDevices")
def PlanDevices(config=None):
    """Resolve device annotations for single-device (CPU) execution (function pass, opt 0)."""

    def transform(func, mod, ctx):
        m = _Planner()
        out = m.visit(func)
        if m.count:
            record_stat("removed device annotations", m.count)
        return out

    return function_pass(transform, opt_level=0, name="PlanDevices")
