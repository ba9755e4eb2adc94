"""Data layouts and the numpy relayout, shared by every dialect's layout rules and references."""

from __future__ import annotations

import math
import re

import numpy as np

from .utils import dims_product, shape_str

__all__ = ["Layout", "LayoutAxis", "check_convertible", "primal_extents", "transform_array",
           "parse_layout"]

# ``NCHW16c``: an upper-case letter is a primal axis (the whole dimension), a factor and a
# lower-case letter a subordinate axis (the inner block of the primal axis of that letter).
_UNDEF = "__undef__"


class LayoutAxis:
    """One axis of a layout: ``C`` (primal) or ``c`` with a factor (subordinate)."""

    __slots__ = ("name", "factor")

    def __init__(self, name: str, factor: int = -1):
        self.name = name
        self.factor = factor

    @property
    def is_primal(self) -> bool:
        return self.name.isupper()

    def to_primal(self) -> str:
        return self.name.upper()

    def to_subordinate(self) -> str:
        return self.name.lower()

    def __eq__(self, other):
        if isinstance(other, str):
            return self.name == other
        return isinstance(other, LayoutAxis) and (self.name, self.factor) == (
            other.name, other.factor)

    def __hash__(self):
        return hash((self.name, self.factor))

    def __str__(self):
        return self.name if self.is_primal else f"{self.factor}{self.name}"

    __repr__ = __str__


def _parse(name: str) -> tuple[LayoutAxis, ...]:
    if name in ("", _UNDEF):
        return ()
    axes: list[LayoutAxis] = []
    factor = ""
    for ch in name:
        if ch.isdigit():
            factor += ch
        elif ch.isalpha():
            if ch.isupper():
                if factor:
                    raise ValueError(f"invalid layout {name!r}: primal axis {ch} cannot have a "
                                     f"factor ({factor})")
                axes.append(LayoutAxis(ch))
            else:
                if not factor or int(factor) <= 0:
                    raise ValueError(f"invalid layout {name!r}: subordinate axis {ch} needs a "
                                     "positive factor in front of it")
                axes.append(LayoutAxis(ch, int(factor)))
            factor = ""
        else:
            raise ValueError(f"invalid layout {name!r}: unexpected character {ch!r}")
    if factor:
        raise ValueError(f"invalid layout {name!r}: a factor must precede an axis")
    seen: set[str] = set()
    for ax in axes:
        # a primal axis appears once; a subordinate one may repeat (TVM's double split, e.g.
        # OIHW4i16o4i: the input channels blocked by 16 and each block again by 4)
        if ax.is_primal and ax.name in seen:
            raise ValueError(f"invalid layout {name!r}: axis {ax.name} appears twice")
        seen.add(ax.name)
    for ax in axes:
        if not ax.is_primal and ax.to_primal() not in seen:
            raise ValueError(f"invalid layout {name!r}: subordinate axis {ax.name} has no primal "
                             f"axis {ax.to_primal()}")
    return tuple(axes)


class Layout:
    """A parsed layout string (``tvm.tir.layout("NCHW16c")``); undefined when empty."""

    __slots__ = ("name", "axes")

    def __init__(self, name: str = _UNDEF):
        if isinstance(name, Layout):
            name = name.name
        self.axes = _parse(name)
        self.name = "".join(str(a) for a in self.axes) if self.axes else (
            _UNDEF if name in ("", _UNDEF) else name)

    @property
    def defined(self) -> bool:
        return self.name != _UNDEF

    def __bool__(self) -> bool:
        return self.defined

    def __len__(self) -> int:
        return len(self.axes)

    def ndim(self) -> int:
        return len(self.axes)

    def ndim_primal(self) -> int:
        return sum(1 for a in self.axes if a.is_primal)

    def __contains__(self, axis: str) -> bool:
        return any(a.name == axis for a in self.axes)

    def __getitem__(self, index: int) -> str:
        if not -len(self.axes) <= index < len(self.axes):
            raise IndexError(f"layout index {index} out of range for {self.name}")
        return self.axes[index].name

    def index_of(self, axis: str) -> int:
        """Position of ``axis`` (e.g. ``"C"`` or ``"c"``), -1 when absent."""
        for i, a in enumerate(self.axes):
            if a.name == axis:
                return i
        return -1

    def factor_of(self, axis: str) -> int:
        """Factor of the subordinate axis of ``axis`` (either case), -1 when not split; the
        product of the factors when the axis is split more than once (TVM's FactorOf)."""
        sub = axis.lower()
        factors = [a.factor for a in self.axes if a.name == sub]
        return math.prod(factors) if factors else -1

    def primal(self) -> Layout:
        """The layout with subordinate axes dropped: ``NCHW16c`` -> ``NCHW``."""
        return Layout("".join(a.name for a in self.axes if a.is_primal))

    def split(self, axis: str, target_pos: int, factor: int) -> Layout:
        """Insert the subordinate axis ``factor``+``axis`` at ``target_pos``."""
        parts = [str(a) for a in self.axes]
        parts.insert(target_pos, f"{factor}{axis.lower()}")
        return Layout("".join(parts))

    def subordinate_layout_of(self):
        return {a.to_primal(): self.factor_of(a.name) for a in self.axes if not a.is_primal}

    def __eq__(self, other):
        if isinstance(other, str):
            other = Layout(other)
        return isinstance(other, Layout) and self.name == other.name

    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"Layout({self.name})"


