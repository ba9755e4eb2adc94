"""PyTorch -> Relay: TorchScript (``from_pytorch``) and ATen-level FX graphs (``from_fx``).

Both go through one table of ATen converters (``aten.py``, extended by ``aten_extra.py``,
``aten_fake_quant.py``, ``aten_fft.py``, ``aten_scatter.py``, ``aten_grid.py``, ``aten_logic.py``, ``aten_losses.py``, ``aten_numeric.py``, ``aten_math.py``, ``aten_pool.py``,
``aten_recurrent.py``, ``aten_stft.py``, ``aten_windows.py`` and ``aten_transformer.py``); torch is imported only when an importer is called.
"""

from . import aten_extra  # noqa: F401  (registers more converters into ATEN)
from . import aten_fake_quant  # noqa: F401  (fake_quantize_per_tensor / per_channel_affine)
from . import aten_dynamic  # noqa: F401  (unique, nonzero, bincount: data-dependent result shapes)
from . import aten_fft  # noqa: F401  (torch.fft and complex values between FFTs)
from . import aten_grid  # noqa: F401  (affine_grid, grid_sample)
from . import aten_logic  # noqa: F401  (~, &, |, ^ and logical_and / or / xor)
from . import aten_losses  # noqa: F401  (cross_entropy, nll, kl_div, smooth L1 / Huber losses)
from . import aten_math  # noqa: F401  (atan2, hypot, lerp, log_ndtr, ndtri, i0, frexp)
from . import aten_numeric  # noqa: F401  (aminmax, trapezoid, cov / corrcoef, renorm)
from . import aten_order  # noqa: F401  (median, mode, cummax / cummin, logcumsumexp, histc, pdist)
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
