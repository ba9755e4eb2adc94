"""Which ``nn.dense`` weights are sparse enough for DenseToSparse (TVM's
``relay.analysis.sparse_dense``): finds the weights, converts them to BSR in ``params``."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...ir.op import Op
from ..expr import Call, Var
from ..expr_functor import dataflow_post_order

__all__ = ["SparseAnalysisResult", "process_params", "search_dense_op_weight"]

SparseAnalysisResult = namedtuple("SparseAnalysisResult", ["weight_name", "weight_shape"])


def search_dense_op_weight(expr) -> list[str]:
    """Names of the variables used directly as the weight of an ``nn.dense``, in program order."""
    dense = Op.get("nn.dense")
    names: list[str] = []
    for e in dataflow_post_order(expr.body if hasattr(expr, "params") else expr):
        if isinstance(e, Call) and e.op is dense and isinstance(e.args[1], Var):
            name = e.args[1].name_hint
            if name not in names:
                names.append(name)
    return names


# TVM's own name (private there, yet its "Deploy a Hugging Face Pruned Model" tutorial calls it)
_search_dense_op_weight = search_dense_op_weight


def process_params(expr, params: dict, block_size, sparsity_threshold: float):
    """Replace, in ``params`` (changed in place, as TVM does), each dense weight whose share of
    zeros is at least ``sparsity_threshold`` by its BSR parts ``<name>.data``, ``.indices`` and
    ``.indptr``; return the converted names and their 5-number shapes for DenseToSparse."""
    import scipy.sparse as sp

    from ...runtime.ndarray import array

    names, shapes = [], []
    for name in search_dense_op_weight(expr):
        if name not in params:
            continue
        value = params[name]
        w = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        if w.ndim != 2:
            raise ValueError(f"process_params: the dense weight {name!r} has shape {w.shape}, "
                             "expected 2-D")
        sparsity = 1.0 - np.count_nonzero(w) / max(1, w.size)
        if sparsity < sparsity_threshold:
            continue
        bsr = sp.bsr_matrix(w, blocksize=tuple(block_size))
        names.append(name)
        shapes.append(list(bsr.data.shape) + list(bsr.indices.shape) + list(bsr.indptr.shape))
        params[name + ".data"] = array(bsr.data)
        params[name + ".indices"] = array(bsr.indices.astype("int32"))
        params[name + ".indptr"] = array(bsr.indptr.astype("int32"))
        del params[name]
    return SparseAnalysisResult(weight_name=names, weight_shape=shapes)
