"""Buffers: a typed, shaped view of memory that loads and stores go through."""

from __future__ import annotations

from ..ir.node import Node
from ..ir.type import PointerType, PrimType
from .expr import BufferLoad, IntImm, PrimExpr, Var, _to_expr


class Buffer(Node):
    """A multi-dimensional region of memory: ``data`` pointer, ``shape``, ``strides``, offset."""

    __slots__ = ("data", "dtype", "shape", "strides", "elem_offset", "name", "scope",
                 "data_alignment", "offset_factor", "axis_separators", "span")

    def __init__(self, data: Var, dtype: str, shape, strides=(), elem_offset=None, name="buffer",
                 scope: str = "global", data_alignment: int = 64, offset_factor: int = 1,
                 axis_separators=(), span=None):
        self.data = data
        self.dtype = str(dtype)
        self.shape = tuple(_to_expr(s) for s in shape)
        self.strides = tuple(_to_expr(s) for s in (strides or ()))
        index_dtype = self.shape[0].dtype if self.shape else "int32"
        self.elem_offset = _to_expr(0 if elem_offset is None else elem_offset, index_dtype)
        self.name = name
        self.scope = scope or "global"
        self.data_alignment = data_alignment
        self.offset_factor = offset_factor
        self.axis_separators = tuple(axis_separators or ())
        self.span = span

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> BufferLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices):
            raise TypeError("buffer slices are only valid in T.reads/T.writes regions")
        return BufferLoad(self, indices)

    def vload(self, indices, dtype=None) -> BufferLoad:
        return self[tuple(indices) if isinstance(indices, (list, tuple)) else indices]

    def scope_name(self) -> str:
        return self.scope

    def __repr__(self):
        return f"Buffer({self.name}, {list(self.shape)}, {self.dtype!r})"


def decl_buffer(shape, dtype: str = "float32", name: str = "buffer", data: Var | None = None,
                strides=None, elem_offset=None, scope: str = "", data_alignment: int = -1,
                offset_factor: int = 0, buffer_type: str = "", axis_separators=None,
                span=None) -> Buffer:
    """Declare a buffer (``tvm.tir.decl_buffer``); dims may be symbolic ``Var``s."""
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    if data is None:  # a fresh pointer, its declared scope on its type as TVM keeps it ("" is
        data = Var(name, "handle")  # no constraint for device planning, unlike "global")
        data.type_annotation = PointerType(PrimType(str(dtype)), scope or "")
    return Buffer(data, dtype, shape, strides or (), elem_offset, name, scope or "global",
                  64 if data_alignment == -1 else data_alignment, offset_factor or 1,
                  axis_separators or (), span)


def is_const_int(e, value: int | None = None) -> bool:
    """True if ``e`` is an integer immediate (equal to ``value`` when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)
