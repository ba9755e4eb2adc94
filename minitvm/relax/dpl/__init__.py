"""tvm.relax.dpl: the Relax dataflow pattern language (patterns, matcher, rewrite_call)."""

from .pattern import (  # noqa: F401
    AndPattern, AttrPattern, CallPattern, ConstantPattern, DataflowVarPattern, DataTypePattern,
    DFPattern, ExprPattern, GlobalVarPattern, NotPattern, OrPattern, ShapePattern,
    TupleGetItemPattern, TuplePattern, VarPattern, WildcardPattern, has_attr, has_dtype,
    has_shape, is_call_tir, is_const, is_dfvar, is_expr, is_gv, is_op, is_tuple,
    is_tuple_get_item, is_var, wildcard,
)
from .rewrite import rewrite_call  # noqa: F401
