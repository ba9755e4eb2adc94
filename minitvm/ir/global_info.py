"""Module-level global infos (TVM's ``tvm.ir.GlobalInfo``): values an ``IRModule`` keeps in its
``global_infos`` beside its functions — Relax's virtual devices (``VDevice``: a target, an id
and a memory scope, what ``R.Tensor(..., vdevice="cuda:0")`` refers to) and a placeholder
(``DummyGlobalInfo``). Infos compare and hash structurally, as TVM's ``__eq__`` does."""

from __future__ import annotations

from .dialect import find_hook
from .node import Node
from .structural import structural_equal, structural_hash

__all__ = ["GlobalInfo", "DummyGlobalInfo", "VDevice"]


class GlobalInfo(Node):
    """Base of every global info; ``==`` is structural equality, ``same_as`` identity."""

    __slots__ = ()
    type_key = "ir.GlobalInfo"

    def __eq__(self, other) -> bool:
        return isinstance(other, GlobalInfo) and structural_equal(self, other)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return structural_hash(self)


class DummyGlobalInfo(GlobalInfo):
    """A global info without content (TVM's placeholder, used by tests and parsers)."""

    __slots__ = ()
    type_key = "ir.DummyGlobalInfo"

    def __repr__(self) -> str:
        return "I.dummy_global_info()"


class VDevice(GlobalInfo):
    """A virtual device: ``target`` (a Target, or its string / dict spec), ``vdevice_id`` and
    ``memory_scope``; Relax tensors name one to say where they live."""

    __slots__ = ("target", "vdevice_id", "memory_scope")
    type_key = "ir.VDevice"

    def __init__(self, target=None, vdevice_id: int = 0, memory_scope: str = "global"):
        if isinstance(target, str | dict):
            make = find_hook("make_target", type(target))
            if make is None:
                raise RuntimeError("VDevice: no target constructor is registered (import "
                                   "minitvm.target)")
            target = make(target)
        if target is not None and not hasattr(target, "kind"):
            raise TypeError(f"VDevice: target must be a Target, a target string or dict, got "
                            f"{type(target).__name__}")
        if isinstance(vdevice_id, bool) or not isinstance(vdevice_id, int) or vdevice_id < 0:
            raise ValueError(f"VDevice: vdevice_id must be a non-negative int, got {vdevice_id!r}")
        if not isinstance(memory_scope, str):
            raise TypeError(f"VDevice: memory_scope must be a str, got "
                            f"{type(memory_scope).__name__}")
        self.target = target
        self.vdevice_id = vdevice_id
        self.memory_scope = memory_scope

    def __repr__(self) -> str:
        return (f"I.vdevice({str(self.target)!r}, {self.vdevice_id}, "
                f"{self.memory_scope!r})" if self.target is not None else "I.vdevice()")
