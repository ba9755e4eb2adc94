"""Helpers shared by the nn op families: dim arithmetic, padding tuples and data layouts.

A layout string such as ``NCHW16c`` names primal axes in capitals and split sub-axes as a factor
plus a lower-case letter. Shapes and numpy arrays convert between such layouts and a primal order
(``NCHW``) so each op computes in one canonical layout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ....tir.expr import Any
from ..layout import transform_array
from ..type_relations import dims_product, is_static_dim, shape_str

__all__ = [
    "arith", "pad_tuple", "parse_layout", "shape_to_primal", "shape_from_primal", "np_to_primal",
    "np_from_primal", "layout_axis", "np_dtype", "acc_dtype", "check_positive",
    "check_window_attrs",
]


# --------------------------------------------------------------------------- dims
def arith(fn, *dims):
    """Apply ``fn`` to dims: ints stay ints, any unknown dim gives Any, else a symbolic expr."""
    if any(isinstance(d, Any) for d in dims):
        return Any()
    return fn(*dims)


def check_positive(op_name: str, what: str, value) -> None:
    if is_static_dim(value) and value <= 0:
        raise TypeError(f"{op_name}: the computed {what} is {value}, which is not positive")


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


def pad_tuple(padding, n: int, op_name: str = "op") -> tuple:
    """Expand ``n``-d padding given as 1, n or 2n values to 2n values (all befores, then afters)."""
    if isinstance(padding, int | np.integer):
        return (int(padding),) * (2 * n)
    padding = tuple(int(p) if isinstance(p, int | np.integer) else p for p in padding)
    if len(padding) == 1:
        return padding * (2 * n)
    if len(padding) == n:
        return padding + padding
    if len(padding) == 2 * n:
        return padding
    raise ValueError(
        f"{op_name}: padding must have 1, {n} or {2 * n} values, got {len(padding)}: {padding}"
    )


# --------------------------------------------------------------------------- layouts
_LAYOUT_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str, op_name: str = "op") -> list[tuple[str, int | None]]:
    """``"NCHW16c"`` -> ``[("N", None), ("C", None), ..., ("c", 16)]``; checks well-formedness."""
    pos = 0
    axes: list[tuple[str, int | None]] = []
    for m in _LAYOUT_TOKEN.finditer(layout):
        if m.start() != pos:
            break
        pos = m.end()
        factor, name = m.group(1), m.group(2)
        if name.isupper():
            if factor:
                raise ValueError(f"{op_name}: invalid layout {layout!r}: primal axis {name} "
                                 f"cannot have a factor")
            axes.append((name, None))
        else:
            if not factor or int(factor) <= 0:
                raise ValueError(f"{op_name}: invalid layout {layout!r}: sub-axis {name} needs "
                                 f"a positive factor")
            axes.append((name, int(factor)))
    names = [a for a, _ in axes]
    if pos != len(layout) or len(set(names)) != len(names):
        raise ValueError(f"{op_name}: invalid layout {layout!r}")
    for name, factor in axes:
        if factor is not None and name.upper() not in names:
            raise ValueError(f"{op_name}: invalid layout {layout!r}: sub-axis {name} has no "
                             f"primal axis {name.upper()}")
    return axes


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
    pos = {name: i for i, (name, _) in enumerate(axes)}
    out = {}
    for p in primal:
        if p not in pos:
            raise ValueError(f"{op_name}: {what} layout {layout} has no {p} axis (needs {primal})")
        d = shape[pos[p]]
        sub = p.lower()
        if sub in pos:
            factor = axes[pos[sub]][1]
            inner = shape[pos[sub]]
            if is_static_dim(inner) and inner != factor:
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
    factors = {n.upper(): f for n, f in axes if f is not None}
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


def np_to_primal(arr: np.ndarray, layout: str, primal: str) -> np.ndarray:
    """Relayout an array in ``layout`` into the plain ``primal`` order (no copy when equal)."""
    return arr if layout == primal else transform_array(arr, layout, primal)


def np_from_primal(arr: np.ndarray, primal: str, layout: str) -> np.ndarray:
    """Relayout an array in the plain ``primal`` order into ``layout`` (no copy when equal)."""
    return arr if layout == primal else transform_array(arr, primal, layout)


# --------------------------------------------------------------------------- dtypes
def np_dtype(dtype: str):
    return np.dtype("float16" if dtype == "bfloat16" else dtype)


def acc_dtype(dtype: str):
    """The numpy dtype to accumulate in: the output dtype, widened for small ints."""
    dt = np_dtype(dtype)
    if dt.kind in "iu" and dt.itemsize < 4:
        return np.dtype("int32")
    return dt
