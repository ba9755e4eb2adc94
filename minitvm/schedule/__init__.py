"""Schedules shared by every dialect: a fused function's tensor expressions to one PrimFunc.

``lower_te(inputs, outputs, name, options=LoweringOptions(...))`` picks a schedule per stage
from the rule table (``RULES``: op tag -> rules) — the packed GEMM and implicit-GEMM conv
(``gemm``, ``gemm_kernel``, ``conv_direct``), row-wise pooling (``pool``) — and vectorized
reduction / injective loop nests for the rest.
"""

from .options import LoweringOptions
from .common import LoweringError
from .lower import RULES, Rule, lower_te, register_rule, select_rule
from .prim_func import optimize_prim_func
from . import conv_direct, gemm, gemm_kernel, pool
from . import knobs, tunable
from . import scan, selection  # noqa: F401  (register the scan and top-k rules)
from . import multiclass_nms  # noqa: F401  (vision.multiclass_nms's rule)
from . import roi_ops  # noqa: F401  (ONNX RoiAlign and ROIPool kernels)
from . import all_class_nms  # noqa: F401  (ONNX NonMaxSuppression kernel)
from . import box_nms  # noqa: F401  (vision.get_valid_counts / non_max_suppression kernels)
from . import unique_sort  # noqa: F401  (unique: radix sort and a scan)
from . import scatter_linear  # noqa: F401  (the one-pass scatters)
from . import linalg  # noqa: F401  (Cholesky / LU / triangular solve loops)
from . import ctc  # noqa: F401  (CTC forward variables)
