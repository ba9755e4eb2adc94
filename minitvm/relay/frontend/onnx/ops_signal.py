"""ONNX's ``DFT`` (opsets 17 and 20) on Relay: forward and inverse, full, one-sided (RFFT) and
inverse one-sided (IRFFT), with ``dft_length`` padding or cropping the signal; each part of
the result is a dense product with constant cosine / sine matrices along the transformed
axis (``frontend_common.dft.onnx_dft_plan``), which the native GEMM kernels run."""

from __future__ import annotations

from ....frontend_common.dft import onnx_dft_node_plan
from ... import op as _op
from ..common import contract_axis
from .registry import register


def _combine(ctx, parts, axis: int):
    """The sum of ``operand @ matrix`` over the pairs whose matrix exists."""
    terms = [contract_axis(x, axis, len(ctx.shape(x)), m, ctx.dtype(x)) for x, m in parts
             if m is not None]
    return terms[0] if len(terms) == 1 else _op.add(*terms)


@register("DFT")
def _dft(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    plan = onnx_dft_node_plan(ctx, ins, attrs, shape, ctx.dtype(x))
    last = len(shape) - 1
    re = _op.take(x, ctx.const(0, "int64"), axis=last)
    im = _op.take(x, ctx.const(1, "int64"), axis=last) if shape[-1] == 2 else None
    out_re = _combine(ctx, [(re, plan.rr), (im, plan.ir)], plan.axis)
    if not plan.complex_out:
        return _op.expand_dims(out_re, last)
    out_im = _combine(ctx, [(re, plan.ri), (im, plan.ii)], plan.axis)
    return _op.stack([out_re, out_im], last)
