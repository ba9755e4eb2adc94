"""Compute of ``nn.lrn`` (local response normalization across channels):
``x / (bias + alpha / size * sum of x**2 over the channel window) ** beta``, the window
``[c - size // 2, c + (size - 1) // 2]``. Stages: the squares zero-padded along the axis
(``lrn_sq``), the window sum with no masks (``lrn_sum``, a reduction over the window that the
schedules vectorize along the contiguous axis), and the elementwise epilogue, whose constant
``beta`` the code generator expands inline (``x**0.75``: two square roots). Before, Relay ran the
op as a numpy kernel."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .utils import compute, normalize_axis


def lrn(x, size: int, axis: int, alpha: float, beta: float, bias: float):
    """``nn.lrn`` of the tensor ``x`` (float), over ``axis``; any axis may be symbolic (a
    dynamic batch, a Relay VM kernel over run-time channels)."""
    shape = list(x.shape)
    axis = normalize_axis(axis, len(shape), "nn.lrn")
    size = int(size)
    if size < 1:
        raise ValueError(f"nn.lrn: size must be positive, got {size}")
    half = size // 2
    if isinstance(shape[axis], (int, E.IntImm)):
        n = int(shape[axis])

        def extent(v):  # in the index type of the input's dims (int64 from Relax)
            return E.IntImm(shape[axis].dtype, v) if isinstance(shape[axis], E.IntImm) else v

        def in_type(v, dtype):  # (an int bound as a constant of the index's type)
            return E.IntImm(dtype, v)
    else:  # a symbolic extent (a Relay VM symbolic kernel): bounds as its expressions
        n = shape[axis]

        def extent(v):
            return E.IntImm(n.dtype, v) if isinstance(v, int) else v

        def in_type(v, dtype):
            v = extent(v)
            return v if v.dtype == dtype else E.Cast(dtype, v)

    padded = list(shape)
    padded[axis] = extent(n + size - 1)
    dt = x.dtype

    def sq(*i):
        j = i[axis] - E.IntImm(i[axis].dtype, half)
        v = x[(*i[:axis], tir_op.max(tir_op.min(j, in_type(n - 1, j.dtype)),
                                     E.IntImm(j.dtype, 0)), *i[axis + 1:])]
        inside = E.And(j >= E.IntImm(j.dtype, 0), j < in_type(n, j.dtype))
        return E.Select(inside, v * v, E.const(0, dt))

    sqp = te.compute(padded, sq, name="lrn_sq")
    r = te.reduce_axis((extent(0), extent(size)), name="rw")
    total = te.compute(shape, lambda *i: te.sum(sqp[(*i[:axis], i[axis] + r, *i[axis + 1:])],
                                                axis=[r]), name="lrn_sum")
    scale, offset, power = (E.const(v, dt) for v in (alpha / size, bias, beta))
    return te.compute(shape, lambda *i: x[i] / tir_op.power(offset + scale * total[i], power),
                      name="lrn")


@compute("nn.lrn")
def _lrn(attrs, inputs, out_type):
    return [lrn(inputs[0], int(attrs.size), int(attrs.axis), float(attrs.alpha),
                float(attrs.beta), float(attrs.bias))]
