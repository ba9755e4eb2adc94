"""Conv2d weights that are mostly zeros -> block sparse (BSR) ``nn.sparse_conv2d`` (TVM's
``relay.data_dep_optimization.bsr_conv2d``)."""

from __future__ import annotations

from ..analysis.sparse_conv2d import process_params
from ..transform import Conv2dToSparse, Conv2dToSparse2
from ..transform.bind_params import bind_params_by_name
from .utils import _run_opt_pass

__all__ = ["convert", "convert2"]


def convert(func, params: dict, blocksize, sparsity_threshold: float, layout: str = "NHWC",
            kernel_size: int = 1):
    """Rewrite the ``nn.conv2d`` calls of ``func`` whose weight in ``params`` is sparse enough
    into ``nn.sparse_conv2d`` on BSR blocks of ``blocksize``; ``params`` is updated in place
    (each converted weight replaced by ``.data``, ``.indices`` and ``.indptr``). Returns
    ``(new_func, params)``."""
    info = process_params(func, params, blocksize, sparsity_threshold, layout, kernel_size)
    new_func = _run_opt_pass(func, Conv2dToSparse(info.weight_name, info.weight_shape, layout,
                                                  kernel_size))
    return new_func, params


def convert2(func, params: dict, blocksize, sparsity_threshold: float, layout: str,
             kernel_size: int):
    """Bind ``params`` into ``func`` as constants, then rewrite the sparse enough conv2d calls
    with Conv2dToSparse2. Returns ``(new_func, params)``."""
    bound = bind_params_by_name(func, params)
    new_func = _run_opt_pass(bound, Conv2dToSparse2(layout, kernel_size, blocksize,
                                                    sparsity_threshold))
    return new_func, params
