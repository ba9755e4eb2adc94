"""Layout helpers of the nn ops: a layout like ``NHWC`` as a permutation of ``NCHW``."""

from __future__ import annotations

from ...expr import Call
from ...struct_info import TensorStructInfo
from .._common import UNKNOWN_NDIM, fail, fmt_sinfo, shape_expr_values


def layout_perm(call: Call, layout: str, canonical: str, what: str) -> list[int]:
    """``perm[i]``: where axis ``canonical[i]`` sits in ``layout`` (layouts with split axes,
    such as ``NCHW4c``, are not supported)."""
    if sorted(layout) != sorted(canonical) or len(set(layout)) != len(layout):
        fail(call, f"requires the {what} layout to be a permutation of {canonical}, got "
                   f"{layout!r} (layouts with split axes are not supported)")
    return [layout.index(c) for c in canonical]


def to_canonical(dims, perm: list[int]) -> list:
    return [dims[p] for p in perm]


def from_canonical(dims, perm: list[int]) -> list:
    out: list = [None] * len(perm)
    for i, p in enumerate(perm):
        out[p] = dims[i]
    return out


def dims_per_layout(call: Call, s: TensorStructInfo, layout: str, what: str):
    """The tensor's dims (None when unknown) after checking its rank against ``layout``."""
    if s.ndim != UNKNOWN_NDIM and s.ndim != len(layout):
        fail(call, f"expects the {what} to have {len(layout)} dimensions under layout "
                   f"{layout}, got {fmt_sinfo(s)}")
    return shape_expr_values(s)
