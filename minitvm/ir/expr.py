"""Expression bases shared by every dialect: BaseExpr, RelayExpr (with the cached type), GlobalVar.

Nothing here knows a dialect: printing and calling go through the hooks of ``ir.dialect``.
"""

from __future__ import annotations

from ..runtime.script_printer import Scriptable
from .dialect import find_hook, get_hook
from .node import Node
from .virtual_device import VirtualDevice


class BaseExpr(Node, Scriptable):
    __slots__ = ("span",)


class RelayExpr(BaseExpr):
    """Base of Relay and Relax expressions (TVM's ``RelayExpr``). ``checked_type`` is the one
    mutable slot, filled by type inference (Relay) or normalization (Relax)."""

    __slots__ = ("_checked_type", "_virtual_device")

    def __init__(self, span=None):
        self.span = span
        self._checked_type = None
        self._virtual_device = None  # set: reading an unset slot raises (structural walks)

    @property
    def virtual_device_(self):
        """Where the value lives (TVM's ``virtual_device_``); fully unconstrained unless a
        device-planning pass or ``with_virtual_device`` set it."""
        vd = getattr(self, "_virtual_device", None)
        return vd if vd is not None else VirtualDevice.fully_unconstrained()

    @virtual_device_.setter
    def virtual_device_(self, value):
        """TVM code assigns ``expr.virtual_device_ = tvm.cpu()``: a Device or VirtualDevice."""
        self._virtual_device = value if value is None or isinstance(value, VirtualDevice) \
            else VirtualDevice(value)

    def with_virtual_device(self, virtual_device):
        """Set this node's ``virtual_device_`` (a fresh node's placement; returns self)."""
        self._virtual_device = virtual_device
        return self

    @property
    def checked_type(self):
        t = self._checked_type
        if t is None:
            raise ValueError(
                "The type checker has not populated the checked_type for this node; "
                "run relay.transform.InferType() first"
            )
        return t

    def _has_type(self) -> bool:
        return self._checked_type is not None

    __hash__ = Node.__hash__

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        return get_hook("astext", self)(self, show_meta_data, annotate)

    def script(self, **kwargs) -> str:
        return get_hook("script", self)(self, **kwargs)

    def show(self, **kwargs) -> None:
        print(self.script(**kwargs))

    def __str__(self):
        printer = find_hook("str", type(self))
        return printer(self) if printer is not None else Node.__repr__(self)

    def __repr__(self):
        return self.__str__()


class ArithmeticOperators:
    """Python's arithmetic operators on expressions, as calls of a dialect's operators: the
    dialect defines ``_binop(op_name, other, swap)`` (``x + y`` is ``_binop("add", y)``)."""

    __slots__ = ()

    def _binop(self, name: str, other, swap: bool = False):
        raise NotImplementedError(f"{type(self).__name__} has no arithmetic operators")

    def __add__(self, o):
        return self._binop("add", o)

    def __radd__(self, o):
        return self._binop("add", o, True)

    def __sub__(self, o):
        return self._binop("subtract", o)

    def __rsub__(self, o):
        return self._binop("subtract", o, True)

    def __mul__(self, o):
        return self._binop("multiply", o)

    def __rmul__(self, o):
        return self._binop("multiply", o, True)

    def __truediv__(self, o):
        return self._binop("divide", o)

    def __rtruediv__(self, o):
        return self._binop("divide", o, True)


class BaseFunc(RelayExpr):
    __slots__ = ("attrs",)


class GlobalVar(RelayExpr):
    """The name of a function in an IRModule (``@main``); equal to another of the same name."""

    __slots__ = ("name_hint", "type_annotation")
    _node_compare = "name"
    _node_shared = True

    def __init__(self, name_hint: str, type_annot=None, span=None):
        super().__init__(span)
        self.name_hint = name_hint
        self.type_annotation = type_annot

    def __call__(self, *args):
        """A call of this function in the dialect of its first argument that belongs to one
        (global variables and ops are shared); Relay's with no such argument."""
        builder = None
        for a in args:
            if isinstance(a, Node) and not type(a)._node_shared:
                builder = find_hook("call", type(a))
                break
        if builder is None:
            builder = find_hook("call", GlobalVar)
        if builder is None:
            raise NotImplementedError("no dialect can build a call (import minitvm.relay)")
        return builder(self, list(args))

    def __repr__(self):
        return f"GlobalVar({self.name_hint})"

    def __str__(self):
        return f"@{self.name_hint}"
