"""Legalization of the binary broadcast ops (add, multiply, comparisons...): ``topi.<op>``,
one ``T_<op>`` stage over the broadcast result shape."""

from __future__ import annotations

from ....topi import broadcast as topi_bcast
from ...op.binary import ARITH_OPS, CMP_OPS
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


def _make(name: str):
    def legalize(bb, call):
        shape = out_shape(call)
        dtype = out_dtype(call)

        def te_func(a, b):
            if name == "power" and dtype.startswith(("int", "uint")):  # no llvm integer pow
                from ....topi.transform_extra import broadcast_int_power

                return broadcast_int_power(a, b, shape)
            return topi_bcast.binary(name, a, b, shape,
                                     None if name in CMP_OPS else dtype)

        return call_topi(bb, te_func, call.args[0], call.args[1], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


for _name in ARITH_OPS + CMP_OPS:
    register_legalize("relax." + _name, _make(_name))
