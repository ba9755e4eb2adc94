"""A dynamic (``relay.Any()``) dimension as the ONNX importer's converters see it.

``Context.shape`` gives a tensor of dynamic batch (``from_onnx(..., shape={"x": [relay.Any(),
3, 224, 224]})``) a shape holding a ``DynamicDim`` there. Converters that read only the other
dimensions (a Conv's channels, a pooling's plane) work unchanged; any arithmetic or ``int()`` on
the dynamic one raises a clear ``ImportError_`` naming the operator instead of a wrong constant.
It equals only another dynamic dimension (two run-time sizes are taken as equal, as a batch
is; the kernels check the sizes when they run): ``0 in shape`` and ``shape[0] == 1`` are False
(not known to be so).
"""

from __future__ import annotations

from ....ir.prim_expr import Any
from ..common import ImportError_

__all__ = ["DynamicDim", "has_dynamic", "relay_dims", "reshape_dims"]


class DynamicDim:
    """One dimension of unknown size; ``axis`` is where it sits in its tensor's shape."""

    __slots__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = axis

    def __repr__(self) -> str:
        return "?"

    def __eq__(self, other) -> bool:
        return other is self or isinstance(other, DynamicDim)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(DynamicDim)

    def _static_needed(self, *_args):
        raise ImportError_(
            f"this operator needs the static size of axis {self.axis}, which is dynamic "
            "(relay.Any()); pass a concrete size for it in from_onnx's shape=")

    __int__ = __index__ = __float__ = _static_needed
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _static_needed
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = _static_needed
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = _static_needed


def has_dynamic(shape) -> bool:
    return any(isinstance(d, DynamicDim) for d in shape)


def relay_dims(shape) -> tuple:
    """``shape`` with every ``DynamicDim`` as ``relay.Any()`` (for a Relay type)."""
    return tuple(Any() if isinstance(d, DynamicDim) else int(d) for d in shape)


def reshape_dims(shape) -> tuple:
    """``shape`` as a Relay reshape's new shape: its one dynamic dim (if any) inferred (-1)."""
    dynamic = [i for i, d in enumerate(shape) if isinstance(d, DynamicDim)]
    if len(dynamic) > 1:
        raise ImportError_(f"a reshape to {tuple(shape)} with several dynamic axes {dynamic}")
    return tuple(-1 if isinstance(d, DynamicDim) else int(d) for d in shape)
