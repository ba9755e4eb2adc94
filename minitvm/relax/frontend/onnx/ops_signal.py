"""ONNX's ``DFT`` (opsets 17 and 20) on Relax: forward and inverse, full, one-sided (RFFT) and
inverse one-sided (IRFFT), with ``dft_length`` padding or cropping the signal; each part of
the result is a matmul with constant cosine / sine matrices along the transformed axis
(``frontend_common.dft.onnx_dft_plan``). Other axes may be symbolic."""

from __future__ import annotations

import numpy as np

from ....frontend_common.dft import onnx_dft_node_plan
from ... import op as _op
from ...expr import const
from ..common import contract_axis
from .context import Context, register


def _combine(ctx: Context, parts, axis: int):
    """The sum of ``operand @ matrix`` over the pairs whose matrix exists."""
    terms = [contract_axis(ctx, x, axis, m) for x, m in parts if m is not None]
    return terms[0] if len(terms) == 1 else ctx.emit(_op.add(*terms))


@register("DFT")
def _dft(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    shape = ctx.shape(x)
    plan = onnx_dft_node_plan(ctx, ins, attrs, shape, ctx.dtype(x))
    last = len(shape) - 1
    index = [const(np.array(i, "int64")) for i in (0, 1)]
    re = ctx.emit(_op.take(x, index[0], axis=last))
    im = ctx.emit(_op.take(x, index[1], axis=last)) if shape[-1] == 2 else None
    out_re = _combine(ctx, [(re, plan.rr), (im, plan.ir)], plan.axis)
    if not plan.complex_out:
        return ctx.emit(_op.expand_dims(out_re, last))
    out_im = _combine(ctx, [(re, plan.ri), (im, plan.ii)], plan.axis)
    return ctx.emit(_op.stack([out_re, out_im], last))
