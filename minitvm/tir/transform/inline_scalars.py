"""Loads of a PrimFunc's rank-0 constant buffer parameters as immediates.

A fused kernel's scalar constants (a quantized model's scales, a ``take`` index, a GELU's
coefficients) reach it as rank-0 buffers; where their values are known when it is compiled, it
reads them as immediates, which the code generator folds into the arithmetic. The parameters
stay (the callers are unchanged). Shared by the Relax VM's kernels and Relay's symbolic ones.
"""

from __future__ import annotations

from .. import expr as E
from ..function import PrimFunc
from ..stmt_functor import transform_expr, transform_stmt

__all__ = ["inline_scalars"]


def inline_scalars(func: PrimFunc, values: dict) -> PrimFunc:
    """``func`` with every load of its rank-0 buffer parameters at positions ``values``
    (position -> numpy scalar of the buffer's dtype) replaced by that value."""
    imm = {}
    for k, v in values.items():
        buf = func.buffer_map.get(func.params[k])
        if buf is None or len(buf.shape) != 0 or str(buf.dtype) != str(v.dtype):
            continue
        imm[id(buf)] = E.FloatImm(str(v.dtype), float(v)) if v.dtype.kind == "f" else \
            E.IntImm(str(v.dtype), int(v))
    if not imm:
        return func

    def fexpr(e):
        return transform_expr(e, lambda n: imm.get(id(n.buffer)) if isinstance(
            n, E.BufferLoad) else None)

    body = transform_stmt(func.body, fexpr)
    return func if body is func.body else func.with_body(body)
