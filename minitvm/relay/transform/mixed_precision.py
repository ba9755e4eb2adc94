"""relay.transform.mixed_precision: TVM v0.19's module of ToMixedPrecision's default op rules.

The categories (``MIXED_PRECISION_ALWAYS/FOLLOW/NEVER``), TVM v0.19's three default op lists,
``register_func_to_op_list``, ``get_generic_out_dtypes`` and the three generic rules
``generic_always_op/follow_op/never_op``. Importing the module gives every listed op that has no
``FTVMMixedPrecisionConversionType`` yet the generic rule of its list (ToMixedPrecision's own
module registers the same rule for the ops of its older lists; this adds v0.19's newer entries
such as ``clip``, ``argmax``, ``image.resize2d``, ``variance`` and ``nn.layer_norm``). Listed
ops this build does not define are skipped.
"""

from __future__ import annotations

from ...ir.op import Op
from .to_mixed_precision import (
    MIXED_PRECISION_ALWAYS,
    MIXED_PRECISION_FOLLOW,
    MIXED_PRECISION_NEVER,
    register_mixed_precision_conversion,
)

__all__ = ["MIXED_PRECISION_ALWAYS", "MIXED_PRECISION_FOLLOW", "MIXED_PRECISION_NEVER",
           "DEFAULT_ALWAYS_LIST", "DEFAULT_FOLLOW_LIST", "DEFAULT_NEVER_LIST",
           "register_func_to_op_list", "get_generic_out_dtypes", "generic_always_op",
           "generic_follow_op", "generic_never_op", "register_mixed_precision_conversion"]

DEFAULT_ALWAYS_LIST = [
    "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose",
    "nn.conv3d_transpose", "nn.dense", "nn.batch_matmul",
]
DEFAULT_FOLLOW_LIST = [
    # shape and data movement
    "nn.pad", "nn.batch_flatten", "concatenate", "zeros", "split", "squeeze", "transpose",
    "expand_dims", "reshape", "dyn.reshape", "broadcast_to_like", "dyn.broadcast_to",
    "strided_slice", "dyn.strided_slice", "take", "argwhere", "where", "tile", "dyn.tile",
    "scatter", "scatter_elements", "scatter_nd", "full", "dyn.full", "nn.depth_to_space",
    # comparisons, copies and casts
    "less", "greater", "less_equal", "greater_equal", "copy", "cast", "cast_like",
    # simple arithmetic
    "add", "subtract", "multiply", "divide", "nn.bias_add", "nn.batch_norm", "sqrt",
    "shape_of",
    # simple activations and reductions that cannot grow
    "max", "min", "maximum", "minimum", "argmax", "argmin", "nn.relu", "nn.leaky_relu",
    "nn.prelu", "nn.dropout",
    # saturating activations
    "sigmoid", "tanh", "fast_tanh", "fast_exp", "fast_erf", "clip",
    # pooling and resizing
    "nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d", "nn.avg_pool1d", "nn.avg_pool2d",
    "nn.avg_pool3d", "nn.global_max_pool2d", "nn.adaptive_max_pool1d",
    "nn.adaptive_max_pool2d", "nn.adaptive_max_pool3d", "image.resize2d",
]
DEFAULT_NEVER_LIST = [
    # results much larger than their inputs, or large sums
    "exp", "power", "nn.cross_entropy", "nn.cross_entropy_with_logits", "nn.softmax",
    "nn.l2_normalize", "erf", "arange", "nn.global_avg_pool2d", "nn.adaptive_avg_pool1d",
    "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d", "sum", "mean", "variance",
    "nn.layer_norm",
]

_RULE = "FTVMMixedPrecisionConversionType"


def register_func_to_op_list(list_ops: list):
    """A decorator registering the function as the conversion rule of every op in ``list_ops``."""

    def decorator(func):
        for op_name in list_ops:
            register_mixed_precision_conversion(op_name, func=func)
        return func

    return decorator


def get_generic_out_dtypes(call_node, mixed_precision_type: str) -> list:
    """``[accumulation dtype, output dtype]`` for most ops: both the mixed type (TVM's choice,
    also for ops with an ``out_dtype`` attribute)."""
    return [mixed_precision_type, mixed_precision_type]


def generic_always_op(call_node, mixed_precision_type: str) -> list:
    """The rule of the ALWAYS list: run in the mixed type."""
    return [MIXED_PRECISION_ALWAYS, *get_generic_out_dtypes(call_node, mixed_precision_type)]


def generic_follow_op(call_node, mixed_precision_type: str) -> list:
    """The rule of the FOLLOW list: run in the mixed type when the inputs already are."""
    return [MIXED_PRECISION_FOLLOW, *get_generic_out_dtypes(call_node, mixed_precision_type)]


def generic_never_op(call_node, mixed_precision_type: str) -> list:
    """The rule of the NEVER list: run in the original float type."""
    return [MIXED_PRECISION_NEVER, *get_generic_out_dtypes(call_node, mixed_precision_type)]


def _register_missing_defaults() -> None:
    """Give the listed, defined ops without a rule the generic rule of their list."""
    for names, rule in ((DEFAULT_ALWAYS_LIST, generic_always_op),
                        (DEFAULT_FOLLOW_LIST, generic_follow_op),
                        (DEFAULT_NEVER_LIST, generic_never_op)):
        for name in names:
            try:
                op = Op.get(name)
            except (KeyError, ValueError):
                continue
            if not op.has_attr(_RULE):
                register_mixed_precision_conversion(name, rule)


_register_missing_defaults()
