"""Legalization of ``cumsum`` / ``cumprod`` onto ``topi.scan``: one masked-reduction stage
along an axis (a flattened input is reshaped to 1-d first), the form ``schedule.raise_scan``
raises to the one-pass-per-row scan."""

from __future__ import annotations

from ....topi import manipulation as topi_manip
from ....topi import scan as topi_scan
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


def _scan(kind: str):
    def legalize(bb, call):
        a = call.attrs
        axis = None if a.axis is None else int(a.axis)
        dtype = out_dtype(call)

        def te_func(x):
            if axis is None and len(x.shape) != 1:  # the flattened scan: along a 1-d view
                return topi_scan.scan(topi_manip.reshape(x, out_shape(call)), kind, 0, dtype,
                                      bool(a.exclusive))
            return topi_scan.scan(x, kind, axis, dtype, bool(a.exclusive))

        return call_topi(bb, te_func, call.args[0], name=f"cum{kind}")

    return legalize


register_legalize("relax.cumsum", _scan("sum"))
register_legalize("relax.cumprod", _scan("prod"))
