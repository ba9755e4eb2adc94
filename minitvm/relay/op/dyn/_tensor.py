"""dyn.full, dyn.zeros, dyn.ones: tensors whose shape is a run-time tensor argument.

Numpy references: ``minitvm.topi.reference.dyn``.
"""

from __future__ import annotations

from ....ir.op import OpPattern
from ...expr import Call
from ..op import Op, define_op
from ..tensor import InitOpAttrs
from ..type_relations import check_num_args, tensor_arg
from ._shape_arg import any_shape, shape_arg_len

__all__ = ["full", "zeros", "ones"]


def _full_rel(arg_types, attrs):
    check_num_args("dyn.full", arg_types, 2)
    fill = tensor_arg(arg_types, 0, "dyn.full")
    if fill.shape:
        raise TypeError(f"dyn.full: the fill value must be a scalar, got shape {fill.shape}")
    return any_shape(shape_arg_len(arg_types, 1, "dyn.full", "the shape"),
                     attrs.dtype or fill.dtype)


def _init_rel(name):
    def rel(arg_types, attrs):
        check_num_args(name, arg_types, 1)
        return any_shape(shape_arg_len(arg_types, 0, name, "the shape"), attrs.dtype or "float32")

    return rel


define_op("dyn.full", _full_rel, pattern=OpPattern.ELEMWISE, attrs_type=InitOpAttrs,
          num_inputs=2, describe="A tensor filled with a scalar, of a run-time shape.")
define_op("dyn.zeros", _init_rel("dyn.zeros"), pattern=OpPattern.ELEMWISE,
          attrs_type=InitOpAttrs, num_inputs=1, describe="Zeros of a run-time shape.")
define_op("dyn.ones", _init_rel("dyn.ones"), pattern=OpPattern.ELEMWISE,
          attrs_type=InitOpAttrs, num_inputs=1, describe="Ones of a run-time shape.")


def full(fill_value, shape, dtype: str = "") -> Call:
    """``fill_value`` broadcast to the shape held by the 1-D tensor ``shape``."""
    return Call(Op.get("dyn.full"), [fill_value, shape], InitOpAttrs(dtype=dtype or None))


def zeros(shape, dtype: str = "float32") -> Call:
    return Call(Op.get("dyn.zeros"), [shape], InitOpAttrs(dtype=dtype))


def ones(shape, dtype: str = "float32") -> Call:
    return Call(Op.get("dyn.ones"), [shape], InitOpAttrs(dtype=dtype))
