"""tvm.relax.analysis: struct-info relations and checks over Relax programs."""

from .binding_analysis import (
    computable_at_compile_time, contains_impure_call, detect_recursion, get_var2val,
    name_to_binding, post_order_visit, remove_all_unused, udchain,
)
from .static_type import ObjectType, PackedFuncType, ShapeType, TensorType
from .struct_info_analysis import (
    BaseCheckResult, derive_call_ret_struct_info, erase_to_well_defined, get_static_type,
    struct_info_base_check, struct_info_base_check_result, struct_info_lca,
    tir_vars_in_struct_info,
)
from .var_analysis import all_global_vars, all_vars, bound_vars, free_vars
from .well_formed import (
    check_well_formed, defined_symbolic_vars, free_symbolic_vars, well_formed,
)
