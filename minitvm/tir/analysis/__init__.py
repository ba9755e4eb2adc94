"""tvm.tir.analysis: checks and queries over PrimFuncs."""

from .verify_well_formed import verify_well_formed, undefined_vars
from .op_pattern_kind import analyze_op_pattern_kind  # noqa: F401
from .device_constraints import (  # noqa: F401
    apply_prim_func_arg_and_result_memory_constraints,
    prim_func_arg_and_result_memory_scopes,
)
