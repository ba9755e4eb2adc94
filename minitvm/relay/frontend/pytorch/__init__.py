"""PyTorch -> Relay: TorchScript (``from_pytorch``) and ATen-level FX graphs (``from_fx``).

Both go through one table of ATen converters: ``aten.py`` holds it (``ATEN``, ``register``, the
converters' context and the helpers they share) and the ``aten_*`` modules fill it, an op family
each; torch is imported only when an importer is called.
"""

# the op families first: aten_fft wraps some of their converters (mul, add, sum, view, ...)
from . import aten_activation  # noqa: F401  (clamp, ReLU6, SiLU, GELU, ELU, softplus, softmax)
from . import aten_attention  # noqa: F401  (scaled_dot_product_attention, native MHA)
from . import aten_conv  # noqa: F401  (convolutions and their transposes)
from . import aten_create  # noqa: F401  (arange, zeros / ones / full, linspace, eye)
from . import aten_index  # noqa: F401  (embedding, gather, x[i, j], where, masked_fill)
from . import aten_linalg  # noqa: F401  (matmul, linear, addmm, baddbmm, einsum)
from . import aten_linalg_solve  # noqa: F401  (cholesky, solve, inv, slogdet, det)
from . import aten_math  # noqa: F401  (arithmetic, unary math, atan2, hypot, lerp, specials)
from . import aten_norm  # noqa: F401  (batch / layer / RMS / group / instance norms)
from . import aten_pad  # noqa: F401  (pad, constant / reflection / replication pads)
from . import aten_reduce  # noqa: F401  (sum, mean, max / min, std / var, norms, cumsum)
from . import aten_resample  # noqa: F401  (nearest / bilinear / linear upsampling)
from . import aten_shape  # noqa: F401  (views, permutes, cat, slices, splits, flips)
from . import aten_symbolic  # noqa: F401  (size, numel, dim, Python numbers)
from . import aten_extra  # noqa: F401  (registers more converters into ATEN)
from . import aten_fake_quant  # noqa: F401  (fake_quantize_per_tensor / per_channel_affine)
from . import aten_dynamic  # noqa: F401  (unique, nonzero, bincount: data-dependent result shapes)
from . import aten_fft  # noqa: F401  (torch.fft and complex values between FFTs)
from . import aten_grid  # noqa: F401  (affine_grid, grid_sample)
from . import aten_logic  # noqa: F401  (~, &, |, ^ and logical_and / or / xor)
from . import aten_losses  # noqa: F401  (cross_entropy, nll, kl_div, smooth L1 / Huber losses)
from . import aten_numeric  # noqa: F401  (aminmax, trapezoid, cov / corrcoef, renorm)
from . import aten_order  # noqa: F401  (topk, median, mode, cummax / cummin, histc, pdist)
from . import aten_pool  # noqa: F401  (1-D and 2-D max / average / adaptive pools)
from . import aten_recurrent  # noqa: F401  (lstm, gru and the recurrent cells)
from . import aten_scatter  # noqa: F401  (scatter, scatter_reduce, index_add, index_put)
from . import aten_stft  # noqa: F401  (torch.stft and the window factories)
from . import aten_transformer  # noqa: F401  (the nn.TransformerEncoder fast paths)
from . import aten_torchvision  # noqa: F401  (torchvision's roi_align, roi_pool)
from . import aten_views  # noqa: F401  (copy_, fill_, slice_scatter: writes through views)
from . import aten_windows  # noqa: F401  (Tensor.unfold, bucketize, searchsorted)
from .aten import ATEN  # noqa: F401
from .exported import from_exported_program  # noqa: F401
from .fx import from_fx  # noqa: F401
from .torchscript import from_pytorch  # noqa: F401

__all__ = ["from_pytorch", "from_fx", "from_exported_program", "ATEN"]
