"""Type-relation helpers for the dyn.* ops: shape-like arguments are 1-D integer tensors whose
values are known only at run time, so outputs have one ``?`` dimension per element."""

from __future__ import annotations

from ....ir.type import TensorType
from ....tir.expr import Any
from ..type_relations import tensor_arg


def shape_arg_len(arg_types, i: int, op_name: str, what: str, integer: bool = True) -> int:
    """The static length of the 1-D (integer, unless ``integer`` is False) tensor argument."""
    t = tensor_arg(arg_types, i, op_name)
    if len(t.shape) != 1 or not isinstance(t.shape[0], int):
        raise TypeError(f"{op_name}: {what} must be a 1-D tensor of static length, got "
                        f"{t.shape}")
    if integer and not t.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: {what} must be an integer tensor, got {t.dtype}")
    return int(t.shape[0])


def any_shape(rank: int, dtype: str) -> TensorType:
    return TensorType([Any() for _ in range(rank)], dtype)
