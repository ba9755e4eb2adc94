"""BatchingOps(): combine parallel conv2d, dense and batch_matmul branches in one go.

TVM v0.19's convenience pass: a Sequential of CombineParallelConv2D(), CombineParallelDense()
and CombineParallelBatchMatmul(), each with its default ``min_num_branches`` of 3.
"""

from __future__ import annotations

from ...transform.sequential import Sequential
from .combine_parallel_batch_matmul import CombineParallelBatchMatmul
from .combine_parallel_conv2d import CombineParallelConv2D
from .combine_parallel_dense import CombineParallelDense

__all__ = ["BatchingOps"]


def BatchingOps() -> Sequential:  # noqa: N802 - TVM's name
    """The Sequential combining parallel conv2d, then dense, then batch_matmul ops."""
    return Sequential([CombineParallelConv2D(), CombineParallelDense(),
                       CombineParallelBatchMatmul()])
