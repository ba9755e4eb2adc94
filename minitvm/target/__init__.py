"""tvm.target: compilation targets (``Target("llvm")``), usable as a context manager."""

from __future__ import annotations

import shlex
import threading


class TargetKind:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


_KNOWN = {"llvm": ("cpu",), "c": ("cpu",), "cuda": ("cuda", "gpu"), "opencl": ("opencl", "gpu"),
          "ext_dev": ("ext_dev",), "hybrid": ("cpu",)}


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
            target = target.get("kind", "llvm")
        parts = shlex.split(str(target))
        if not parts:
            raise ValueError("Target string is empty")
        kind = parts[0]
        if kind not in _KNOWN:
            raise ValueError(f"Target kind {kind!r} is not defined; known kinds: "
                             f"{', '.join(sorted(_KNOWN))}")
        self.kind = TargetKind(kind)
        self.attrs: dict = {}
        self.keys = list(_KNOWN[kind])
        for opt in parts[1:]:
            if not opt.startswith("-"):
                raise ValueError(f"invalid target option {opt!r} in {target!r}")
            key, _, value = opt.lstrip("-").partition("=")
            if key == "keys":
                self.keys = value.split(",") + self.keys
            self.attrs[key] = value if value else True
        self.host = Target(host) if isinstance(host, str) else host

    @property
    def mcpu(self) -> str:
        return self.attrs.get("mcpu", "")

    @property
    def libs(self) -> list[str]:
        v = self.attrs.get("libs", "")
        return v.split(",") if v else []

    @property
    def max_function_args(self) -> int:
        return int(self.attrs.get("max_function_args", 0))

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
        opts = " ".join(f"-{k}" if v is True else f"-{k}={v}" for k, v in self.attrs.items())
        return f"{self.kind.name} {opts}".strip()

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
