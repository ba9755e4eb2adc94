"""``VirtualDevice`` (TVM's ``tvm.target.VirtualDevice``, also ``tvm.ir.VirtualDevice``): where a
value lives — a device type, a virtual device id, a target and a memory scope, any of them left
unconstrained. Device planning joins partial placements (``join``) and fills the gaps of one
from another (``default``), field by field, as TVM's VirtualDevice::Join / ::Default do."""

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
        if target is not None and device is None:
            # a target alone fixes the device type (TVM: the target's kind's device type)
            kind = getattr(target, "kind", None)
            dev_type = getattr(kind, "device_type", None)
            if isinstance(dev_type, int):
                self.device_type_int = dev_type
        self.target = target
        self.memory_scope = memory_scope or ""

    @staticmethod
    def make(device_type: int, virtual_device_id: int = _UNCONSTRAINED, target=None,
             memory_scope: str = "") -> VirtualDevice:
        """A VirtualDevice from its four fields (-1 / None / "" leave a field unconstrained)."""
        vd = VirtualDevice(None, None, memory_scope)
        vd.device_type_int = int(device_type)
        vd.virtual_device_id = int(virtual_device_id)
        vd.target = target
        return vd

    @staticmethod
    def fully_unconstrained() -> VirtualDevice:
        # set directly: every Relay variable's ``virtual_device_`` is one of these, and a
        # structural hash or compare of a program reads it for each variable
        vd = object.__new__(VirtualDevice)
        vd.device_type_int = vd.virtual_device_id = _UNCONSTRAINED
        vd.target = None
        vd.memory_scope = ""
        return vd

    def is_fully_unconstrained(self) -> bool:
        return (self.device_type_int == _UNCONSTRAINED and self.virtual_device_id < 0
                and self.target is None and not self.memory_scope)

    def is_fully_constrained(self) -> bool:
        return (self.device_type_int != _UNCONSTRAINED and self.virtual_device_id >= 0
                and self.target is not None and bool(self.memory_scope))

    # TVM's C++ spellings, reached by TVM code through the FFI
    IsFullyUnconstrained = is_fully_unconstrained
    IsFullyConstrained = is_fully_constrained

    @property
    def device_type(self) -> int:
        return self.device_type_int

    @staticmethod
    def join(lhs: VirtualDevice, rhs: VirtualDevice) -> VirtualDevice | None:
        """The placement satisfying both, or None when a field is constrained differently."""
        if lhs is rhs:
            return lhs
        fields = []
        for a, b, free in ((lhs.device_type_int, rhs.device_type_int, _UNCONSTRAINED),
                           (lhs.virtual_device_id, rhs.virtual_device_id, _UNCONSTRAINED),
                           (lhs.target, rhs.target, None),
                           (lhs.memory_scope, rhs.memory_scope, "")):
            if a == free or a is None:
                fields.append(b)
            elif b == free or b is None or _same(a, b):
                fields.append(a)
            else:
                return None
        return VirtualDevice.make(*fields)

    @staticmethod
    def default(lhs: VirtualDevice, rhs: VirtualDevice) -> VirtualDevice:
        """``lhs`` with its unconstrained fields taken from ``rhs`` (the target only when it is
        for the chosen device type)."""
        dev = lhs.device_type_int if lhs.device_type_int != _UNCONSTRAINED \
            else rhs.device_type_int
        vid = lhs.virtual_device_id if lhs.virtual_device_id >= 0 else rhs.virtual_device_id
        target = lhs.target
        if target is None and rhs.target is not None and rhs.device_type_int == dev:
            target = rhs.target
        scope = lhs.memory_scope or rhs.memory_scope
        return VirtualDevice.make(dev, vid, target, scope)

    def _key(self):
        return (self.device_type_int, self.virtual_device_id,
                None if self.target is None else str(self.target), self.memory_scope)

    def __eq__(self, other):
        if other is self:
            return True
        if not isinstance(other, VirtualDevice) or (
                self.device_type_int, self.virtual_device_id, self.memory_scope) != (
                other.device_type_int, other.virtual_device_id, other.memory_scope):
            return False
        a, b = self.target, other.target
        return a is b or (a is not None and b is not None and str(a) == str(b))

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        parts = []
        if self.device_type_int != _UNCONSTRAINED:
            parts.append(f"device_type={self.device_type_int}")
        if self.virtual_device_id >= 0:
            parts.append(f"virtual_device_id={self.virtual_device_id}")
        if self.target is not None:
            parts.append(f"target={self.target}")
        if self.memory_scope:
            parts.append(f"memory_scope='{self.memory_scope}'")
        return f"VirtualDevice({', '.join(parts)})"


def _same(a, b) -> bool:
    return a == b or str(a) == str(b)
