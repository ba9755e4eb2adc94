"""Legalization of ``cumsum`` / ``cumprod`` onto ``topi.scan`` (one masked-reduction stage)."""

from __future__ import annotations

from ....topi import scan as topi_scan
from .common import call_topi, out_dtype, register_legalize

__all__: list[str] = []


def _scan(kind: str):
    def legalize(bb, call):
        a = call.attrs
        axis = None if a.axis is None else int(a.axis)
        dtype = out_dtype(call)
        return call_topi(bb, lambda x: topi_scan.scan(x, kind, axis, dtype, bool(a.exclusive)),
                         call.args[0], name=f"cum{kind}")

    return legalize


register_legalize("relax.cumsum", _scan("sum"))
register_legalize("relax.cumprod", _scan("prod"))
