"""``relay.op.vm``: the Relay VM's tensor helpers vm.shape_of and vm.reshape_tensor (the ops
memory planning emits for dynamic shapes), with TVM's attrs and type relations, and
vm.update_row (minitvm's: one row of a tensor written in place, the output of one step of a
loop over a run-time length). References: ``minitvm.topi.reference.signal``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ...topi.shape_conditions import agree
from ..expr import Call, Expr
from .op import define_op, register_numpy_only
from .transform_index import ShapeOfAttrs
from .type_relations import check_num_args, dims_product, is_static_dim, tensor_arg, type_str

__all__ = ["ReshapeTensorAttrs", "shape_of", "reshape_tensor", "update_row"]


class ReshapeTensorAttrs(Attrs):
    __slots__ = ()
    _fields = (("newshape", ()),)


def _shape_of_rel(arg_types, attrs):
    check_num_args("vm.shape_of", arg_types, 1)
    x = tensor_arg(arg_types, 0, "vm.shape_of")
    return TensorType((len(x.shape),), attrs.dtype or "int64")


def _reshape_tensor_rel(arg_types, attrs):
    check_num_args("vm.reshape_tensor", arg_types, 2)
    x = tensor_arg(arg_types, 0, "vm.reshape_tensor")
    shape = tensor_arg(arg_types, 1, "vm.reshape_tensor")
    new = tuple(attrs.newshape)
    if len(shape.shape) != 1 or (is_static_dim(shape.shape[0]) and shape.shape[0] != len(new)):
        raise TypeError(f"vm.reshape_tensor: the shape tensor {type_str(shape)} must hold the "
                        f"{len(new)} dims of newshape {list(new)}")
    if all(is_static_dim(d) for d in (*x.shape, *new)) and \
            dims_product(list(x.shape)) != dims_product(list(new)):
        raise TypeError(f"vm.reshape_tensor: cannot reshape {type_str(x)} to {list(new)}")
    return TensorType(new, x.dtype)


def _update_row_rel(arg_types, attrs):
    check_num_args("vm.update_row", arg_types, 3)
    data = tensor_arg(arg_types, 0, "vm.update_row")
    row = tensor_arg(arg_types, 1, "vm.update_row")
    index = tensor_arg(arg_types, 2, "vm.update_row")
    if len(data.shape) < 1:
        raise TypeError(f"vm.update_row: the data {type_str(data)} has no rows")
    if row.dtype != data.dtype or len(row.shape) != len(data.shape) - 1 or any(
            not agree(a, b) for a, b in zip(row.shape, data.shape[1:], strict=True)):
        raise TypeError(f"vm.update_row: the row {type_str(row)} is not a row of the data "
                        f"{type_str(data)}")
    if index.shape or not index.dtype.startswith(("int", "uint")):
        raise TypeError(f"vm.update_row: the index must be an integer scalar, got "
                        f"{type_str(index)}")
    return data


define_op("vm.shape_of", _shape_of_rel, pattern=OpPattern.OPAQUE, attrs_type=ShapeOfAttrs,
          num_inputs=1, describe="The shape of a tensor as a 1-D tensor (Relay VM).")
define_op("vm.reshape_tensor", _reshape_tensor_rel, pattern=OpPattern.OPAQUE,
          attrs_type=ReshapeTensorAttrs, num_inputs=2,
          describe="Reshape to a shape given as a tensor and as attrs (Relay VM).")


define_op("vm.update_row", _update_row_rel, pattern=OpPattern.OPAQUE, num_inputs=3,
          describe="data with data[index] = row; the Relay VM writes data in place, so data "
                   "must not be used after the call (as Relax's call_tir_inplace).")


def shape_of(expr: Expr) -> Call:
    return Call(Op.get("vm.shape_of"), [expr], ShapeOfAttrs(dtype="int64"))


def reshape_tensor(data: Expr, shape: Expr, newshape) -> Call:
    return Call(Op.get("vm.reshape_tensor"), [data, shape],
                ReshapeTensorAttrs(newshape=tuple(int(s) for s in newshape)))

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("vm.reshape_tensor", "a reshape to a runtime shape: a numpy view, no copy")
register_numpy_only("vm.update_row", "the Relay VM writes the row itself (UpdateRow), in place")


def update_row(data: Expr, row: Expr, index: Expr) -> Call:
    """``data`` with row ``index`` (an integer scalar tensor, 0 <= index < rows) set to ``row``:
    O(row) in the Relay VM, which writes ``data`` in place (``UpdateRow``), so ``data`` must
    not be used after this call. The interpreter and FoldConstant copy (the same values)."""
    return Call(Op.get("vm.update_row"), [data, row, index])
