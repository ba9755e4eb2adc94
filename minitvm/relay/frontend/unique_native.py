"""``frontend_common.unique_plan``'s builder for Relay, shared by the ONNX and PyTorch importers:
the kernel is Relay's ``unique`` op (native for float32 / int32 / int64), its padded outputs
sliced to the count; the result's length depends on the data, so the model runs on the VM."""

from __future__ import annotations

import numpy as np

from .. import expr as _expr
from .. import op as _op
from .common import RelayBuilder

__all__ = ["RelayUnique"]


class RelayUnique(RelayBuilder):
    """Expressions need no binding; a handle is ``unique``'s padded 5-tuple."""

    @staticmethod
    def take(x, indices, axis: int):
        return _op.take(x, indices, axis=axis)

    @staticmethod
    def rows(x, shape, axis: int):
        n = int(shape[axis])
        perm = [axis] + [k for k in range(len(shape)) if k != axis]
        moved = _op.transpose(x, perm) if axis else x
        return _op.reshape(moved, [n, -1])

    @staticmethod
    def unique(key, n: int, is_sorted: bool, equal_nan: bool, consecutive: bool = False):
        return _op.unique(key, is_sorted, True, equal_nan, consecutive)

    @staticmethod
    def unique_inverse(handle):
        return _op.cast(handle[2], "int64")

    @staticmethod
    def unique_outputs(handle, source, axis: int) -> tuple:
        _, first, inverse, count, counts = handle
        start = _expr.const(np.asarray([0], "int32"))
        first = _op.strided_slice(first, start, count)
        counts = _op.strided_slice(counts, start, count)
        return (_op.take(source, first, axis=axis), _op.cast(first, "int64"),
                _op.cast(inverse, "int64"), _op.cast(counts, "int64"))
