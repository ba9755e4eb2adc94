"""Quantized pools, reductions, resize and L2_NORMALIZATION as LiteRT's kernels
(``exact_spatial``, ``exact_l2norm``)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from ..common import const_value
from . import (
    exact_l2norm,
    exact_spatial,
)
from .convert_nn import pad_at_run_time
from .importer import (
    _conv_pads,
)
from .quantized_tensor import (
    _eight_bit_to_eight_bit_first,
    _fused_bounds,
    _in_q,
    _int16_to_int16,
    _out_q,
    _same_dtype,
    clamp_range,
    qtensor,
)
from .tensor_data import infer_shape


# ------------------------------------------------------------------ pools, reductions, resize
def _average_pool(ctx):
    """AVERAGE_POOL_2D as TFLite's integer kernel (``exact_spatial.average_pool``)."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    opt = ctx.options()
    shape = infer_shape(x)
    h, w = (shape[1], shape[2]) if ctx.layout == "NHWC" else (shape[2], shape[3])
    kh, kw, sh, sw = opt.FilterHeight(), opt.FilterWidth(), opt.StrideH(), opt.StrideW()
    pads = _conv_pads(opt.Padding(), h, w, kh, kw, sh, sw, 1, 1)
    qlo, qhi = clamp_range(qo, *_fused_bounds(ctx))
    if None in pads:  # SAME with a stride over a run-time size: padded when it runs, the
        # average over the in-bounds taps (window sums of x over those of ones), then rounded
        taps = kh * kw
        ft = exact_spatial.pool_float(taps, qx.dtype)
        axes, win = (1, 2) if ctx.layout == "NHWC" else (2, 3), ((kh, sh), (kw, sw))
        zero = _expr.const(np.array(0, ft), ft)
        xp, static = pad_at_run_time(_op.cast(x, ft), pads, axes, win, zero)
        ones, _ = pad_at_run_time(_op.ones_like(_op.cast(x, ft)), pads, axes, win, zero)
        kw_ = dict(layout=ctx.layout, count_include_pad=True)
        q = _op.divide(_nn.avg_pool2d(xp, (kh, kw), (sh, sw), (1, 1), static, **kw_),
                       _nn.avg_pool2d(ones, (kh, kw), (sh, sw), (1, 1), static, **kw_))
        return exact_spatial.round_average(q, taps, qx.dtype, qlo, qhi)
    return exact_spatial.average_pool(x, qx.dtype, ctx.layout, (kh, kw), (sh, sw), pads, qlo,
                                      qhi)


def _reduction(ctx):
    """MEAN / SUM as TFLite's kernels (``exact_spatial``). The path LiteRT takes depends on
    the model's own (NHWC) shape and axes, read from the flatbuffer: ``ctx.inputs`` may be the
    NCHW form (``layout.convert_in_nchw``)."""
    x, qx, qo = ctx.inputs[0], _in_q(ctx, 0), _out_q(ctx)
    nd = len(infer_shape(x))
    axes = sorted({int(a) % nd for a in ctx.value(1, "the reduction axes").reshape(-1)})
    opt = ctx.options()
    keep = bool(opt.KeepDims()) if opt is not None else False
    qi, qout = (qx.s, qx.z), (qo.s, qo.z)
    if ctx.name == "SUM":
        return exact_spatial.reduce_sum(x, axes, keep, qx.dtype, qi, qout)
    tfl_shape = [int(d) for d in ctx.importer.subgraph.Tensors(ctx.input_ids[0]).ShapeAsNumpy()]
    tfl_axes = const_value(ctx.importer.fold(ctx.importer.tensor_expr(ctx.input_ids[1])))
    fast = exact_spatial.is_fast_mean(tfl_shape, np.asarray(tfl_axes).reshape(-1), keep)
    channel_axis = 1 if ctx.layout == "NCHW" else nd - 1
    return exact_spatial.mean(x, axes, keep, qx.dtype, qi, qout, fast, channel_axis,
                              tfl_shape[-1])


def _resize_bilinear(ctx):
    """RESIZE_BILINEAR as TFLite's kernels (``exact_spatial.resize_bilinear``)."""
    qx = _in_q(ctx, 0)
    x = ctx.inputs[0]
    opt = ctx.options()
    align = bool(opt.AlignCorners()) if opt is not None else False
    half = bool(opt.HalfPixelCenters()) if opt is not None else False
    size = ctx.importer.fold(ctx.inputs[1])
    _, h, w, c = infer_shape(x)
    if isinstance(size, _expr.Constant) and None not in (h, w):
        oh, ow = (int(v) for v in size.data.numpy().reshape(-1))
        return exact_spatial.resize_bilinear(x, qx.dtype, (oh, ow), align, half)
    # a size computed when the model runs (SHAPE of a run-time sized tensor), or a run-time
    # input H / W: the taps computed then, by the same formulas
    out = exact_spatial.resize_bilinear_at_run_time(x, qx.dtype, size, align, half)
    if isinstance(size, _expr.Constant):  # (the output's H and W static in the type)
        oh, ow = (int(v) for v in size.data.numpy().reshape(-1))
        return _op.reshape(out, [0, oh, ow, 0 if c is None else c])
    return out if c is None else _op.reshape(out, [0, 0, 0, c])


SPATIAL = {"AVERAGE_POOL_2D": _average_pool, "MEAN": _reduction, "SUM": _reduction,
           "RESIZE_BILINEAR": _resize_bilinear}


def _spatial_applies(ctx) -> bool:
    """8-bit per-tensor input and output of one dtype (AVERAGE_POOL_2D: or int16), a clamp (or
    no) fused activation, and for the reductions constant axes."""
    if _fused_bounds(ctx) is None:
        return False
    if ctx.name == "AVERAGE_POOL_2D" and _int16_to_int16(ctx):
        return True
    if not (_eight_bit_to_eight_bit_first(ctx) and _same_dtype(ctx)):
        return False
    if ctx.name in ("MEAN", "SUM"):
        return const_value(ctx.importer.fold(ctx.inputs[1])) is not None
    return True


def _l2_normalize(ctx):
    """8-bit L2_NORMALIZATION as LiteRT's integer kernels (``exact_l2norm``)."""
    q = _in_q(ctx, 0)
    return exact_l2norm.l2_normalize(ctx.inputs[0], q.z, q.dtype)


def _l2_normalize_applies(ctx) -> bool:
    """8-bit in and out of one dtype, the output quantized as TFLite requires (1/128, zero
    point 128 for uint8, 0 for int8), no fused activation."""
    if not (_eight_bit_to_eight_bit_first(ctx) and _same_dtype(ctx) and
            _fused_bounds(ctx) == (None, None)):
        return False
    qo = qtensor(ctx, int(ctx.op.Outputs(0)))
    return qo.s == np.float32(1 / 128) and qo.z == (128 if qo.dtype == "uint8" else 0)
