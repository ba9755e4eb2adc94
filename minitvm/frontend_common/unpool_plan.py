"""Max-unpooling (``max_unpool2d`` / ``max_unpool3d``, SegNet's decoder) as a gather instead of
a scatter, when the pooling that produced the indices is known and its windows do not overlap
(kernel <= stride, no dilation: the usual 2x2 / stride-2 pooling).

Each output position ``p`` (per spatial axis) then lies in at most one pooling window,
``q = (p + pad) // stride``, and receives ``x[q]`` exactly when the index recorded for
``q`` is ``p``'s flat position in its N, C plane; otherwise zero. An importer gathers ``x``
and the indices along each spatial axis by the constant ``source`` rows, compares the
gathered indices with the constant ``position`` table and keeps ``x`` where they agree and
``inside`` holds: elementwise work that fuses into one kernel, where a scatter would compare
every output with every input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["UnpoolPlan", "plan_unpool"]


@dataclass
class UnpoolPlan:
    sources: list[np.ndarray]  # per spatial axis: int64 [out_size], the window each p is in
    position: np.ndarray  # int64 [*out_sizes]: each output's flat position in its plane
    inside: np.ndarray | None  # bool [*out_sizes]: p lies in a window (None: all do)


def plan_unpool(in_sizes, out_sizes, kernel, stride, padding, dilation) -> UnpoolPlan | None:
    """The gather form of unpooling ``in_sizes`` -> ``out_sizes`` after a max pool of this
    geometry (one int per spatial axis each), or None when windows overlap (kernel > stride
    or dilation > 1) and a position may take one of several inputs."""
    n = len(in_sizes)
    if not (len(out_sizes) == len(kernel) == len(stride) == len(padding) == len(dilation)
            == n):
        return None
    if any(d != 1 or k > s for k, s, d in zip(kernel, stride, dilation, strict=True)):
        return None
    sources, inside = [], np.ones(tuple(out_sizes), bool)
    for a in range(n):
        p = np.arange(out_sizes[a]) + padding[a]
        q = p // stride[a]
        ok = (p - q * stride[a] < kernel[a]) & (q < in_sizes[a])
        sources.append(np.where(ok, q, 0).astype("int64"))
        inside &= ok.reshape([-1 if j == a else 1 for j in range(n)])
    position = np.arange(int(np.prod(out_sizes)), dtype="int64").reshape(tuple(out_sizes))
    return UnpoolPlan(sources, position, None if inside.all() else inside)
