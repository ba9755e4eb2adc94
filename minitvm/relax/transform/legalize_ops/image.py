"""Legalization of ``image.resize2d`` onto ``topi.image_resize.resize2d`` (plain layouts)."""

from __future__ import annotations

from ....topi import image_resize
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


@register_legalize("relax.image.resize2d")
def _resize2d(bb, call):
    a = call.attrs
    shape = out_shape(call)
    h, w = shape[a.layout.index("H")], shape[a.layout.index("W")]
    dtype = out_dtype(call)
    return call_topi(bb, lambda x: image_resize.resize2d(
        x, (h, w), a.layout, a.method, a.coordinate_transformation_mode, a.rounding_method,
        float(a.cubic_alpha), int(a.cubic_exclude), float(a.extrapolation_value),
        list(a.roi), dtype), call.args[0], name="resize2d")
