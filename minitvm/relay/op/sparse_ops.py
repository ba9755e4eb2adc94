"""TensorFlow-style COO sparse ops: sparse_fill_empty_rows, sparse_reshape, sparse_segment_sum
(type relations as TVM's: outputs whose length depends on values have ``?`` dims). Numpy
references: ``minitvm.topi.reference.sparse_ops``."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...tir.expr import Any
from ..expr import Call, Expr, TupleWrapper
from .op import define_op, register_numpy_only
from .type_relations import check_num_args, tensor_arg, type_str

__all__ = ["sparse_fill_empty_rows", "sparse_reshape", "sparse_segment_sum"]


def _indices(arg_types, i, op_name, what="sparse_indices"):
    t = tensor_arg(arg_types, i, op_name)
    if len(t.shape) != 2 or not t.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: {what} must be a 2-D integer tensor (N, ndim), got "
                        f"{type_str(t)}")
    return t


def _vector(arg_types, i, op_name, what, integer=True):
    t = tensor_arg(arg_types, i, op_name)
    if len(t.shape) != 1 or (integer and not t.dtype.startswith(("int", "uint"))):
        kind = "integer " if integer else ""
        raise TypeError(f"{op_name}: {what} must be a 1-D {kind}tensor, got {type_str(t)}")
    return t


def _fill_rel(arg_types, attrs):
    op_name = "sparse_fill_empty_rows"
    check_num_args(op_name, arg_types, 4)
    idx = _indices(arg_types, 0, op_name)
    vals = _vector(arg_types, 1, op_name, "sparse_values", integer=False)
    _vector(arg_types, 2, op_name, "dense_shape")
    default = tensor_arg(arg_types, 3, op_name)
    if default.dtype != vals.dtype:
        raise TypeError(f"{op_name}: default_value dtype {default.dtype} differs from the "
                        f"values' {vals.dtype}")
    return TupleType([TensorType((Any(), idx.shape[1]), idx.dtype),
                      TensorType((Any(),), vals.dtype), TensorType((Any(),), "bool")])


def _reshape_rel(arg_types, attrs):
    op_name = "sparse_reshape"
    check_num_args(op_name, arg_types, 3)
    idx = _indices(arg_types, 0, op_name)
    _vector(arg_types, 1, op_name, "prev_shape")
    new = _vector(arg_types, 2, op_name, "new_shape")
    return TupleType([TensorType((idx.shape[0], new.shape[0]), idx.dtype),
                      TensorType((new.shape[0],), new.dtype)])


def _segment_sum_rel(arg_types, attrs):
    op_name = "sparse_segment_sum"
    check_num_args(op_name, arg_types, 3)
    data = tensor_arg(arg_types, 0, op_name)
    if not data.shape:
        raise TypeError(f"{op_name}: data must have rank >= 1, got {type_str(data)}")
    idx = _vector(arg_types, 1, op_name, "indices")
    seg = _vector(arg_types, 2, op_name, "segment_ids")
    if idx.shape[0] != seg.shape[0]:
        raise TypeError(f"{op_name}: indices {type_str(idx)} and segment_ids {type_str(seg)} "
                        f"must have one length")
    return TensorType((Any(),) + tuple(data.shape[1:]), data.dtype)


define_op("sparse_fill_empty_rows", _fill_rel, pattern=OpPattern.OPAQUE, num_inputs=4,
          describe="Give every empty row of a COO tensor one default entry.")
define_op("sparse_reshape", _reshape_rel, pattern=OpPattern.OPAQUE, num_inputs=3,
          describe="Reshape a COO tensor (re-index its entries).")
define_op("sparse_segment_sum", _segment_sum_rel, pattern=OpPattern.OPAQUE, num_inputs=3,
          describe="Sum rows of data picked by indices into segments.")


def sparse_fill_empty_rows(sparse_indices: Expr, sparse_values: Expr, dense_shape: Expr,
                           default_value: Expr) -> TupleWrapper:
    call = Call(Op.get("sparse_fill_empty_rows"),
                [sparse_indices, sparse_values, dense_shape, default_value])
    return TupleWrapper(call, 3)


def sparse_reshape(sparse_indices: Expr, prev_shape: Expr, new_shape: Expr) -> TupleWrapper:
    return TupleWrapper(Call(Op.get("sparse_reshape"), [sparse_indices, prev_shape, new_shape]),
                        2)


def sparse_segment_sum(data: Expr, indices: Expr, segment_ids: Expr) -> Call:
    return Call(Op.get("sparse_segment_sum"), [data, indices, segment_ids])

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("sparse_reshape", "sparse indices: work depends on the non-zero pattern")
