"""Legalization of the binary broadcast ops (add, multiply, comparisons...): ``topi.<op>``,
one ``T_<op>`` stage over the broadcast result shape."""

from __future__ import annotations

import numpy as np

from ....tir import expr as E
from ....topi import broadcast as topi_bcast
from ...expr import Constant
from ...op.binary import ARITH_OPS, CMP_OPS
from .common import call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


def _make(name: str):
    def legalize(bb, call):
        shape = out_shape(call)
        dtype = out_dtype(call)

        def te_func(a, b):  # (integer power: topi's int_power, as in Relay)
            return topi_bcast.binary(name, a, b, shape,
                                     None if name in CMP_OPS else dtype)

        exponent = _scalar_exponent(call) if name == "power" and dtype == "float32" else None
        if exponent is not None:  # inline: the codegen computes pow by a constant natively
            return call_topi(bb, lambda a: topi_bcast.binary(name, a, exponent, shape, dtype),
                             call.args[0], name=name)
        return call_topi(bb, te_func, call.args[0], call.args[1], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _scalar_exponent(call):
    """The float32 exponent of ``power(x, c)`` where ``c`` is a constant of one element (as a
    ``FloatImm``, so that the kernel reads ``pow(x, 0.75)`` and the code generator expands it
    into square roots or exp/log instead of a ``powf`` per element), else None."""
    c = call.args[1]
    if not isinstance(c, Constant):
        return None
    data = c.data.numpy()
    ndim = getattr(call.args[0].struct_info, "ndim", -1)
    if data.size != 1 or data.dtype != np.float32 or (data.ndim and not 0 <= data.ndim <= ndim):
        return None  # (a constant of more dims than x widens the result: the tensor form)
    return E.FloatImm("float32", float(data.reshape(())))


for _name in ARITH_OPS + CMP_OPS:
    register_legalize("relax." + _name, _make(_name))
