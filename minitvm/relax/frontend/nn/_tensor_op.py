"""Operators as methods of ``nn.Tensor`` (``a + b``, ``x.reshape(...)``), as in TVM."""

from __future__ import annotations

from ....ir.prim_expr import FloatImm, IntImm


def _op():
    from . import op  # noqa: PLC0415  (op imports core, which imports this module)

    return op


def _convert_scalar(scalar, ref):
    """A Python or tir scalar becomes a constant tensor of ``ref``'s dtype."""
    from .core import Tensor

    if isinstance(scalar, Tensor):
        return scalar
    if isinstance(scalar, FloatImm | IntImm):
        return Tensor.from_scalar(scalar.value, dtype=ref.dtype)
    if isinstance(scalar, bool):
        raise TypeError(f"cannot combine nn.Tensor with bool {scalar!r}")
    if isinstance(scalar, int | float):
        return Tensor.from_scalar(scalar, dtype=ref.dtype)
    raise TypeError(f"cannot combine nn.Tensor with {type(scalar).__name__} {scalar!r}; expected "
                    "an nn.Tensor or a Python/tir scalar")


class _TensorOp:
    """Mixin for ``nn.Tensor``: every operator emits through ``nn.op``."""

    __slots__ = ()

    def __add__(self, other):
        return _op().add(self, _convert_scalar(other, self))

    def __radd__(self, other):
        return _op().add(self, _convert_scalar(other, self))

    def __sub__(self, other):
        return _op().subtract(self, _convert_scalar(other, self))

    def __rsub__(self, other):
        return _op().subtract(_convert_scalar(other, self), self)

    def __mul__(self, other):
        return _op().multiply(self, _convert_scalar(other, self))

    def __rmul__(self, other):
        return _op().multiply(self, _convert_scalar(other, self))

    def __truediv__(self, other):
        return _op().divide(self, _convert_scalar(other, self))

    def __rtruediv__(self, other):
        return _op().divide(_convert_scalar(other, self), self)

    def __neg__(self):
        return _op().negative(self)

    def __lt__(self, other):
        return _op().less(self, _convert_scalar(other, self))

    def __le__(self, other):
        return _op().less_equal(self, _convert_scalar(other, self))

    def __gt__(self, other):
        return _op().greater(self, _convert_scalar(other, self))

    def __ge__(self, other):
        return _op().greater_equal(self, _convert_scalar(other, self))

    def astype(self, dtype):
        return _op().astype(self, dtype)

    def maximum(self, other):
        return _op().maximum(self, _convert_scalar(other, self))

    def minimum(self, other):
        return _op().minimum(self, _convert_scalar(other, self))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], list | tuple):
            shape = tuple(shape[0])
        return _op().reshape(self, shape)

    def permute_dims(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], list | tuple):
            axes = tuple(axes[0])
        return _op().permute_dims(self, list(axes) if axes else None)

    def repeat(self, repeats: int, axis: int | None = None):
        return _op().repeat(self, repeats, axis)