def check_convertible(src: Layout, dst: Layout) -> None:
    if not src.defined or not dst.defined:
        raise ValueError(f"cannot convert between layouts {src.name} and {dst.name}: "
                         "a layout is undefined")
    sp = sorted(a.name for a in src.axes if a.is_primal)
    dp = sorted(a.name for a in dst.axes if a.is_primal)
    if sp != dp:
        raise ValueError(f"cannot convert layout {src.name} to {dst.name}: they have different "
                         f"primal axes ({''.join(sp)} vs {''.join(dp)})")


def primal_extents(src: Layout, shape) -> dict:
    """Full extent of every primal axis, from a shape laid out in ``src``."""
    if len(shape) != len(src):
        raise ValueError(f"shape {shape_str(shape)} has rank {len(shape)} but layout {src.name} "
                         f"has {len(src)} axes")
    ext: dict = {}
    for a, d in zip(src.axes, shape):
        key = a.to_primal()
        ext[key] = d if key not in ext else dims_product([ext[key], d])
    return ext


def primal_groups(layout: Layout) -> dict[str, list[int]]:
    """Primal axis name -> positions of that axis and its sub-axes in ``layout``, outermost
    first: the primal axis, then its sub-axes in layout order (TVM nests a later sub-axis
    inside an earlier one)."""
    groups: dict[str, list[int]] = {}
    for i, a in enumerate(layout.axes):
        if a.is_primal:
            groups.setdefault(a.name, []).insert(0, i)
    for i, a in enumerate(layout.axes):
        if not a.is_primal:
            groups.setdefault(a.to_primal(), []).append(i)
    return groups


def transform_array(data: np.ndarray, src, dst) -> np.ndarray:
    """Relayout a numpy array from ``src`` to ``dst`` (the layout_transform reference)."""
    src, dst = Layout(src), Layout(dst)
    check_convertible(src, dst)
    if len(src) != data.ndim:
        raise ValueError(f"array of rank {data.ndim} does not match layout {src.name}")
    # 1. Bring each primal axis next to its sub-axes (outer to inner) and merge them.
    primal_order = [a.name for a in src.axes if a.is_primal]
    groups = primal_groups(src)
    perm = [i for name in primal_order for i in groups[name]]
    moved = np.transpose(data, perm)
    ext = primal_extents(src, data.shape)
    primal = moved.reshape([ext[n] for n in primal_order])
    # 2. Reorder primal axes into dst's primal order, then split dst's blocked axes (the
    # primal part outermost, then each sub-axis in dst's order) and permute into dst.
    dst_primal = [a.name for a in dst.axes if a.is_primal]
    primal = np.transpose(primal, [primal_order.index(n) for n in dst_primal])
    dst_groups = primal_groups(dst)
    split_shape, split_pos = [], []
    for name in dst_primal:
        f = dst.factor_of(name)
        if f > 0:
            if ext[name] % f:
                raise ValueError(f"layout_transform {src.name} -> {dst.name}: dimension "
                                 f"{ext[name]} of axis {name} is not divisible by {f}")
            split_shape.append(ext[name] // f)
            split_shape += [dst.axes[i].factor for i in dst_groups[name][1:]]
        else:
            split_shape.append(ext[name])
        split_pos += dst_groups[name]
    blocked = primal.reshape(split_shape)
    return np.ascontiguousarray(np.transpose(blocked, [split_pos.index(i)
                                                       for i in range(len(dst.axes))]))


# ------------------------------------------------------------------ layout strings as axis lists
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
    primal = [a for a in names if a.isupper()]
    if pos != len(layout) or len(set(primal)) != len(primal):  # sub-axes may repeat
        raise ValueError(f"{op_name}: invalid layout {layout!r}")
    for name, factor in axes:
        if factor is not None and name.upper() not in names:
            raise ValueError(f"{op_name}: invalid layout {layout!r}: sub-axis {name} has no "
                             f"primal axis {name.upper()}")
    return axes
