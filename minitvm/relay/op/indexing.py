"""Index arithmetic ops: ``unravel_index``, ``sparse_to_dense``, ``invert_permutation`` and the
integer ``fixed_point_multiply``. References: ``minitvm.topi.reference.algorithm``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ..expr import Call, Constant, Expr, const
from .op import define_op
from .type_relations import check_num_args, tensor_arg, type_str

__all__ = ["unravel_index", "sparse_to_dense", "invert_permutation", "fixed_point_multiply"]


class SparseToDenseAttrs(Attrs):
    __slots__ = ()
    _fields = (("output_shape", ()),)


class FixedPointMultiplyAttrs(Attrs):
    __slots__ = ()
    _fields = (("multiplier", 0), ("shift", 0))


def _unravel_rel(arg_types, attrs):
    check_num_args("unravel_index", arg_types, 2)
    idx = tensor_arg(arg_types, 0, "unravel_index")
    shape = tensor_arg(arg_types, 1, "unravel_index")
    if len(shape.shape) != 1 or len(idx.shape) > 1:
        raise TypeError(f"unravel_index: indices must be a scalar or 1-D and shape 1-D, got "
                        f"{type_str(idx)} and {type_str(shape)}")
    return TensorType((shape.shape[0], *idx.shape), idx.dtype)


def _sparse_to_dense_rel(arg_types, attrs):
    check_num_args("sparse_to_dense", arg_types, 3)
    idx = tensor_arg(arg_types, 0, "sparse_to_dense")
    values = tensor_arg(arg_types, 1, "sparse_to_dense")
    if len(idx.shape) > 2 or len(values.shape) > 1:
        raise TypeError(f"sparse_to_dense: indices must have rank <= 2 and values rank <= 1, "
                        f"got {type_str(idx)} and {type_str(values)}")
    return TensorType(tuple(int(s) for s in attrs.output_shape), values.dtype)


def _invert_permutation_rel(arg_types, attrs):
    check_num_args("invert_permutation", arg_types, 1)
    p = tensor_arg(arg_types, 0, "invert_permutation")
    if len(p.shape) != 1:
        raise TypeError(f"invert_permutation: expects a 1-D tensor, got {type_str(p)}")
    return TensorType(p.shape, p.dtype)


def _fixed_point_multiply_rel(arg_types, attrs):
    check_num_args("fixed_point_multiply", arg_types, 1)
    x = tensor_arg(arg_types, 0, "fixed_point_multiply")
    if x.dtype != "int32":
        raise TypeError(f"fixed_point_multiply: expects an int32 tensor, got {type_str(x)}")
    return TensorType(x.shape, x.dtype)


define_op("unravel_index", _unravel_rel, pattern=OpPattern.INJECTIVE, num_inputs=2,
          describe="Flat indices to coordinates in an array of the given shape.")
define_op("sparse_to_dense", _sparse_to_dense_rel, pattern=OpPattern.OPAQUE,
          attrs_type=SparseToDenseAttrs, num_inputs=3,
          describe="A dense tensor from sparse indices and values.")
define_op("invert_permutation", _invert_permutation_rel, pattern=OpPattern.INJECTIVE,
          num_inputs=1, describe="The inverse of a permutation vector.")
define_op("fixed_point_multiply", _fixed_point_multiply_rel, pattern=OpPattern.ELEMWISE,
          attrs_type=FixedPointMultiplyAttrs, num_inputs=1,
          describe="x * multiplier / 2^(31 - shift), rounded, in integer arithmetic.")


def unravel_index(indices, shape) -> Call:
    shape = shape if isinstance(shape, Expr) else const(list(shape), indices_dtype(indices))
    return Call(Op.get("unravel_index"), [indices, shape])


def indices_dtype(indices) -> str:
    if isinstance(indices, Constant):
        return str(indices.data.dtype)
    t = getattr(indices, "type_annotation", None)
    return getattr(t, "dtype", "int32") or "int32"


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0) -> Call:
    """Scatter ``sparse_values`` into a dense tensor; an ``output_shape`` given as a Relay
    expression (a constant too, as in TVM) builds ``dyn.sparse_to_dense``."""
    if not isinstance(default_value, Expr):
        default_value = const(default_value)
    if isinstance(output_shape, Expr):
        return Call(Op.get("dyn.sparse_to_dense"),
                    [sparse_indices, sparse_values, default_value, output_shape],
                    SparseToDenseAttrs())
    return Call(Op.get("sparse_to_dense"), [sparse_indices, sparse_values, default_value],
                SparseToDenseAttrs(output_shape=tuple(int(s) for s in output_shape)))


def invert_permutation(data) -> Call:
    return Call(Op.get("invert_permutation"), [data])


def fixed_point_multiply(data, multiplier: int, shift: int) -> Call:
    return Call(Op.get("fixed_point_multiply"), [data],
                FixedPointMultiplyAttrs(multiplier=int(multiplier), shift=int(shift)))
