"""Quantized elementwise ops of one input as lookup tables: TFLite's LUT kernels (8-bit), its
integer kernels (``exact_unary``) and LiteRT's int16 tables, SOFTMAX and LOGISTIC / TANH."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_quant import QRANGE
from ... import expr as _expr
from . import (
    exact_lut16,
    exact_sigmoid16,
    exact_softmax16,
    exact_unary,
)
from .importer import (
    CONVERTERS,
)
from .quantized_tensor import _in_q, _int16_to_int16, _out_q

# elementwise transcendental functions of one input: on 8-bit values, a table of the 256
# results (one gather: 0.05 ms on 128x1024 int8, where GELU computed in float took 0.10, TANH
# 0.08, LOGISTIC 0.061, LOG 0.097, SIN 0.093, ELU 0.057, EXP 0.051; HARD_SWISH 0.033, SQRT
# 0.027 and RSQRT 0.040 stay cheaper in float)
TABLE_OPS = frozenset({"LOGISTIC", "TANH", "GELU", "ELU", "EXP", "LOG", "SIN", "COS"})


def _table(ctx):
    """An elementwise op on 8-bit values as TFLite computes its LUT kernels: the float
    converter evaluated at import on every value of the input's dtype (dequantized), each
    result quantized to the output as LiteRT's LUT builder does it (the float32 result times
    the float32 inverse of the output scale, rounded half away from zero; NaN -> the zero
    point: dividing in float64 put int8 ELU's exact halves a step off); the op is then one
    ``take`` from that 256-entry table."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    lo, hi = QRANGE[qx.dtype]
    levels = ((np.arange(lo, hi + 1) - qx.z) * np.float64(qx.s)).astype("float32")
    ctx.inputs[0] = _expr.const(levels, "float32")
    values = ctx.importer.fold(CONVERTERS[ctx.name](ctx))
    if not isinstance(values, _expr.Constant):
        raise ctx.fail("the lookup table did not fold to a constant")
    inverse = np.float32(1.0) / np.float32(qo.s)
    f = np.nan_to_num(values.data.numpy().astype("float32") * inverse, nan=0.0).astype("float64")
    olo, ohi = QRANGE[qo.dtype]
    table = np.clip(np.sign(f) * np.floor(np.abs(f) + 0.5) + qo.z, olo, ohi).astype(qo.dtype)
    return exact_unary.lookup(x, table, qx.dtype)


def _integer_table(ctx):
    """LEAKY_RELU / HARD_SWISH as TFLite's integer kernels compute them (``exact_unary``):
    a lookup in their 256 results."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    t = exact_unary.table(ctx.name, qx.dtype, (qx.s, qx.z), (qo.s, qo.z), ctx.options())
    return exact_unary.lookup(x, t, qx.dtype)


def _int16_lut(ctx):
    """int16 LOG / EXP / GELU as LiteRT's interpolated 16-bit tables (``exact_lut16``): one
    lookup in the 65536 results."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    opt = ctx.options()
    approximate = bool(opt.Approximate()) if opt is not None and hasattr(
        opt, "Approximate") else False
    t = exact_lut16.table(ctx.name, (qx.s, qx.z), (qo.s, qo.z), approximate)
    return exact_unary.lookup(x, t, "int16")


def _int16_unit_output(ctx) -> bool:
    """int16 in and out with the parameters LiteRT's int16 SOFTMAX / LOGISTIC / TANH require
    (zero points 0, the output quantized 1 / 32768); other parameters, which LiteRT rejects,
    go through float."""
    if not _int16_to_int16(ctx):
        return False
    qx, qo = _in_q(ctx, 0), _out_q(ctx)
    return not qx.z and not qo.z and qo.s == np.float32(1 / 32768)


def _int16_softmax(ctx):
    """int16 SOFTMAX as LiteRT's integer kernel (``exact_softmax16``)."""
    qx = _in_q(ctx, 0)
    opt = ctx.options()
    beta = float(opt.Beta()) if opt is not None else 1.0
    return exact_softmax16.softmax(ctx.inputs[0], qx.s, beta)


def _int16_sigmoid(ctx):
    """int16 LOGISTIC / TANH as LiteRT's kernels (``exact_sigmoid16``): one lookup in the
    65536 results."""
    qx = _in_q(ctx, 0)
    return exact_unary.lookup(ctx.inputs[0], exact_sigmoid16.results(ctx.name, qx.s), "int16")
