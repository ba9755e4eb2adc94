"""tvm.relax.dpl: the Relax dataflow pattern language (patterns, matcher, pattern contexts,
rewrite_call / rewrite_bindings)."""

from .context import PatternContext, PatternSeq, match_dfb, only_used_by, used_by  # noqa: F401

from .pattern import (  # noqa: F401
    AndPattern, AttrPattern, CallPattern, ConstantPattern, DataflowVarPattern, DataTypePattern,
    DFPattern, ExprPattern, GlobalVarPattern, NotPattern, OrPattern, ShapePattern,
    TupleGetItemPattern, TuplePattern, VarPattern, WildcardPattern, has_attr, has_dtype,
    has_shape, is_call_dps_packed, is_call_packed, is_call_tir, is_const, is_dfv, is_dfvar,
    is_expr, is_gv, is_op, is_tuple, is_tuple_get_item, is_var,
    make_fused_bias_activation_pattern, wildcard,
)
from .pattern_rewriter import PatternMatchingRewriter  # noqa: F401
from .rewrite import rewrite_bindings, rewrite_call  # noqa: F401
