"""PyTorch -> Relax: ``relax.frontend.torch.from_exported_program`` for ``torch.export``
programs (core ATen after decomposition); a dynamic ``Dim`` becomes a symbolic ``tir`` var."""

from __future__ import annotations

from . import aten_math  # noqa: F401  (arithmetic, unary functions, atan2 / hypot / lerp)
from . import aten_logic  # noqa: F401  (where, ~ & | ^, shifts)
from . import aten_nn  # noqa: F401  (activations, matmuls, convolutions, norms, attention)
from . import aten_pool  # noqa: F401  (max / average / adaptive pools)
from . import aten_resample  # noqa: F401  (upsampling, grid_sample)
from . import aten_reduce  # noqa: F401  (sum, mean, max, var, norms, cumsum)
from . import aten_sort  # noqa: F401  (sort, topk, kthvalue)
from . import aten_scatter  # noqa: F401  (scatter, scatter_reduce, index_put, masked_scatter)
from . import aten_index  # noqa: F401  (index_select, gather, take_along_dim, x[i, j])
from . import aten_shape  # noqa: F401  (views, permutes, cat, slices, padding)
from . import aten_create  # noqa: F401  (full, arange, scalar_tensor, tril_indices)
from . import aten_symbolic  # noqa: F401  (size arithmetic, sym_size, assertions)
from . import aten_fft  # noqa: F401  (FFTs and complex values between them; wraps add/mul)
from . import aten_inplace  # noqa: F401  (empty, copy, slice_scatter: in-place writes)
from . import aten_windows  # noqa: F401  (unfold, cdist, bucketize, searchsorted)
from . import aten_order  # noqa: F401  (median, mode, cummax / cummin, logcumsumexp, histc, pdist)
from . import aten_fake_quant  # noqa: F401  (fake_quantize_per_tensor / per_channel_affine)
from . import aten_special  # noqa: F401  (erfc, erfcx, ndtri, i0, frexp, lgamma, digamma, ...)
from . import aten_linalg_solve  # noqa: F401  (cholesky, cholesky_solve, solve, inv, slogdet, det)
from . import aten_ctc  # noqa: F401  (ctc_loss, _ctc_loss)
from . import aten_dynamic  # noqa: F401  (unique, nonzero, bincount: data-dependent result shapes)
from . import aten_torchvision  # noqa: F401  (torchvision's roi_align, roi_pool)
from .context import ATEN, OpNotImplemented, TorchImportError
from .exported_program import ExportedProgramImporter
from .fx_translator import from_fx
from . import exported_program as exported_program_translator  # TVM's module name

import sys as _sys  # noqa: E402

_sys.modules.setdefault(__name__ + ".exported_program_translator", exported_program_translator)

__all__ = ["from_exported_program", "from_fx", "supported_ops", "TorchImportError", "OpNotImplemented"]


def supported_ops() -> list[str]:
    """The ATen overloads (and size arithmetic) this importer converts."""
    return sorted(ATEN)


# composite ops Relax has directly: kept whole rather than decomposed (a 4-D matmul would
# otherwise become expand / reshape / bmm with merged symbolic dims; a global average pool of a
# channels-last tensor, as ConvNeXt's after its permutes, becomes mean + as_strided; col2im an
# index_put accumulating over skipped leading axes, where relax.frontend.fold gathers; bilinear
# a 4-operand broadcast product, where one matmul does; max_unpool an index_put over the whole
# output, where a gather from the pool's windows does; the linalg factorizations and solves
# would otherwise become their ``_ex`` forms with an effectful run-time error check)
_KEEP = ("matmul.default", "linear.default", "scaled_dot_product_attention.default",
         "adaptive_avg_pool2d.default", "col2im.default", "bilinear.default",
         "max_unpool2d.default", "max_unpool3d.default", "linalg_cholesky.default",
         "linalg_solve.default", "linalg_inv.default", "linalg_slogdet.default",
         "linalg_det.default", "cholesky_solve.default", "logdet.default")


def _decomposition_table():
    """torch.export's default (core ATen) decompositions, minus the ops in ``_KEEP``."""
    import torch

    table = torch.export.default_decompositions()
    for name in _KEEP:
        packet, overload = name.split(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        if op in table:
            del table[op]
    return table


def from_exported_program(exported_program, *, keep_params_as_input: bool = False,
                          unwrap_unit_return_tuple: bool = False,
                          custom_convert_map: dict | None = None,
                          run_ep_decomposition: bool = True):
    """Convert a ``torch.export.ExportedProgram`` into a Relax IRModule (function ``main``).

    Parameters
    ----------
    exported_program : torch.export.ExportedProgram or str
        The program (``torch.export.export(model, args, dynamic_shapes=...)``) or a ``.pt2``.
    keep_params_as_input : bool
        Keep the parameters as trailing inputs of ``main`` (values in its ``"params"``
        attribute, see ``relax.frontend.detach_params``) instead of constants.
    unwrap_unit_return_tuple : bool
        Return a single output as a tensor rather than a 1-tuple.
    custom_convert_map : dict, optional
        ATen name (``"sigmoid.default"``) -> ``converter(node, importer)`` returning the Relax
        expression of the node; ``importer.retrieve_args(node)`` gives its converted
        arguments and ``importer.block_builder`` emits.
    run_ep_decomposition : bool
        Run PyTorch's decompositions first (False keeps the program's own operators).

    Returns
    -------
    mod : tvm.IRModule
    """
    import torch

    ep = exported_program
    if isinstance(ep, str) or hasattr(ep, "__fspath__"):
        try:
            ep = torch.export.load(ep)
        except Exception as e:  # noqa: BLE001 - zip / pickle errors of a bad file
            raise TorchImportError(f"cannot read exported program {str(ep)!r}: "
                                   f"{type(e).__name__}: {e}") from e
    if not isinstance(ep, torch.export.ExportedProgram):
        raise TypeError(f"from_exported_program expects a torch.export.ExportedProgram, got "
                        f"{type(ep).__name__}")
    if run_ep_decomposition:
        from ....frontend_common.torch_export import decompose

        ep = decompose(ep, _decomposition_table(), TorchImportError)
    importer = ExportedProgramImporter(keep_params_as_input, unwrap_unit_return_tuple,
                                       custom_convert_map)
    return importer.from_exported_program(ep)
