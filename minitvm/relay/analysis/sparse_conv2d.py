"""Which ``nn.conv2d`` weights are sparse enough for Conv2dToSparse (TVM's
``relay.analysis.sparse_conv2d``): finds the weights, converts them to BSR in ``params``."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...ir.op import Op
from ..expr import Var
from ..expr_functor import ExprVisitor

__all__ = ["SparseAnalysisResult", "process_params", "bsr_blocks"]

SparseAnalysisResult = namedtuple("SparseAnalysisResult", ["weight_name", "weight_shape"])


def _search_conv2d_op_weight(expr) -> list[str]:
    """Names of the variables used as ``nn.conv2d`` weights, in visiting order (with repeats)."""
    conv = Op.get("nn.conv2d")
    names: list[str] = []

    class _Search(ExprVisitor):
        def visit_call(self, call):
            if call.op is conv and type(call.args[1]) is Var:
                names.append(call.args[1].name_hint)
            super().visit_call(call)

    _Search().visit(expr)
    return names


def bsr_blocks(matrix: np.ndarray, block_h: int, block_w: int):
    """``(data, indices, indptr)`` of ``matrix`` in BSR form: the ``block_h x block_w`` blocks
    holding a nonzero, row-block by row-block, each with its column-block index (scipy's and
    TVM's order)."""
    rows, cols = matrix.shape
    if rows % block_h or cols % block_w:
        raise ValueError(f"bsr_blocks: a {rows}x{cols} matrix does not split into "
                         f"{block_h}x{block_w} blocks")
    grid = matrix.reshape(rows // block_h, block_h, cols // block_w, block_w).swapaxes(1, 2)
    keep = np.any(grid != 0, axis=(2, 3))
    row_ids, col_ids = np.nonzero(keep)
    data = grid[row_ids, col_ids].reshape(-1, block_h, block_w)
    indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype("int32")
    return data, col_ids.astype("int32"), indptr


def process_params(expr, params: dict, block_size, sparsity_threshold: float, layout: str,
                   kernel_size: int, reg_task_input: bool = True):
    """Replace, in ``params`` (changed in place, as TVM does), each square 1x1 or 3x3 conv2d
    weight of ``kernel_size`` whose share of zeros reaches ``sparsity_threshold`` by its BSR
    parts ``<name>.data``, ``.indices`` and ``.indptr``; return the converted names and BSR
    shapes for Conv2dToSparse. The weight matrix is (out channels, kh*kw*in channels).

    Unlike TVM, ``.data`` stays 3-D when the block is one column wide (TVM drops that axis;
    our ``nn.sparse_conv2d`` takes 3-D BSR data), and ``reg_task_input`` is accepted and
    ignored (there is no auto-scheduler task registry here).
    """
    from ...runtime.ndarray import array

    if layout not in ("NHWC", "NCHW"):
        raise ValueError(f"process_params: layout must be 'NHWC' or 'NCHW', got {layout!r}")
    names, shapes = [], []
    for name in _search_conv2d_op_weight(expr):
        if name not in params:
            continue
        value = params[name]
        w = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        kh, kw = (w.shape[0], w.shape[1]) if layout == "NHWC" else (w.shape[2], w.shape[3])
        if kh != kw or kh != kernel_size or kh not in (1, 3):
            continue
        matrix = w.reshape(-1, w.shape[-1]).T if layout == "NHWC" else w.reshape(w.shape[0], -1)
        if kh == 1 and 1.0 - np.count_nonzero(w) / w.size < sparsity_threshold:
            continue
        data, indices, indptr = bsr_blocks(matrix, *block_size)
        if kh == 3 and 1.0 - data.size / matrix.size < sparsity_threshold:
            continue
        del params[name]
        names.append(name)
        shapes.append(list(data.shape) + list(indices.shape) + list(indptr.shape))
        params[name + ".data"] = array(np.ascontiguousarray(data))
        params[name + ".indices"] = array(indices)
        params[name + ".indptr"] = array(indptr)
    return SparseAnalysisResult(weight_name=names, weight_shape=shapes)
