"""1-D and 3-D pooling: ``max_pool1d``/``avg_pool1d``/``adaptive_avg_pool1d`` (NCW) and
``max_pool3d``/``avg_pool3d``/``adaptive_avg_pool3d`` (NCDHW), with TVM's ``Pool1DAttrs``,
``Pool3DAttrs``, ``AdaptivePool1DAttrs`` and ``AdaptivePool3DAttrs``."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ...expr import Call, Expr
from .._common import int_tuple
from ..base import register_op_rule
from ..op_attrs import _attrs as _make_attrs
from .conv3d import padding_nd
from .pooling import SPATIAL, adaptive_pool_rule, pool_rule

__all__ = ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "max_pool3d", "avg_pool3d",
           "adaptive_avg_pool3d", "Pool1DAttrs", "Pool3DAttrs", "AdaptivePool1DAttrs",
           "AdaptivePool3DAttrs"]


def _pool_attrs_class(nd: int):
    layout = "NC" + SPATIAL[nd]
    cls = _make_attrs(
        f"Pool{nd}DAttrs",
        [("pool_size", (1,) * nd), ("strides", (1,) * nd), ("dilation", (1,) * nd),
         ("padding", (0,) * (2 * nd)), ("ceil_mode", False), ("count_include_pad", False),
         ("layout", layout), ("out_layout", layout)],
        f"Attributes of nn.max_pool{nd}d / nn.avg_pool{nd}d.")
    cls.__module__ = __name__
    adaptive = _make_attrs(
        f"AdaptivePool{nd}DAttrs",
        [("output_size", None), ("layout", layout), ("out_layout", layout)],
        f"Attributes of nn.adaptive_avg_pool{nd}d.")
    adaptive.__module__ = __name__
    return cls, adaptive


Pool1DAttrs, AdaptivePool1DAttrs = _pool_attrs_class(1)
Pool3DAttrs, AdaptivePool3DAttrs = _pool_attrs_class(3)
_ATTRS = {1: (Pool1DAttrs, AdaptivePool1DAttrs), 3: (Pool3DAttrs, AdaptivePool3DAttrs)}


for _nd in (1, 3):
    for _kind in ("max", "avg"):
        register_op_rule(f"relax.nn.{_kind}_pool{_nd}d", pool_rule(_nd),
                         pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1,
                         arguments=("data",), attrs_type=_ATTRS[_nd][0])
    register_op_rule(f"relax.nn.adaptive_avg_pool{_nd}d", adaptive_pool_rule(_nd),
                     pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1,
                     arguments=("data",), attrs_type=_ATTRS[_nd][1])
del _nd, _kind


def _pool(kind: str, nd: int, data, pool_size, strides, padding, dilation, ceil_mode,
          count_include_pad, layout, out_layout) -> Call:
    attrs = _ATTRS[nd][0](
        pool_size=int_tuple(pool_size, nd, "pool_size"), strides=int_tuple(strides, nd, "strides"),
        dilation=int_tuple(dilation, nd, "dilation"), padding=padding_nd(padding, nd),
        ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad), layout=layout,
        out_layout=layout if out_layout is None else out_layout)
    return Call(Op.get(f"relax.nn.{kind}_pool{nd}d"), [data], attrs)


def max_pool1d(data: Expr, pool_size: int | Sequence[int] = (1,),
               strides: int | Sequence[int] = (1,), padding: int | Sequence[int] = (0, 0),
               dilation: int | Sequence[int] = (1,), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCW",
               out_layout: str | None = None) -> Call:
    """1-D max pooling."""
    return _pool("max", 1, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool1d(data: Expr, pool_size: int | Sequence[int] = (1,),
               strides: int | Sequence[int] = (1,), padding: int | Sequence[int] = (0, 0),
               dilation: int | Sequence[int] = (1,), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCW",
               out_layout: str | None = None) -> Call:
    """1-D average pooling."""
    return _pool("avg", 1, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def max_pool3d(data: Expr, pool_size: int | Sequence[int] = (1, 1, 1),
               strides: int | Sequence[int] = (1, 1, 1),
               padding: int | Sequence[int] = (0, 0, 0),
               dilation: int | Sequence[int] = (1, 1, 1), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCDHW",
               out_layout: str | None = None) -> Call:
    """3-D max pooling."""
    return _pool("max", 3, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool3d(data: Expr, pool_size: int | Sequence[int] = (1, 1, 1),
               strides: int | Sequence[int] = (1, 1, 1),
               padding: int | Sequence[int] = (0, 0, 0),
               dilation: int | Sequence[int] = (1, 1, 1), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCDHW",
               out_layout: str | None = None) -> Call:
    """3-D average pooling."""
    return _pool("avg", 3, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def _adaptive(nd: int, data, output_size, layout, out_layout) -> Call:
    size = None if output_size is None else int_tuple(output_size, nd, "output_size")
    attrs = _ATTRS[nd][1](output_size=size, layout=layout,
                          out_layout=layout if out_layout is None else out_layout)
    return Call(Op.get(f"relax.nn.adaptive_avg_pool{nd}d"), [data], attrs)


def adaptive_avg_pool1d(data: Expr, output_size: int | Sequence[int] | None = None,
                        layout: str = "NCW", out_layout: str | None = None) -> Call:
    """Average pooling to ``output_size`` along W (the input's W when None)."""
    return _adaptive(1, data, output_size, layout, out_layout)


def adaptive_avg_pool3d(data: Expr, output_size: int | Sequence[int] | None = None,
                        layout: str = "NCDHW", out_layout: str | None = None) -> Call:
    """Average pooling to ``output_size`` over D, H, W (the input's when None)."""
    return _adaptive(3, data, output_size, layout, out_layout)
