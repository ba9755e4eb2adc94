"""Data layouts (``NCHW``, ``NCHW16c``, ``OIHW16i16o``) and conversions between them.

A layout is a sequence of axes. An upper-case letter is a primal axis (the whole dimension); a
lower-case letter preceded by a factor is a subordinate axis (the inner block of the primal axis
of the same letter). ``NCHW16c`` splits C into an outer ``C`` of extent C/16 and an inner ``16c``.
``Layout`` mirrors ``tvm.tir.Layout`` and ``BijectiveLayout`` ``tvm.tir.BijectiveLayout``.

``Layout``, ``LayoutAxis`` and the numpy relayout ``transform_array`` live in
``minitvm.topi.layout`` (the numpy references use them too) and are re-exported here.
"""

from __future__ import annotations

import math

from ...tir.expr import Any
from ...topi.layout import (  # shared with topi's references (transform_array)
    Layout,
    LayoutAxis,
    check_convertible,
    primal_extents,
    transform_array,
)
from ...topi.shape_conditions import divides

__all__ = ["Layout", "BijectiveLayout", "layout", "bijective_layout", "transform_array",
           "LayoutAxis"]


def layout(layout_str: str, dtype: str = "int32") -> Layout:
    """``tvm.tir.layout``: parse a layout string."""
    return Layout(layout_str)


def _div(d, f: int, what: str):
    if isinstance(d, Any):
        return Any()
    if not divides(d, f):  # (a symbolic one must divide at each call)
        raise ValueError(f"{what}: dimension {d} is not divisible by the factor {f}")
    return d // f


def _layout_shape(src: Layout, dst: Layout, shape) -> tuple:
    check_convertible(src, dst)
    ext = primal_extents(src, shape)
    out = []
    what = f"layout_transform {src.name} -> {dst.name}"
    for a in dst.axes:
        if a.is_primal:
            f = dst.factor_of(a.name)
            out.append(ext[a.name] if f < 0 else _div(ext[a.name], f, what))
        else:
            out.append(a.factor)
    return tuple(out)


class BijectiveLayout:
    """A mapping between two convertible layouts (``tvm.tir.bijective_layout``)."""

    __slots__ = ("src_layout", "dst_layout")

    def __init__(self, src_layout, dst_layout):
        self.src_layout = Layout(src_layout) if isinstance(src_layout, str) else src_layout
        self.dst_layout = Layout(dst_layout) if isinstance(dst_layout, str) else dst_layout
        check_convertible(self.src_layout, self.dst_layout)

    def forward_shape(self, shape) -> tuple:
        return _layout_shape(self.src_layout, self.dst_layout, tuple(shape))

    def backward_shape(self, shape) -> tuple:
        return _layout_shape(self.dst_layout, self.src_layout, tuple(shape))

    def forward_index(self, index) -> tuple:
        return _map_index(self.src_layout, self.dst_layout, tuple(index))

    def backward_index(self, index) -> tuple:
        return _map_index(self.dst_layout, self.src_layout, tuple(index))


def bijective_layout(src_layout, dst_layout) -> BijectiveLayout:
    return BijectiveLayout(src_layout, dst_layout)


def _inner_extent(layout: Layout, pos: int) -> int:
    """Product of the factors of the sub-axes of the same letter after ``pos`` (how many
    elements one step of the sub-axis at ``pos`` spans; 1 when it is the innermost)."""
    name = layout.axes[pos].name
    return math.prod(a.factor for a in layout.axes[pos + 1:] if a.name == name)


def _map_index(src: Layout, dst: Layout, index) -> tuple:
    """Map a (static) index in ``src`` to the same element's index in ``dst`` (TVM's store
    rule: a sub-axis counts in units of the sub-axes of its letter nested inside it)."""
    full: dict[str, int] = {}
    for pos, (a, i) in enumerate(zip(src.axes, index)):
        if a.is_primal:
            f = src.factor_of(a.name)
            full[a.name] = full.get(a.name, 0) + int(i) * (f if f > 0 else 1)
        else:
            step = _inner_extent(src, pos)
            full[a.to_primal()] = full.get(a.to_primal(), 0) + int(i) * step
    out = []
    for pos, a in enumerate(dst.axes):
        if a.is_primal:
            f = dst.factor_of(a.name)
            out.append(full[a.name] // f if f > 0 else full[a.name])
        else:
            inner = _inner_extent(dst, pos)
            out.append(full[a.to_primal()] % (a.factor * inner) // inner)
    return tuple(out)
