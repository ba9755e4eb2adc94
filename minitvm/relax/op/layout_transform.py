"""``relax.layout_transform``: a tensor re-laid out by a ``tir.IndexMap`` (``out[map(i)] =
x[i]``), e.g. NCHW -> NCHW4c by ``lambda n, c, h, w: (n, c // 4, h, w, c % 4)``; where the map
pads (a split that does not divide its axis), the padding holds ``pad_value``."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import FloatImm, IntImm
from ...tir.index_map import IndexMap
from ..expr import Call, Expr, PrimValue
from ..struct_info import StructInfo
from ._common import (
    UNKNOWN_NDIM,
    _ctx_analyzer,
    fail,
    fmt_sinfo,
    make_tensor,
    shape_expr_values,
    tensor_args,
)
from .base import register_op_rule
from .op_attrs import _attrs

__all__ = ["layout_transform"]

LayoutTransformAttrs = _attrs(
    "LayoutTransformAttrs",
    [("index_map", None), ("pad_value", None), ("axis_separators", None),
     ("input_axis_separators", None)],
    "Attributes of layout_transform: the IndexMap, the padding value (None: zero) and the "
    "axis separators of the output and input buffers.")


def _infer_layout_transform(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    imap = call.attrs.index_map
    if not isinstance(imap, IndexMap):
        fail(call, f"expects a tir.IndexMap as index_map, got {type(imap).__name__}",
             type_error=True)
    pad = call.attrs.pad_value
    if pad is not None and x.dtype not in ("", "void"):
        pdt = pad.value.dtype if isinstance(pad, PrimValue) else None
        if pdt is not None and pdt != x.dtype:
            fail(call, f"expects pad_value of the input's dtype {x.dtype}, got {pdt}",
                 type_error=True)
    out_ndim = len(imap.final_indices)
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, out_ndim, x.vdevice)
    if x.ndim != imap.ndim:
        fail(call, f"expects the index map to take as many indices as the input has dims, but "
                   f"the index map {imap} takes {imap.ndim} and the input is {fmt_sinfo(x)}")
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, out_ndim, x.vdevice)
    try:
        shape = imap.map_shape(list(dims), _ctx_analyzer(ctx))
    except ValueError as err:
        fail(call, f"cannot map the input shape through the index map: {err}")
    return make_tensor(shape, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.layout_transform", _infer_layout_transform,
                 pattern=OpPattern.INJECTIVE, num_inputs=1, arguments=("data",),
                 attrs_type=LayoutTransformAttrs)


def _pad_prim(pad_value, dtype: str | None) -> PrimValue | None:
    if pad_value is None or isinstance(pad_value, PrimValue):
        return pad_value
    if isinstance(pad_value, (IntImm, FloatImm)):
        return PrimValue(pad_value)
    if isinstance(pad_value, bool) or not isinstance(pad_value, (int, float)):
        raise TypeError(f"layout_transform: pad_value must be a number or PrimValue, got "
                        f"{pad_value!r}")
    if dtype is None or dtype in ("", "void"):
        dtype = "float32" if isinstance(pad_value, float) else "int64"
    if "float" in dtype:
        return PrimValue(FloatImm(dtype, float(pad_value)))
    return PrimValue(IntImm(dtype, int(pad_value)))


def layout_transform(x: Expr, index_map: IndexMap | Callable, pad_value=None,
                     axis_separators=None, input_axis_separators=None) -> Call:
    """``x`` re-laid out by ``index_map`` (an IndexMap or a lambda over x's indices)."""
    if not isinstance(index_map, IndexMap):
        if not callable(index_map):
            raise TypeError(f"layout_transform: index_map must be a tir.IndexMap or a "
                            f"function, got {type(index_map).__name__}")
        index_map = IndexMap.from_func(index_map)
    sinfo = getattr(x, "struct_info_", None) or getattr(x, "_struct_info", None)
    dtype = getattr(sinfo, "dtype", None)
    attrs = LayoutTransformAttrs(
        index_map=index_map, pad_value=_pad_prim(pad_value, dtype),
        axis_separators=[int(a) for a in (axis_separators or [])],
        input_axis_separators=[int(a) for a in (input_axis_separators or [])])
    return Call(Op.get("relax.layout_transform"), [x], attrs)
