"""Max pooling's indices output on Relax (ONNX MaxPool's ``Indices``, PyTorch's
``max_pool*d_with_indices``): the shared algorithm of ``frontend_common.onnx_pool`` driven by
Relax operators, for the ONNX and the torch.export importers."""

from __future__ import annotations

from collections.abc import Callable

from ...frontend_common.onnx_pool import maxpool_indices as _indices
from .. import op as _op
from ..expr import Expr, const


class RelaxIndicesOps:
    """``IndicesOps`` (frontend_common.onnx_pool) on Relax; ``emit`` binds each call."""

    def __init__(self, emit: Callable[[Expr], Expr]):
        self.emit = emit

    def pad(self, x, widths, value):
        flat = [int(p) for w in widths for p in w]
        return self.emit(_op.nn.pad(x, flat, pad_value=value))

    def strided_slice(self, x, begin, end, strides, axes):
        return self.emit(_op.strided_slice(x, axes, begin, end, strides))

    def stack(self, xs):
        return self.emit(_op.concat([self.emit(_op.expand_dims(v, 0)) for v in xs], 0))

    def argmax0(self, x):
        return self.emit(_op.argmax(x, axis=0))

    def take0(self, table, idx):
        return self.emit(_op.take(const(table), idx, axis=0))

    def add_const(self, x, c):
        return self.emit(_op.add(x, const(c)))


def maxpool_indices(emit: Callable[[Expr], Expr], shape: list[int], dtype: str, x: Expr,
                    out_sizes, kernel, strides, dil, begin, end, storage_order: int = 0,
                    per_plane: bool = False) -> Expr:
    """int64 indices of the element each max-pool output took (``frontend_common.onnx_pool``):
    flat over the whole input, or with ``per_plane`` within each N, C plane. ``shape`` must be
    static."""
    return _indices(RelaxIndicesOps(emit), shape, dtype, x, out_sizes, kernel, strides, dil,
                    begin, end, storage_order, per_plane)
