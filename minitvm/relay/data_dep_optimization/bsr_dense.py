"""Dense weights that are mostly zeros -> block sparse (BSR) ``nn.sparse_dense``."""

from __future__ import annotations

from ..analysis.sparse_dense import process_params
from ..transform import DenseToSparse
from .utils import _run_opt_pass

__all__ = ["convert"]


def convert(func, params: dict, blocksize, sparsity_threshold: float):
    """Rewrite the ``nn.dense`` calls of ``func`` whose weight in ``params`` has at least
    ``sparsity_threshold`` zeros into ``nn.sparse_dense`` on BSR blocks of ``blocksize``.

    ``params`` is updated in place (each converted weight replaced by its ``.data``,
    ``.indices`` and ``.indptr``); returns ``(new_func, params)``.
    """
    info = process_params(func, params, blocksize, sparsity_threshold)
    new_func = _run_opt_pass(func, DenseToSparse(info.weight_name, info.weight_shape))
    return new_func, params
