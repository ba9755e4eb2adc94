"""A dynamic (``relay.Any()``) dimension as the ONNX importer's converters see it.

``Context.shape`` gives a tensor with run-time sizes (an ONNX ``dim_param`` such as "batch" or
"seq", an unnamed dynamic dim, or ``relay.Any()`` in ``from_onnx``'s ``shape=``) a shape holding
a ``DynamicDim`` there. Converters that read only the other dimensions (a Conv's channels, a
pooling's plane) work unchanged; any arithmetic or ``int()`` on the dynamic one raises a clear
``ImportError_`` naming the operator instead of a wrong constant.

Each ``DynamicDim`` carries the identity of its size: the ``relay.Any()`` object in the Relay
type, one per ONNX dim_param name (ONNX: one name is one size throughout a model), a fresh one
per unnamed dim and per size a type relation computes (a product, a concatenated length). Two
are equal only when they share it (``batch == batch``, never ``batch == seq``); ``0 in shape``
and ``shape[0] == 1`` are False (not known to be so). ``tensor`` and ``axis`` say where the size
can be read at run time (``shape_of(tensor)[axis]``).
"""

from __future__ import annotations

from ....ir.prim_expr import Any
from ..common import ImportError_

__all__ = ["DynamicDim", "has_dynamic", "one_inferred", "relay_dims"]


class DynamicDim:
    """One dimension of run-time size: ``symbol`` (a ``relay.Any()``) is its identity, ``axis``
    where it sits in ``tensor``'s shape, ``name`` the ONNX dim_param it came from ('' if none)."""

    __slots__ = ("axis", "symbol", "tensor", "name")

    def __init__(self, axis: int, symbol: Any | None = None, tensor=None, name: str = ""):
        self.axis = axis
        self.symbol = Any() if symbol is None else symbol
        self.tensor = tensor
        self.name = name

    def __repr__(self) -> str:
        return self.name or "?"

    def __eq__(self, other) -> bool:
        return other is self or (isinstance(other, DynamicDim) and other.symbol is self.symbol)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self.symbol)

    def _static_needed(self, *_args):
        what = f" ({self.name})" if self.name else ""
        raise ImportError_(
            f"this operator needs the static size of axis {self.axis}{what}, which is dynamic "
            "(relay.Any()); pass a concrete size for it in from_onnx's shape=")

    __int__ = __index__ = __float__ = _static_needed
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _static_needed
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = _static_needed
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = _static_needed


def has_dynamic(shape) -> bool:
    return any(isinstance(d, DynamicDim) for d in shape)


def relay_dims(shape) -> tuple:
    """``shape`` as a Relay type's dims: each ``DynamicDim`` as its own ``relay.Any()``."""
    return tuple(d.symbol if isinstance(d, DynamicDim) else int(d) for d in shape)


def one_inferred(shape) -> tuple | None:
    """``shape`` as a Relay reshape's new shape with its one dynamic dim inferred (-1); None
    when it has several (their sizes must then come from elsewhere: ``dynamic_reshape``)."""
    if sum(isinstance(d, DynamicDim) for d in shape) > 1:
        return None
    return tuple(-1 if isinstance(d, DynamicDim) else int(d) for d in shape)
