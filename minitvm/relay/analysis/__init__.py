"""tvm.relay.analysis."""

from .free_vars import all_vars, bound_vars, free_type_vars, free_vars, all_type_vars, bound_type_vars
from ..expr_functor import post_order_visit
from .well_formed import check_well_formed, well_formed
from .feature import Feature, detect_feature  # noqa: F401
from .kind_check import check_kind  # noqa: F401
from .model_stats import (
    check_constant, count_layers, extract_fused_functions, get_total_mac_number, list_op_freqs,
    search_fc_transpose,
)
from .fake_quantized_ops import list_fake_quantized_op_freqs  # noqa: F401
from .sparse_dense import search_dense_op_weight  # noqa: F401
from . import sparse_conv2d  # noqa: F401,E402  (relay.analysis.sparse_conv2d)
from .call_graph import CallGraph  # noqa: F401
from . import annotated_regions, call_graph, feature  # noqa: F401
from .annotated_regions import AnnotatedRegionSet  # noqa: F401
from .match_exhaustion import unmatched_cases  # noqa: F401
from .calibration import get_calibration_data  # noqa: F401
from .dtypes import all_dtypes  # noqa: F401
from .intermediate_expr import extract_intermdeiate_expr  # noqa: F401
from ...runtime.ndarray import cpu  # noqa: F401  (TVM's module exposes it too)


def check_basic_block_normal_form(expr) -> bool:
    """True when ``expr`` is in basic block normal form; a ValueError names the culprit."""
    from ..transform.to_basic_block_normal_form import check_basic_block_normal_form as _check

    return _check(expr)
from ..transform.plan_devices import (  # noqa: E402,F401  (device planning's analyses)
    collect_device_annotation_ops, collect_device_info,
)
