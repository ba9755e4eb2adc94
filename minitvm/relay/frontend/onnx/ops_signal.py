"""ONNX's ``DFT`` (opsets 17 and 20) on Relay: forward and inverse, full, one-sided (RFFT) and
inverse one-sided (IRFFT), with ``dft_length`` padding or cropping the signal; each part of
the result is a dense product with constant cosine / sine matrices along the transformed
axis (``frontend_common.dft.onnx_dft_plan``), which the native GEMM kernels run."""

from __future__ import annotations

import numpy as np

from ....frontend_common.dft import onnx_dft_node_plan
from ... import op as _op
from ...op import nn as _nn
from .registry import register


def _along(ctx, x, axis: int, mat: np.ndarray):
    """``x`` contracted with ``mat`` [n_in, n_out] along ``axis``: the axis moved last, one
    dense layer, moved back."""
    nd = len(ctx.shape(x))
    perm = [d for d in range(nd) if d != axis] + [axis]
    moved = x if axis == nd - 1 else _op.transpose(x, perm)
    y = _nn.dense(moved, ctx.const(np.ascontiguousarray(mat.T), ctx.dtype(x)))
    return y if axis == nd - 1 else _op.transpose(y, [int(b) for b in np.argsort(perm)])


def _combine(ctx, parts, axis: int):
    """The sum of ``operand @ matrix`` over the pairs whose matrix exists."""
    terms = [_along(ctx, x, axis, m) for x, m in parts if m is not None]
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
