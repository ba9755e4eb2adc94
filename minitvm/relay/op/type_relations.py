"""Shape and dtype rules shared by op families: broadcasting, identity, reductions, axis helpers.

The dim helpers (``shape_str``, ``dims_product``, ``normalize_axis``, ...) live in ``minitvm.topi``
(shared with the computes and numpy references) and are re-exported here.

Dims are Python ints when static, ``tir.Any()`` when unknown, or symbolic ``tir.Var``s. A type
relation takes the fully resolved argument types and returns the output type, raising TypeError
(or ValueError for bad attributes) with a message naming the shapes involved.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.op import NAMED_TYPE_RELATIONS
from ...ir.type import TensorType, Type
from ...tir.expr import Any
from ...topi import shape_conditions
from ...topi.shape_conditions import assume_positive
from ...topi.utils import (  # shared with topi's computes and references
    dim_str,
    dims_equal,
    dims_product,
    is_static_dim,
    normalize_axis,
    reduce_axes,
    reduce_shape,
    shape_str,
    type_str,
)

__all__ = [
    "shape_str", "type_str", "tensor_arg", "dims_equal", "is_static_dim", "broadcast_shapes",
    "broadcast_rel", "broadcast_comp_rel", "broadcast_type", "identity_rel", "identity_comp_rel",
    "normalize_axis", "reduce_axes", "reduce_shape", "reduce_rel", "arg_reduce_rel", "dims_product",
    "check_num_args", "same_dtype",
]


# --------------------------------------------------------------------------- arguments
def check_num_args(op_name: str, arg_types: Sequence, n: int) -> None:
    if len(arg_types) != n:
        raise TypeError(f"{op_name} expects {n} argument(s), got {len(arg_types)}")


def tensor_arg(arg_types: Sequence, i: int, op_name: str = "op") -> TensorType:
    """The i-th argument type, which must be a tensor."""
    t = arg_types[i]
    if not isinstance(t, TensorType):
        raise TypeError(f"{op_name}: argument {i} must be a tensor, but its type is {type_str(t)}")
    return t


def same_dtype(op_name: str, types: Sequence[TensorType]) -> str:
    """The common dtype of ``types``; a TypeError naming both when they differ."""
    dtype = types[0].dtype
    for t in types[1:]:
        if t.dtype != dtype:
            raise TypeError(
                f"{op_name}: data types {dtype} and {t.dtype} do not match "
                f"({type_str(types[0])} vs {type_str(t)})"
            )
    return dtype


# --------------------------------------------------------------------------- broadcasting
def broadcast_shapes(s1: Sequence, s2: Sequence, op_name: str = "broadcast") -> tuple:
    """numpy-style broadcast of two shapes, right-aligned; Any matches 1 or the other dim."""
    n1, n2 = len(s1), len(s2)
    out = []
    for i in range(1, min(n1, n2) + 1):
        a, b = s1[n1 - i], s2[n2 - i]
        if is_static_dim(a) and a == 1:
            out.append(b)
        elif is_static_dim(b) and b == 1:
            out.append(a)
        elif isinstance(a, Any) and isinstance(b, Any) and a is not b:
            out.append(Any())  # (either may be 1 at run time: the result is neither, known)
        elif isinstance(a, Any):
            out.append(b)
        elif isinstance(b, Any):
            out.append(a)
        elif dims_equal(a, b):
            out.append(a)
        elif shape_conditions.taken_equal(a, b):
            # (typed symbolically: two sizes it cannot prove equal, e.g. ``n`` and a slice's
            # ``max(min(n, 1), 0) + max(n - 1, 0)``, or ``n`` and a 3, are taken as equal and
            # the kernel checks it at each call; a call where one is 1 runs per shape)
            out.append(b if is_static_dim(b) else a)
        else:
            raise TypeError(
                f"{op_name}: incompatible broadcast shapes {shape_str(s1)} and {shape_str(s2)} "
                f"(dimension {dim_str(a)} vs {dim_str(b)})"
            )
    longer = s1 if n1 > n2 else s2
    out.extend(reversed(longer[: abs(n1 - n2)]))
    return tuple(reversed(out))


def broadcast_type(op_name: str, types: Sequence[TensorType], out_dtype: str | None = None):
    """Broadcast any number of tensor types with one dtype; output dtype ``out_dtype`` or theirs."""
    dtype = same_dtype(op_name, list(types))
    shape = tuple(types[0].shape)
    for t in types[1:]:
        shape = broadcast_shapes(shape, t.shape, op_name)
    return TensorType(shape, out_dtype or dtype)


def _binary_types(arg_types, op_name):
    check_num_args(op_name, arg_types, 2)
    return [tensor_arg(arg_types, 0, op_name), tensor_arg(arg_types, 1, op_name)]


def broadcast_rel(arg_types: Sequence[Type], attrs=None, op_name: str = "broadcast") -> TensorType:
    """Binary arithmetic: both operands share a dtype; the result has the broadcast shape."""
    return broadcast_type(op_name, _binary_types(arg_types, op_name))


def broadcast_comp_rel(arg_types: Sequence[Type], attrs=None, op_name: str = "compare"):
    """Comparisons: like ``broadcast_rel`` but the result is bool."""
    return broadcast_type(op_name, _binary_types(arg_types, op_name), "bool")


def named(rel, op_name: str):
    """Bind the op name into a relation so its errors say which op failed."""

    def bound(arg_types, attrs=None):
        return rel(arg_types, attrs, op_name=op_name)

    bound.__name__ = f"{rel.__name__}[{op_name}]"
    bound.__qualname__ = bound.__name__
    return bound


def identity_rel(arg_types: Sequence[Type], attrs=None, op_name: str = "op") -> TensorType:
    """Unary elementwise: the output type is the input type."""
    check_num_args(op_name, arg_types, 1)
    return tensor_arg(arg_types, 0, op_name)


def identity_comp_rel(arg_types: Sequence[Type], attrs=None, op_name: str = "op") -> TensorType:
    """Unary predicates (isnan, ...): the input shape with a bool dtype."""
    check_num_args(op_name, arg_types, 1)
    return TensorType(tensor_arg(arg_types, 0, op_name).shape, "bool")


# --------------------------------------------------------------------------- axes / reductions
def reduce_rel(arg_types: Sequence[Type], attrs, op_name: str = "reduce") -> TensorType:
    """sum/max/...: reduced shape (ReduceAttrs axis, keepdims, exclude), dtype kept."""
    check_num_args(op_name, arg_types, 1)
    t = tensor_arg(arg_types, 0, op_name)
    axes = reduce_axes(len(t.shape), attrs.axis, attrs.exclude, op_name)
    if op_name in _NO_IDENTITY:
        for ax in axes:
            d = t.shape[ax]
            if getattr(d, "value", d) == 0:  # static zero-size axis: no index to pick
                raise ValueError(f"{op_name}: cannot reduce over axis {ax} of size 0 of "
                                 f"{type_str(t)} ({op_name} has no identity value)")
            assume_positive(d)  # (a symbolic size: checked by the kernel at each call)
    return TensorType(reduce_shape(t.shape, axes, attrs.keepdims), t.dtype)


#: Reductions without an identity value (an index): over an empty axis they have no result.
#: max / min have one (-inf / +inf, an integer type's extremes), as TVM's and ONNX's do, and
#: give it there, in every executor and in Relax too.
_NO_IDENTITY = ("argmax", "argmin")


def arg_reduce_rel(arg_types: Sequence[Type], attrs, op_name: str = "argreduce") -> TensorType:
    """argmax/argmin: the reduced shape with int32 indices."""
    out = reduce_rel(arg_types, attrs, op_name)
    return TensorType(out.shape, "int32")


__all__ += ["named"]

# the relations TVM ops registered from Python may name in ``op.add_type_rel``
NAMED_TYPE_RELATIONS.update({
    "Identity": identity_rel, "IdentityCompRel": identity_comp_rel,
    "Broadcast": broadcast_rel, "BroadcastComp": broadcast_comp_rel,
    "Reduce": reduce_rel, "ArgReduce": arg_reduce_rel,
})
