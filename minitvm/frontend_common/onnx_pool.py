"""MaxPool's optional second output, ``Indices``, computed from ordinary tensor operations;
shared by both importers through a small adapter (``IndicesOps``).

For each output element: the flat index (over the whole N x C x spatial input, row-major or,
with ``storage_order=1``, spatial axes column-major) of the element it took; with
``per_plane`` the index within its own N, C plane, as PyTorch's ``max_pool*d_with_indices``
and ``max_unpool*d`` count. The input is
padded with the dtype's lowest value, one strided slice per kernel offset is stacked and
``argmax``-ed (the first maximum in row-major kernel order, as ONNX Runtime picks), then the
kernel offset and window origin are mapped to input coordinates through constant tables."""

from __future__ import annotations

import itertools
from typing import Any, Protocol

import numpy as np

__all__ = ["IndicesOps", "maxpool_indices"]


class IndicesOps(Protocol):
    def pad(self, x, widths: list[tuple[int, int]], value) -> Any: ...
    def strided_slice(self, x, begin: list, end: list, strides: list, axes: list) -> Any: ...
    def stack(self, xs: list) -> Any: ...  # along a new axis 0
    def argmax0(self, x) -> Any: ...  # along axis 0, dropping it
    def take0(self, table: np.ndarray, idx) -> Any: ...  # table[idx]
    def add_const(self, x, c: np.ndarray) -> Any: ...


def maxpool_indices(ops: IndicesOps, shape, dtype: str, x, out_sizes, kernel, strides, dil,
                    begin, end, storage_order: int, per_plane: bool = False):
    nb, ch, spatial = shape[0], shape[1], list(shape[2:])
    n = len(spatial)
    lowest = float("-inf") if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
    # pad enough at the end for the last window (ceil mode may run past the end padding)
    pad_end = [max(end[i], (out_sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1
                   - spatial[i] - begin[i]) for i in range(n)]
    xp = ops.pad(x, [(0, 0), (0, 0)] + [(begin[i], pad_end[i]) for i in range(n)], lowest)
    offsets = list(itertools.product(*[range(k) for k in kernel]))
    axes = list(range(2, 2 + n))
    windows = []
    for off in offsets:
        lo = [off[i] * dil[i] for i in range(n)]
        hi = [lo[i] + (out_sizes[i] - 1) * strides[i] + 1 for i in range(n)]
        windows.append(ops.strided_slice(xp, lo, hi, list(strides), axes))
    which = ops.argmax0(ops.stack(windows))  # [N, C, *out]: the kernel offset taken
    if storage_order == 1:
        st = [int(np.prod(spatial[:i])) for i in range(n)]
    else:
        st = [int(np.prod(spatial[i + 1:])) for i in range(n)]
    table = np.array([sum(off[i] * dil[i] * st[i] for i in range(n)) for off in offsets],
                     "int64")
    origin = np.zeros(out_sizes, "int64")
    for i in range(n):
        o = (np.arange(out_sizes[i]) * strides[i] - begin[i]) * st[i]
        origin = origin + o.reshape([-1 if j == i else 1 for j in range(n)])
    if per_plane:
        return ops.add_const(ops.take0(table, which), origin)
    plane = int(np.prod(spatial))
    nc = (np.arange(nb * ch, dtype="int64") * plane).reshape([nb, ch] + [1] * n)
    return ops.add_const(ops.take0(table, which), origin + nc)
