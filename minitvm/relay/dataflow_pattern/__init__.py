"""tvm.relay.dataflow_pattern: a language of patterns over Relay dataflow graphs, matching,
callback-driven rewriting and partitioning of matches into functions (TVM's API)."""

from .patterns import (
    AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern, DFPattern,
    DominatorPattern, ExprPattern, FunctionPattern, IfPattern, LetPattern, ShapePattern,
    TupleGetItemPattern, TuplePattern, TypePattern, VarPattern, WildcardPattern, dominates,
    has_attr, has_dtype, has_shape, has_type, is_constant, is_expr, is_if, is_let, is_op,
    is_tuple, is_tuple_get_item, is_var, wildcard,
)
from .matcher import DFPatternMatcher, match
from .partition import partition
from .rewrite import DFPatternCallback, rewrite

__all__ = [
    "AltPattern", "AttrPattern", "CallPattern", "ConstantPattern", "DataTypePattern",
    "DFPattern", "DominatorPattern", "ExprPattern", "FunctionPattern", "IfPattern",
    "LetPattern", "ShapePattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
    "VarPattern", "WildcardPattern", "dominates", "has_attr", "has_dtype", "has_shape",
    "has_type", "is_constant", "is_expr", "is_if", "is_let", "is_op", "is_tuple",
    "is_tuple_get_item", "is_var", "wildcard", "DFPatternMatcher", "match", "partition",
    "DFPatternCallback", "rewrite",
]
