"""Scans and scatters: ``cumsum``, ``cumprod``, ``scatter_elements``, ``scatter_nd``.
References: ``minitvm.topi.reference.algorithm``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.prim_expr import Any
from ...ir.structural import structural_equal
from ...ir.type import TensorType
from ...topi.shape_conditions import agree, at_most
from ...topi.utils import is_static_dim
from ..expr import Call
from .op import define_op
from .type_relations import check_num_args, dims_product, normalize_axis, tensor_arg, type_str

__all__ = ["cumsum", "cumprod", "scatter_elements", "scatter_nd"]


class ScanopAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", None), ("dtype", None), ("exclusive", None))


class ScatterElementsAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0), ("reduction", "update"))


class ScatterNDAttrs(Attrs):
    __slots__ = ()
    _fields = (("mode", "update"),)


_REDUCTIONS = ("update", "add", "mul", "min", "max")


def _scan_rel(name):
    def rel(arg_types, attrs):
        check_num_args(name, arg_types, 1)
        x = tensor_arg(arg_types, 0, name)
        dtype = attrs.dtype or x.dtype
        if attrs.axis is None:  # the input flattened: (?,) from a relay.Any(), n * 4 symbolic
            return TensorType((dims_product(x.shape),), dtype)
        normalize_axis(attrs.axis, len(x.shape), name)
        return TensorType(x.shape, dtype)

    return rel


def _may_equal(a, b) -> bool:
    """May dimensions ``a`` and ``b`` be the same size? Two static sizes must be equal; an
    import-time ``relay.Any()`` may be any size (two distinct ``Any`` objects, e.g. a reshape's
    -1 and the batch, are not known unequal). Two symbolic sizes (the Relay VM's ``tir.Var``
    expressions, ``vm.symbolic``) must be the same expression: the symbolic kernel checks at
    each call only the sizes its typing made one, so distinct ones send the function to the
    per-shape specialization, whose static typing rejects a mismatch instead of reading past
    the smaller operand."""
    if isinstance(a, Any) or isinstance(b, Any):
        return True
    try:
        return int(a) == int(b)
    except (TypeError, ValueError):
        return a is b or structural_equal(a, b)


def _scatter_elements_rel(arg_types, attrs):
    check_num_args("scatter_elements", arg_types, 3)
    data, idx, upd = (tensor_arg(arg_types, i, "scatter_elements") for i in range(3))
    axis = normalize_axis(attrs.axis, len(data.shape), "scatter_elements")
    if len(idx.shape) != len(upd.shape) or len(idx.shape) != len(data.shape) or not all(
            _may_equal(i, u) for i, u in zip(idx.shape, upd.shape, strict=True)):
        raise TypeError(f"scatter_elements: indices {type_str(idx)} and updates "
                        f"{type_str(upd)} must have one shape and the rank of the data "
                        f"{type_str(data)}")
    for k, (i, d) in enumerate(zip(idx.shape, data.shape, strict=True)):
        if k != axis and not at_most(i, d):  # (an update's own position there is written)
            raise TypeError(f"scatter_elements: dim {k} of the indices {type_str(idx)} exceeds "
                            f"the data's {type_str(data)}")
    if not idx.dtype.startswith(("int", "uint")):
        raise TypeError(f"scatter_elements: indices must be integers, got {type_str(idx)}")
    if attrs.reduction not in _REDUCTIONS:
        raise TypeError(f"scatter_elements: reduction must be one of {', '.join(_REDUCTIONS)},"
                        f" got {attrs.reduction!r}")
    return TensorType(data.shape, data.dtype)


def _scatter_nd_rel(arg_types, attrs):
    check_num_args("scatter_nd", arg_types, 3)
    data, idx, upd = (tensor_arg(arg_types, i, "scatter_nd") for i in range(3))
    if idx.shape and not is_static_dim(idx.shape[0]):
        # (a run-time index rank: the one the ranks allow, updates being indices.shape[1:] +
        # data.shape[m:], stated equal to the indices' first dim; the kernel checks it)
        m = len(idx.shape) - 1 + len(data.shape) - len(upd.shape)
        if not 1 <= m <= len(data.shape) or not agree(idx.shape[0], m):
            raise TypeError(f"scatter_nd: updates {type_str(upd)} and indices {type_str(idx)} "
                            f"leave no index rank within the data {type_str(data)}")
    else:
        m = int(idx.shape[0]) if idx.shape else 0
    if not idx.shape or m > len(data.shape):
        raise TypeError(f"scatter_nd: indices {type_str(idx)} must index at most the rank of "
                        f"the data {type_str(data)} in their first dimension")
    want = tuple(idx.shape[1:]) + tuple(data.shape[m:])
    if len(upd.shape) != len(want) or not all(
            _may_equal(u, w) for u, w in zip(upd.shape, want, strict=True)):
        raise TypeError(f"scatter_nd: updates must have shape {want}, got {type_str(upd)}")
    if attrs.mode not in _REDUCTIONS:
        raise TypeError(f"scatter_nd: mode must be one of {', '.join(_REDUCTIONS)}, got "
                        f"{attrs.mode!r}")
    return TensorType(data.shape, data.dtype)


_OPAQUE = OpPattern.OPAQUE
define_op("cumsum", _scan_rel("cumsum"), pattern=_OPAQUE, attrs_type=ScanopAttrs,
          num_inputs=1, describe="Cumulative sum along an axis (flattened when axis is None).")
define_op("cumprod", _scan_rel("cumprod"), pattern=_OPAQUE, attrs_type=ScanopAttrs,
          num_inputs=1, describe="Cumulative product along an axis.")
define_op("scatter_elements", _scatter_elements_rel, pattern=_OPAQUE,
          attrs_type=ScatterElementsAttrs, num_inputs=3,
          describe="Write updates at per-element indices along an axis.")
define_op("scatter_nd", _scatter_nd_rel, pattern=_OPAQUE, attrs_type=ScatterNDAttrs,
          num_inputs=3, describe="Write updates at N-d index tuples.")


def cumsum(data, axis=None, dtype=None, exclusive=None) -> Call:
    return Call(Op.get("cumsum"), [data], ScanopAttrs(
        axis=None if axis is None else int(axis), dtype=dtype,
        exclusive=None if exclusive is None else bool(exclusive)))


def cumprod(data, axis=None, dtype=None, exclusive=None) -> Call:
    return Call(Op.get("cumprod"), [data], ScanopAttrs(
        axis=None if axis is None else int(axis), dtype=dtype,
        exclusive=None if exclusive is None else bool(exclusive)))


def scatter_elements(data, indices, updates, axis: int = 0, reduction: str = "update") -> Call:
    return Call(Op.get("scatter_elements"), [data, indices, updates],
                ScatterElementsAttrs(axis=int(axis), reduction=reduction))


def scatter_nd(data, indices, updates, mode: str = "update") -> Call:
    return Call(Op.get("scatter_nd"), [data, indices, updates], ScatterNDAttrs(mode=mode))
