"""Legalization of ``astype``: ``topi.cast`` (stage ``T_cast``)."""

from __future__ import annotations

from ....topi import math as topi_math
from .common import call_topi, out_dtype, register_legalize

__all__: list[str] = []


@register_legalize("relax.astype")
def _astype(bb, call):
    dtype = out_dtype(call)
    return call_topi(bb, lambda x: topi_math.cast(x, dtype), call.args[0], name="cast")
