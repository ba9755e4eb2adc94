"""tvm.target: compilation targets (``Target("llvm")``), usable as a context manager."""

from __future__ import annotations

import shlex
import threading

from ..ir.virtual_device import VirtualDevice  # noqa: F401  (TVM's tvm.target.VirtualDevice)


class TargetKind:
    """A target kind (``llvm``, ``cuda``...): its default keys and device type."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def default_keys(self) -> list[str]:
        return list(_KNOWN[self.name][0])

    @property
    def device_type(self) -> int:
        return _KNOWN[self.name][1]

    @staticmethod
    def options_from_name(kind_name: str) -> dict[str, str]:
        if kind_name not in _KNOWN:
            raise ValueError(f"Target kind {kind_name!r} is not defined")
        return dict(_OPTIONS.get(kind_name, {}), **_COMMON_OPTIONS)

    def __repr__(self):
        return self.name


# kind -> (default keys, DLPack device type), as TVM registers them; only llvm/c compile here
_KNOWN = {"llvm": (("cpu",), 1), "c": (("cpu",), 1), "cuda": (("cuda", "gpu"), 2),
          "nvptx": (("cuda", "gpu"), 2), "rocm": (("rocm", "gpu"), 10),
          "opencl": (("opencl", "gpu"), 4), "metal": (("metal", "gpu"), 8),
          "vulkan": (("vulkan", "gpu"), 7), "webgpu": (("webgpu", "gpu"), 15),
          "hexagon": (("hexagon", "cpu"), 16), "stackvm": (("cpu",), 1),
          "ext_dev": (("ext_dev",), 12), "hybrid": (("cpu",), 1),
          "composite": ((), 1), "test": (("cpu",), 1)}
_COMMON_OPTIONS = {"keys": "Array", "libs": "Array", "host": "Target", "tag": "runtime.String",
                   "device": "runtime.String", "model": "runtime.String",
                   "from_device": "IntImm"}
_OPTIONS = {"llvm": {"mcpu": "runtime.String", "mtriple": "runtime.String",
                     "mattr": "Array", "mfloat-abi": "runtime.String", "mabi": "runtime.String",
                     "num-cores": "IntImm", "opt-level": "IntImm", "fast-math": "IntImm",
                     "fast-math-nnan": "IntImm", "fast-math-ninf": "IntImm",
                     "fast-math-nsz": "IntImm", "fast-math-arcp": "IntImm",
                     "fast-math-contract": "IntImm", "fast-math-reassoc": "IntImm",
                     "link-params": "IntImm", "interface-api": "runtime.String",
                     "system-lib": "IntImm", "runtime": "runtime.String", "jit": "runtime.String",
                     "cl-opt": "Array", "vector-width": "IntImm"},
            "cuda": {"arch": "runtime.String", "max_num_threads": "IntImm",
                     "thread_warp_size": "IntImm", "max_shared_memory_per_block": "IntImm",
                     "max_threads_per_block": "IntImm"}}
_INT_OPTIONS = {k for opts in _OPTIONS.values() for k, v in opts.items() if v == "IntImm"} | {
    "from_device"}
_LIST_OPTIONS = {"mattr", "libs", "keys", "cl-opt"}


class _Stack(threading.local):
    def __init__(self):
        self.stack: list[Target] = []


_STACK = _Stack()


class Target:
    """A target such as ``"llvm -mcpu=skylake-avx512"``; options become ``attrs``."""

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            target, host = str(target), host or target.host
        if isinstance(target, dict):
            spec = dict(target)
            host = host or spec.pop("host", None)
            kind = spec.pop("kind", "llvm")
            if kind in _KNOWN and list(spec.get("keys", ())) == list(_KNOWN[kind][0]):
                spec.pop("keys")  # the kind's default keys: nothing to add
            opts = []
            for k, v in spec.items():
                v = ",".join(v) if isinstance(v, (list, tuple)) else v
                opts.append(f"-{k}" if v is True else f"-{k}={v}")
            target = " ".join([kind, *opts])
        parts = shlex.split(str(target))
        if not parts:
            raise ValueError("Target string is empty")
        kind = parts[0]
        if kind not in _KNOWN:
            raise ValueError(f"Target kind {kind!r} is not defined; known kinds: "
                             f"{', '.join(sorted(_KNOWN))}")
        self.kind = TargetKind(kind)
        self.attrs: dict = {}
        keys: list[str] = []
        rest = parts[1:]
        while rest:
            opt = rest.pop(0)
            if not opt.startswith("-"):
                raise ValueError(f"invalid target option {opt!r} in {target!r}")
            key, eq, value = opt.lstrip("-").partition("=")
            if not eq and rest and not rest[0].startswith("-"):
                value = rest.pop(0)  # "-num-cores 4", as TVM's parser also reads it
            if key == "keys":
                keys += [k for k in value.split(",") if k]
                continue
            if key in _INT_OPTIONS and value:
                try:
                    value = int(value)
                except ValueError:
                    raise ValueError(f"target option -{key} takes an integer, got "
                                     f"{value!r} in {target!r}") from None
            self.attrs[key] = value if value != "" else True
        # as TVM: the given keys, then the device name (-device=arm_cpu), then the kind's
        # defaults, each once
        device = self.attrs.get("device")
        keys += [device] if isinstance(device, str) and device else []
        self.keys = list(dict.fromkeys(keys + list(_KNOWN[kind][0])))
        self.host = Target(host) if isinstance(host, str) else host

    @property
    def mcpu(self) -> str:
        return self.attrs.get("mcpu", "")

    @property
    def mattr(self) -> list[str]:
        v = self.attrs.get("mattr", "")
        return v.split(",") if isinstance(v, str) and v else []

    @property
    def model(self) -> str:
        return self.attrs.get("model", "unknown")

    @property
    def num_cores(self) -> int:
        return int(self.attrs.get("num-cores", 0))

    @staticmethod
    def list_kinds() -> list[str]:
        return sorted(_KNOWN)

    def export(self) -> dict:
        """The target as a dict (kind, keys, attributes, host), as TVM exports it."""
        out = {"kind": self.kind.name, "keys": list(self.keys)}
        for k, v in self.attrs.items():
            out[k] = v.split(",") if k in _LIST_OPTIONS and isinstance(v, str) else v
        if self.host is not None:
            out["host"] = self.host.export()
        return out

    @property
    def libs(self) -> list[str]:
        v = self.attrs.get("libs", "")
        return v.split(",") if v else []

    @property
    def max_function_args(self) -> int:
        # TVM's kind defaults: metal takes 31 kernel arguments, opencl 128; 0 = no limit
        default = {"metal": 31, "opencl": 128}.get(self.kind.name, 0)
        return int(self.attrs.get("max_function_args", default))

    def with_host(self, host=None) -> Target:
        """This target with ``host`` as its host (TVM's Target.with_host)."""
        return Target(str(self), host=Target(host) if isinstance(host, str) else host)

    def get_target_device_type(self) -> int:
        """The DLPack device type this target compiles for."""
        return self.kind.device_type

    @staticmethod
    def from_device(device) -> Target:
        """The target of ``device`` (a Device or a name such as ``"cpu"``): ``llvm`` for the
        CPU, else the kind registered for its device type (``cuda`` for ``tvm.cuda(0)``)."""
        device_type = getattr(device, "device_type", None)
        if device_type is None:
            from ..runtime.ndarray import device as make_device

            device_type = make_device(str(device)).device_type
        if device_type == 1:
            return Target("llvm")
        for kind, (_, dev_type) in _KNOWN.items():
            if dev_type == device_type:
                return Target(kind)
        raise ValueError(f"Target.from_device: no target kind for device type {device_type}")

    @staticmethod
    def current(allow_none: bool = True):
        if _STACK.stack:
            return _STACK.stack[-1]
        if not allow_none:
            raise ValueError("Target context required; use `with tvm.target.Target(...)`")
        return None

    def __enter__(self):
        _STACK.stack.append(self)
        return self

    def __exit__(self, *exc):
        _STACK.stack.pop()

    def __str__(self):
        # TVM's form: the kind, -keys=..., then the other attributes in name order
        opts = [f"-keys={','.join(self.keys)}"] if self.keys else []
        opts += [f"-{k}" if v is True else f"-{k}={v}" for k, v in sorted(self.attrs.items())]
        return " ".join([self.kind.name, *opts])

    def __repr__(self):
        return f"Target({str(self)!r})"

    def __eq__(self, other):
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


def create(target) -> Target:
    """Deprecated alias of ``Target(target)``."""
    return Target(target)


def arm_cpu(model="unknown", options=None) -> Target:
    return Target("llvm -device=arm_cpu")


def cuda(model="unknown", arch=None, options=None) -> Target:
    return Target("cuda")


from .compilation_config import CompilationConfig, make_compilation_config  # noqa: E402,F401
from .generic_func import (  # noqa: E402,F401  (TVM's tvm.target.generic_func family)
    GenericFunc,
    generic_func,
    get_native_generic_func,
    override_native_generic_func,
)

# ``tvm.ir.VDevice("llvm")``: the core builds targets from their specs through this hook
from ..ir.dialect import register_hook  # noqa: E402

register_hook("make_target", str, Target)
register_hook("make_target", dict, Target)
