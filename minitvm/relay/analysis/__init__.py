"""tvm.relay.analysis."""

from .free_vars import all_vars, bound_vars, free_type_vars, free_vars, all_type_vars, bound_type_vars
from ..expr_functor import post_order_visit
from .well_formed import check_well_formed, well_formed
