"""``unique`` variants composed from the native unique kernel (``schedule.unique_sort``: a radix
sort and one scan), shared by both dialects' importers:

- ``unique_elements``: torch.unique / ONNX Unique of a 1-D input;
- ``unique_slices``: the unique slices along an axis (torch ``unique(dim=)``, ONNX ``axis``),
  each slice ranked column by column (each step the dense rank of ``rank * n + column rank``,
  below ``n ** 2``, int64; the last step's call gives the outputs), so the slices order
  lexicographically;
- ``unique_consecutive``: runs of equal elements or slices (torch.unique_consecutive): the
  kernel's run pass (``schedule.unique_runs``, no sort) on the elements themselves, or for
  slices on the running count of "differs from the one before".

Each returns ``(values, first, inverse, counts)`` sliced to the data-dependent number of
groups, the indices int64. With ``equal_nan`` False a NaN is its own value (torch's ``==``),
otherwise NaNs are one value (numpy's and ORT's ``unique``). ``b`` is the dialect's builder
(``UniqueBuilder``); elementwise maths go through ``b.ops`` (``relay.op`` or ``relax.op``).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..topi.unique import UNIQUE_DTYPES

__all__ = ["UniqueBuilder", "key_dtype", "normalize_dim", "unique_consecutive",
           "unique_elements", "unique_slices"]


class UniqueBuilder(Protocol):
    """What the plans need from a dialect's importer."""

    ops: Any

    def const(self, value: np.ndarray) -> Any: ...
    def emit(self, e) -> Any: ...
    def cast(self, x, dtype: str) -> Any: ...
    def slice_axis(self, x, axis: int, begin: int, end: int) -> Any: ...
    def concat(self, parts: list, axis: int) -> Any: ...
    def take(self, x, indices, axis: int) -> Any: ...
    def rows(self, x, shape, axis: int) -> Any: ...  # [n, m]: the slices along axis as rows
    def unique(self, key, n: int, is_sorted: bool, equal_nan: bool,
               consecutive: bool = False) -> Any: ...  # a handle; consecutive: runs of ==
    def unique_inverse(self, handle) -> Any: ...  # int64 [n]: each element's group
    def unique_outputs(self, handle, source, axis: int) -> tuple: ...  # (values, first, inv, counts)


#: input types whose values a wider kernel key holds exactly, in the same order
_WIDENED = {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "int32",
            "uint16": "int32", "uint32": "int64", "float16": "float32", "bfloat16": "float32"}


def normalize_dim(dim, rank: int) -> int:
    """``dim`` (negative counts from the end) of a rank-``rank`` input, checked."""
    if not -rank <= int(dim) < rank:
        raise ValueError(f"dim {dim} is out of range for a rank-{rank} input")
    return int(dim) % rank


def key_dtype(dtype: str) -> str | None:
    """The kernel's key type for values of ``dtype`` (None: the kernel has none, e.g. float64)."""
    return dtype if dtype in UNIQUE_DTYPES else _WIDENED.get(dtype)


def _key(b: UniqueBuilder, x, dtype: str):
    """``x`` in its kernel key type (as it is where there is none: the builder decides)."""
    kd = key_dtype(dtype)
    return x if kd is None or kd == dtype else b.emit(b.cast(x, kd))


def unique_elements(b: UniqueBuilder, flat, n: int, dtype: str, is_sorted: bool,
                    equal_nan: bool) -> tuple:
    """Unique elements of the 1-D ``flat`` of ``n`` (sorted, or by first occurrence)."""
    handle = b.unique(_key(b, flat, dtype), n, is_sorted, equal_nan)
    return b.unique_outputs(handle, flat, 0)


def _slice_key(b: UniqueBuilder, rows, n: int, m: int, equal_nan: bool):
    """A 1-D key of the ``n`` rows of ``rows`` [n, m] that orders and equates them as the rows
    lexicographically: the first column, or the dense rank of ``rank * n + column rank``."""
    ops = b.ops
    width = b.const(np.asarray(n, "int64"))
    rank = None
    for j in range(m):
        col = b.emit(b.take(rows, b.const(np.asarray(j, "int64")), 1))
        if rank is None:
            if m == 1:
                return col
            rank = b.unique_inverse(b.unique(col, n, True, equal_nan))
            continue
        col_rank = b.unique_inverse(b.unique(col, n, True, equal_nan))
        key = b.emit(ops.add(ops.multiply(rank, width), col_rank))
        if j == m - 1:
            return key
        rank = b.unique_inverse(b.unique(key, n, True, True))
    raise ValueError("unique of slices with no elements")


def _split(shape, axis: int) -> tuple[int, int]:
    """(n slices along ``axis``, m elements per slice) of a static, non-empty ``shape``."""
    if not all(isinstance(d, int | np.integer) for d in shape):
        raise ValueError(f"unique along an axis needs a static shape, got {list(shape)}")
    n = int(shape[axis])
    m = int(np.prod([d for k, d in enumerate(shape) if k != axis], dtype="int64"))
    if n == 0 or m == 0:
        raise ValueError(f"unique along axis {axis} of an empty input {list(shape)} is not "
                         "supported")
    return n, m


def unique_slices(b: UniqueBuilder, x, shape, dtype: str, axis: int, is_sorted: bool,
                  equal_nan: bool) -> tuple:
    """Unique slices of ``x`` along ``axis`` (lexicographic order, or by first occurrence)."""
    axis = normalize_dim(axis, len(shape))
    n, m = _split(shape, axis)
    rows = b.rows(_key(b, x, dtype), shape, axis)
    handle = b.unique(_slice_key(b, rows, n, m, equal_nan), n, is_sorted, equal_nan or m > 1)
    return b.unique_outputs(handle, x, axis)


def unique_consecutive(b: UniqueBuilder, x, shape, axis: int) -> tuple:
    """Runs of equal slices of ``x`` along ``axis`` (pass a 1-D ``x`` and 0 for elements);
    equality is the dtype's ``==`` (a NaN equals nothing, -0.0 equals 0.0)."""
    ops = b.ops
    axis = normalize_dim(axis, len(shape))
    n, _ = _split(shape, axis)
    if len(shape) == 1:  # elements: the run pass compares them directly
        key = x
    elif n == 1:
        key = b.const(np.zeros(1, "int64"))
    else:
        rows = b.rows(x, shape, axis)
        differs = ops.not_equal(b.slice_axis(rows, 0, 1, n), b.slice_axis(rows, 0, 0, n - 1))
        step = b.emit(ops.max(b.cast(differs, "int32"), axis=1))
        starts = b.emit(b.concat([b.const(np.ones(1, "int64")), b.cast(step, "int64")], 0))
        key = b.emit(ops.cumsum(starts, axis=0, dtype="int64"))
    return b.unique_outputs(b.unique(key, n, True, False, consecutive=True), x, axis)
