"""``VirtualDevice`` (TVM's ``tvm.target.VirtualDevice``): where a value lives — a device type,
a device id, a target and a memory scope, any of them left unconstrained."""

from __future__ import annotations

_UNCONSTRAINED = -1


class VirtualDevice:
    """A (possibly partial) placement. ``VirtualDevice()`` is fully unconstrained; a
    ``tvm.cpu(0)``-style device fills the type and id."""

    __slots__ = ("device_type_int", "virtual_device_id", "target", "memory_scope")
    type_key = "VirtualDevice"

    def __init__(self, device=None, target=None, memory_scope: str = ""):
        if device is None:
            self.device_type_int, self.virtual_device_id = _UNCONSTRAINED, _UNCONSTRAINED
        elif isinstance(device, int):
            self.device_type_int, self.virtual_device_id = int(device), 0
        else:
            self.device_type_int = int(device.device_type)
            self.virtual_device_id = int(getattr(device, "device_id", 0))
        self.target = target
        self.memory_scope = memory_scope

    @staticmethod
    def fully_unconstrained() -> VirtualDevice:
        return VirtualDevice()

    def is_fully_unconstrained(self) -> bool:
        return (self.device_type_int == _UNCONSTRAINED and self.target is None
                and not self.memory_scope)

    @property
    def device_type(self) -> int:
        return self.device_type_int

    def _key(self):
        return (self.device_type_int, self.virtual_device_id, str(self.target),
                self.memory_scope)

    def __eq__(self, other):
        return isinstance(other, VirtualDevice) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.is_fully_unconstrained():
            return "VirtualDevice()"
        parts = []
        if self.device_type_int != _UNCONSTRAINED:
            parts += [f"device_type={self.device_type_int}",
                      f"virtual_device_id={self.virtual_device_id}"]
        if self.target is not None:
            parts.append(f"target={self.target}")
        if self.memory_scope:
            parts.append(f"memory_scope='{self.memory_scope}'")
        return f"VirtualDevice({', '.join(parts)})"
