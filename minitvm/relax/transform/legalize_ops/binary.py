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

        exponent = _scalar_exponent(call, dtype) if name == "power" else None
        if exponent is not None:  # inline: pow by a known exponent (fewer multiplications)
            return call_topi(bb, lambda a: topi_bcast.binary(name, a, exponent, shape, dtype),
                             call.args[0], name=name)
        return call_topi(bb, te_func, call.args[0], call.args[1], name=name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _scalar_exponent(call, dtype: str):
    """The exponent of ``power(x, c)`` where ``c`` is a constant of one element and of ``x``'s
    dtype (float32 or an integer), as an immediate, else None: the code generator expands a
    float32 ``pow(x, 0.75)`` into square roots or exp/log instead of a ``powf`` per element,
    and ``int_power`` multiplies only the set bits of a known integer exponent."""
    c = call.args[1]
    if not isinstance(c, Constant) or not (dtype == "float32" or dtype.startswith(("int",
                                                                                    "uint"))):
        return None
    data = c.data.numpy()
    ndim = getattr(call.args[0].struct_info, "ndim", -1)
    if data.size != 1 or data.dtype != np.dtype(dtype) or (data.ndim and
                                                            not 0 <= data.ndim <= ndim):
        return None  # (a constant of more dims than x widens the result: the tensor form)
    value = data.reshape(()).item()
    return E.FloatImm(dtype, float(value)) if dtype == "float32" else E.IntImm(dtype, value)


for _name in ARITH_OPS + CMP_OPS:
    register_legalize("relax." + _name, _make(_name))
