"""``CompilationConfig``: the targets of a build, its host, and the virtual devices device
planning defaults to (TVM's ``tvm.target.make_compilation_config``).

The host target is the one a target names as its host, else the first CPU target, else
``llvm``; every primitive target gets it as its host. Unannotated primitives go to the device
named by the PassContext option ``relay.fallback_device_type``, else to the one target of a
homogeneous build, else to the CPU.
"""

from __future__ import annotations

from ..ir.virtual_device import VirtualDevice

_CPU = 1
_DEVICE_NAMES = {1: "cpu", 2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm",
                 12: "ext_dev", 14: "hexagon", 15: "webgpu"}


def device_name(device_type: int) -> str:
    """``cuda (device type 2)``: a device type as error messages name it."""
    return f"{_DEVICE_NAMES.get(device_type, 'unknown')} (device type {device_type})"


def _targets(target) -> list:
    from . import Target

    if target is None:
        return []
    if isinstance(target, dict):
        target = list(target.values())
    if not isinstance(target, list | tuple):
        target = [target]
    return [t if isinstance(t, Target) else Target(t) for t in target]


def _config_int(pass_ctx, key: str):
    config = getattr(pass_ctx, "config", None) or {}
    value = config.get(key) if hasattr(config, "get") else None
    value = getattr(value, "value", value)
    return None if value is None else int(value)


class CompilationConfig:
    """Targets and default virtual devices of one compilation (TVM's CompilationConfig)."""

    __slots__ = ("host_target", "primitive_targets", "host_virtual_device",
                 "default_primitive_virtual_device", "optional_homogeneous_target", "_unique")

    def __init__(self, pass_ctx, targets, host_target=None):
        from . import Target

        self._unique: dict = {}
        raw = _targets(targets)
        host = _targets(host_target)[0] if host_target is not None else None
        if host is None:
            host = next((t.host for t in raw if t.host is not None), None)
        if host is None:
            host = next((Target(str(t)) for t in raw if t.kind.device_type == _CPU), None)
        if host is None:
            host = Target("llvm")
        self.host_target = host
        self.primitive_targets = [Target(str(t), host=host) for t in raw] or \
            [Target(str(host), host=host)]
        self.optional_homogeneous_target = (self.primitive_targets[0]
                                            if len(self.primitive_targets) == 1 else None)
        self.host_virtual_device = self._intern(VirtualDevice.make(host.kind.device_type, 0,
                                                                   host))
        fallback = _config_int(pass_ctx, "relay.fallback_device_type")
        if fallback is not None:
            if fallback <= 0:
                raise ValueError(f"relay.fallback_device_type must be a device type > 0, "
                                 f"got {fallback}")
            default_type = fallback
        elif len(self.primitive_targets) == 1:
            default_type = self.primitive_targets[0].kind.device_type
        else:
            default_type = _CPU
        self.default_primitive_virtual_device = self._intern(VirtualDevice.make(
            default_type, 0, self.find_primitive_target_for_device_or_fail(default_type)))

    def find_primitive_target_for_device_or_fail(self, device_type: int):
        """The target compiling primitives for ``device_type``; a clear error if none does."""
        for t in self.primitive_targets:
            if t.kind.device_type == device_type:
                return t
        kinds = ", ".join(str(t) for t in self.primitive_targets)
        raise ValueError(f"No target is specified for device {device_name(device_type)}; "
                         f"the targets are: {kinds}")

    def canonical_virtual_device(self, vd: VirtualDevice) -> VirtualDevice:
        """``vd`` with its target filled in from the device type; equal placements come back
        as one object (TVM's VirtualDeviceCache), so planning compares them by identity."""
        if vd.device_type_int < 0 and vd.target is None:
            return vd
        if vd.target is None:
            target = self.find_primitive_target_for_device_or_fail(vd.device_type_int)
            vid = vd.virtual_device_id if vd.virtual_device_id >= 0 else 0
            vd = VirtualDevice.make(vd.device_type_int, vid, target, vd.memory_scope)
        return self._intern(vd)

    def _intern(self, vd: VirtualDevice) -> VirtualDevice:
        t = vd.target
        tkey = next((i for i, p in enumerate(self.primitive_targets) if p is t), None)
        key = (vd.device_type_int, vd.virtual_device_id, vd.memory_scope,
               tkey if tkey is not None else (None if t is None else str(t)))
        return self._unique.setdefault(key, vd)

    # TVM's C++ spellings
    CanonicalVirtualDevice = canonical_virtual_device
    FindPrimitiveTargetForDeviceOrFail = find_primitive_target_for_device_or_fail

    def __repr__(self):
        return (f"CompilationConfig(host_target={self.host_target}, primitive_targets="
                f"{self.primitive_targets}, default={self.default_primitive_virtual_device})")


def make_compilation_config(ctxt, target, target_host=None) -> CompilationConfig:
    """The CompilationConfig of a PassContext and target(s) (TVM's
    ``tvm.target.make_compilation_config``)."""
    return CompilationConfig(ctxt, target, target_host)
