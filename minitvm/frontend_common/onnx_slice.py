"""ONNX ``Slice`` bounds over a static dim as a Python slice, for both ONNX importers.

ONNX clamps differently from Python (and from TVM's ``strided_slice``, which follows Python) in
one case: stepping down from a start before the first element. ONNX counts a negative start
from the end and then clamps it to [0, dim - 1], so ``x[-8::-1]`` of 5 elements reads element 0;
Python's slice clamps it to "before the first" and reads nothing.
"""

from __future__ import annotations

__all__ = ["onnx_slice"]


def onnx_slice(start: int, end: int, step: int, dim: int) -> slice:
    """The Python slice selecting what ONNX ``Slice(start, end, step)`` selects from ``dim``
    elements: bounds in range, ``stop`` None where the slice runs down through element 0."""
    start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise ValueError("Slice: a step cannot be zero")
    if dim == 0:
        return slice(0, 0, step)
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, end if end >= 0 else None, step)
