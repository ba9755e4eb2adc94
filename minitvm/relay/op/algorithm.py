"""Sorting and searching: ``sort``, ``argsort``, ``topk``, ``searchsorted`` (TVM's
``relay.op.algorithm``). References: ``minitvm.topi.reference.algorithm``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.prim_expr import Any, PrimExpr
from ...ir.type import TensorType, TupleType
from ...tir import expr as E
from ...topi.shape_conditions import agree
from ..expr import Call, Constant, Expr, TupleWrapper
from .op import define_op
from .type_relations import check_num_args, normalize_axis, tensor_arg, type_str

__all__ = ["sort", "argsort", "topk", "searchsorted"]


class SortAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", -1), ("is_ascend", True))


class ArgsortAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", -1), ("is_ascend", True), ("dtype", "int32"))


class TopKAttrs(Attrs):
    __slots__ = ()
    _fields = (("k", 1), ("axis", -1), ("ret_type", "both"), ("is_ascend", False),
               ("dtype", "int32"))


class SearchSortedAttrs(Attrs):
    __slots__ = ()
    _fields = (("right", False), ("dtype", "int32"))


def _sort_rel(arg_types, attrs):
    check_num_args("sort", arg_types, 1)
    x = tensor_arg(arg_types, 0, "sort")
    normalize_axis(attrs.axis, len(x.shape), "sort")
    return TensorType(x.shape, x.dtype)


def _argsort_rel(arg_types, attrs):
    check_num_args("argsort", arg_types, 1)
    x = tensor_arg(arg_types, 0, "argsort")
    normalize_axis(attrs.axis, len(x.shape), "argsort")
    return TensorType(x.shape, attrs.dtype)


def _kept(k: int, d):
    """The length along the axis of a top ``k`` of ``d`` elements: ``min(k, d)`` for a size
    known at compile time or a size variable (a symbolic kernel's typing: one kernel for every
    length), ``k`` for ``Any`` (TVM's type; a shorter axis gives fewer at run time)."""
    if isinstance(d, int | E.IntImm):
        return min(k, int(d))
    if isinstance(d, Any) or not isinstance(d, PrimExpr):
        return k
    return E.Min(E.IntImm(d.dtype, k), d)


def _topk_rel(arg_types, attrs):
    check_num_args("topk", arg_types, 1)
    x = tensor_arg(arg_types, 0, "topk")
    axis = normalize_axis(attrs.axis, len(x.shape), "topk")
    if attrs.ret_type not in ("both", "values", "indices"):
        raise TypeError(f"topk: ret_type must be both, values or indices, got "
                        f"{attrs.ret_type!r}")
    k = int(attrs.k)
    shape = list(x.shape)
    if k >= 1:
        shape[axis] = _kept(k, shape[axis])
    values = TensorType(tuple(shape), x.dtype)
    indices = TensorType(tuple(shape), attrs.dtype)
    return {"both": TupleType([values, indices]), "values": values,
            "indices": indices}[attrs.ret_type]


def _searchsorted_rel(arg_types, attrs):
    check_num_args("searchsorted", arg_types, 2)
    seq = tensor_arg(arg_types, 0, "searchsorted")
    vals = tensor_arg(arg_types, 1, "searchsorted")
    if len(seq.shape) > 1 and (len(seq.shape) != len(vals.shape) or not all(
            agree(a, b) for a, b in zip(seq.shape[:-1], vals.shape[:-1], strict=True))):
        raise TypeError(f"searchsorted: the leading dims of sorted_sequence {type_str(seq)} "
                        f"and values {type_str(vals)} must match")
    return TensorType(vals.shape, attrs.dtype)


_OPAQUE = OpPattern.OPAQUE
define_op("sort", _sort_rel, pattern=_OPAQUE, attrs_type=SortAttrs, num_inputs=1,
          describe="Sort along an axis.")
define_op("argsort", _argsort_rel, pattern=_OPAQUE, attrs_type=ArgsortAttrs, num_inputs=1,
          describe="Indices that sort along an axis (stable).")
define_op("topk", _topk_rel, pattern=_OPAQUE, attrs_type=TopKAttrs, num_inputs=1,
          describe="The k largest (or smallest) values and their indices along an axis.")
define_op("searchsorted", _searchsorted_rel, pattern=_OPAQUE, attrs_type=SearchSortedAttrs,
          num_inputs=2, describe="Insertion indices of values into a sorted sequence.")


def sort(data, axis: int = -1, is_ascend: bool = True) -> Call:
    return Call(Op.get("sort"), [data], SortAttrs(axis=int(axis), is_ascend=bool(is_ascend)))


def argsort(data, axis: int = -1, is_ascend: bool = True, dtype: str = "int32") -> Call:
    return Call(Op.get("argsort"), [data],
                ArgsortAttrs(axis=int(axis), is_ascend=bool(is_ascend), dtype=dtype))


def topk(data, k: int = 1, axis: int = -1, ret_type: str = "both", is_ascend: bool = False,
         dtype: str = "int32"):
    """The top ``k`` along ``axis``; ``ret_type="both"`` gives (values, indices).

    A constant ``k`` is read as an int; any other expression builds ``dyn.topk`` (as TVM)."""
    if isinstance(k, Constant):
        k = k.data.numpy().item()
    if isinstance(k, Expr):
        from .dyn import _more as _dyn

        return _dyn.topk(data, k, axis, ret_type, is_ascend, dtype)
    call = Call(Op.get("topk"), [data], TopKAttrs(k=int(k), axis=int(axis), ret_type=ret_type,
                                                  is_ascend=bool(is_ascend), dtype=dtype))
    return TupleWrapper(call, 2) if ret_type == "both" else call


def searchsorted(sorted_sequence, values, right: bool = False, dtype: str = "int32") -> Call:
    return Call(Op.get("searchsorted"), [sorted_sequence, values],
                SearchSortedAttrs(right=bool(right), dtype=dtype))
