"""Helpers shared by the nn op families: dim arithmetic, padding tuples and data layouts.

A layout string such as ``NCHW16c`` names primal axes in capitals and split sub-axes as a factor
plus a lower-case letter. Shapes convert between such layouts and a primal order (``NCHW``) so
each op's rule works in one canonical layout. ``arith``, ``pad_tuple`` and ``parse_layout`` come
from ``minitvm.topi`` (the numpy references use them too, with the array relayouts in
``minitvm.topi.reference.utils``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ....topi.layout import parse_layout
from ....topi.shape_conditions import agree, assume_positive
from ....topi.utils import arith, pad_tuple
from ..type_relations import dims_product, is_static_dim, shape_str

__all__ = [
    "arith", "pad_tuple", "parse_layout", "shape_to_primal", "shape_from_primal", "layout_axis",
    "check_positive", "check_window_attrs",
]


# --------------------------------------------------------------------------- dims
def check_positive(op_name: str, what: str, value) -> None:
    """A computed extent must be positive: raised when static, stated when symbolic."""
    if is_static_dim(value) and value <= 0:
        raise TypeError(f"{op_name}: the computed {what} is {value}, which is not positive")
    assume_positive(value)


def check_window_attrs(op_name: str, nd: int, padding=(), **positive) -> None:
    """Window attributes are sane: each of ``positive`` has ``nd`` values > 0, padding >= 0."""
    for name, values in positive.items():
        values = tuple(values)
        if len(values) != nd:
            raise ValueError(f"{op_name}: {name} must have {nd} values, got {list(values)}")
        if any(is_static_dim(v) and v <= 0 for v in values):
            raise ValueError(f"{op_name}: {name} must be positive, got {list(values)}")
    if any(is_static_dim(p) and p < 0 for p in padding):
        raise ValueError(f"{op_name}: padding must be non-negative, got {list(padding)}")


# --------------------------------------------------------------------------- layouts
def layout_axis(layout: str, axis: str) -> int:
    """Position of ``axis`` (a primal or sub-axis letter) in the layout, or -1."""
    names = [a for a, _ in parse_layout(layout)]
    return names.index(axis) if axis in names else -1


def _check_rank(shape: Sequence, axes, layout: str, what: str, op_name: str) -> None:
    if len(shape) != len(axes):
        raise TypeError(
            f"{op_name}: {what} has rank {len(shape)} {shape_str(shape)} but its layout "
            f"{layout} has {len(axes)} axes"
        )


def shape_to_primal(shape: Sequence, layout: str, primal: str, what: str = "input",
                    op_name: str = "op") -> dict:
    """Map each primal axis of ``primal`` to its full extent in ``shape`` (given in ``layout``)."""
    axes = parse_layout(layout, op_name)
    _check_rank(shape, axes, layout, what, op_name)
    pos = {name: i for i, (name, _) in enumerate(axes) if name.isupper()}
    out = {}
    for p in primal:
        if p not in pos:
            raise ValueError(f"{op_name}: {what} layout {layout} has no {p} axis (needs {primal})")
        d = shape[pos[p]]
        sub = p.lower()
        for i, (name, factor) in enumerate(axes):  # every sub-axis (a double split has two)
            if name != sub:
                continue
            inner = shape[i]
            if not agree(inner, factor):
                raise TypeError(f"{op_name}: {what} {shape_str(shape)} has {inner} at sub-axis "
                                f"{factor}{sub} of layout {layout}")
            d = dims_product([d, factor])
        out[p] = d
    extra = [n for n, _ in axes if n.upper() not in primal]
    if extra:
        raise ValueError(f"{op_name}: {what} layout {layout} has axes {extra} not in {primal}")
    return out


def shape_from_primal(dims: dict, layout: str, op_name: str = "op", what: str = "output") -> tuple:
    """Build a shape in ``layout`` from primal extents (splitting the sub-axes)."""
    axes = parse_layout(layout, op_name)
    factors: dict = {}  # primal axis -> product of its sub-axis factors
    for n, f in axes:
        if f is not None:
            factors[n.upper()] = factors.get(n.upper(), 1) * f
    shape = []
    for name, factor in axes:
        if factor is not None:
            shape.append(factor)
            continue
        if name not in dims:
            raise ValueError(f"{op_name}: {what} layout {layout} has an unknown axis {name}")
        d = dims[name]
        f = factors.get(name)
        if f is not None:
            if is_static_dim(d):
                if d % f:
                    raise TypeError(f"{op_name}: {what} axis {name} of extent {d} is not "
                                    f"divisible by the factor {f} of layout {layout}")
                d = d // f
            else:
                d = arith(lambda x, f=f: x // f, d)
        shape.append(d)
    return tuple(shape)
