"""Float converters of the network layers: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
TRANSPOSE_CONV, the pools, SOFTMAX, BATCH_MATMUL and the normalizations (TFLite's SAME / VALID
padding as Relay pads)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from ..common import infer_dtype
from .op_context import _activation, _ints, merge_leading, register, split_leading
from .tensor_data import infer_shape


def _same_pads(in_size, k, stride, dilation):
    """TF's SAME pads (before, after) of one axis; a run-time size (None): stride 1 pads
    ``eff - 1`` whatever the size; a larger stride's pads depend on the size, (None, None)
    (``pad_at_run_time`` computes them)."""
    eff = (k - 1) * dilation + 1
    if in_size is None:
        if stride != 1:
            return None, None
        return (eff - 1) // 2, eff - 1 - (eff - 1) // 2
    out = -(-in_size // stride)
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


def _conv_pads(padding, h, w, kh, kw, sh, sw, dh, dw):
    """(top, left, bottom, right); None on an axis whose SAME pads depend on its run-time size."""
    if padding == 1:  # VALID
        return (0, 0, 0, 0)
    t, b = _same_pads(h, kh, sh, dh)
    left, r = _same_pads(w, kw, sw, dw)
    return (t, left, b, r)


def pad_at_run_time(x, pads, axes, windows, value):
    """Pad ``x`` (4-D) on the spatial ``axes`` (h, w) whose ``pads`` are None by TF's SAME rule
    computed from the run-time size (``windows``: per axis (effective kernel, stride)): the
    pad total is ``eff - ((size - 1) % stride + 1)`` (at least 0), the smaller half before;
    returns ``(x padded, pads with those axes 0)``. Static axes keep their pads."""
    if None not in pads:
        return x, pads
    from ...op import dyn as _dyn

    if not isinstance(value, _expr.Expr):
        value = _expr.const(np.array(value, "float32"))

    def i64(v):
        return _expr.const(np.array(v, "int64"), "int64")

    shape = _op.shape_of(x, "int64")
    rows = [[i64(0), i64(0)] for _ in range(4)]
    out = list(pads)
    padded = set()
    for k, axis in enumerate(axes):
        if pads[k] is None:
            padded.add(axis)
            eff, stride = windows[k]
            size = _op.take(shape, i64(axis), axis=0)
            rem = _op.add(_op.floor_mod(_op.subtract(size, i64(1)), i64(stride)), i64(1))
            total = _op.maximum(_op.subtract(i64(eff), rem), i64(0))
            before = _op.floor_divide(total, i64(2))
            rows[axis] = [before, _op.subtract(total, before)]
            out[k], out[k + 2] = 0, 0
    widths = _op.reshape(_op.stack([e for row in rows for e in row], 0), (4, 2))
    # dyn.nn.pad types every dim as a run-time size: the ones it leaves alone stay static
    xs = infer_shape(x)
    keep = [0 if d is None or a in padded else d
            for a, d in enumerate(xs)]
    return _op.reshape(_dyn.nn.pad(x, widths, value), keep), tuple(out)


def _spatial_axes(layout: str) -> tuple[int, int]:
    return (1, 2) if layout == "NHWC" else (2, 3)


def _windows(opt, kh: int, kw: int) -> tuple:
    """(effective kernel, stride) of h and w of a conv's options."""
    return (((kh - 1) * opt.DilationHFactor() + 1, opt.StrideH()),
            ((kw - 1) * opt.DilationWFactor() + 1, opt.StrideW()))


def _float_conv(ctx, channels: int, groups: int, kernel_layout: str):
    """A float CONV_2D / DEPTHWISE_CONV_2D of NHWC data: TFLite's padding (at run time where a
    size is), the (·, kh, kw, ·) filter moved to (kh, kw, ·, ·) (``kernel_layout``), the
    optional bias, the fused activation."""
    x, w = ctx.inputs[0], ctx.inputs[1]
    b = ctx.inputs[2] if len(ctx.inputs) > 2 else None
    opt = ctx.options()
    _, h, wd, _ = infer_shape(x)
    _, kh, kw, _ = infer_shape(w)
    pads = _conv_pads(opt.Padding(), h, wd, kh, kw, opt.StrideH(), opt.StrideW(),
                      opt.DilationHFactor(), opt.DilationWFactor())
    x, pads = pad_at_run_time(x, pads, (1, 2), _windows(opt, kh, kw), 0.0)
    out = _nn.conv2d(x, _op.transpose(w, (1, 2, 3, 0)), strides=(opt.StrideH(), opt.StrideW()),
                     padding=pads, dilation=(opt.DilationHFactor(), opt.DilationWFactor()),
                     channels=channels, groups=groups, kernel_size=(kh, kw),
                     data_layout="NHWC", kernel_layout=kernel_layout)
    if b is not None:
        out = _nn.bias_add(out, b, axis=3)
    return _activation(ctx, out, opt.FusedActivationFunction())


@register("CONV_2D")
def _conv2d(ctx):
    c = infer_shape(ctx.inputs[0])[3]
    o, _, _, ci = infer_shape(ctx.inputs[1])
    if c % ci or o % (c // ci):
        raise ctx.fail(f"input channels {c} do not match the filter's {ci} (per group)")
    return _float_conv(ctx, o, c // ci, "HWIO")  # (O, kh, kw, I) -> (kh, kw, I, O)


@register("DEPTHWISE_CONV_2D")
def _depthwise(ctx):
    c = infer_shape(ctx.inputs[0])[3]
    cm = infer_shape(ctx.inputs[1])[3]
    return _float_conv(ctx, cm, c, "HWOI")  # (1, kh, kw, C*M) -> (kh, kw, C*M, 1)


@register("FULLY_CONNECTED")
def _fully_connected(ctx):
    x, w = ctx.inputs[0], ctx.inputs[1]
    b = ctx.inputs[2] if len(ctx.inputs) > 2 else None
    opt = ctx.options()
    xs = infer_shape(x)
    units, k = infer_shape(w)
    flat = x if len(xs) == 2 else _op.reshape(x, (-1, k))
    out = _nn.dense(flat, w, units=units)
    if b is not None:
        out = _nn.bias_add(out, b, axis=-1)
    if opt is not None and opt.KeepNumDims() and len(xs) != 2:
        out = split_leading(ctx, out, xs[:-1], like=x)
    return _activation(ctx, out, opt.FusedActivationFunction() if opt is not None else 0)


def pool_window(ctx, kind: str):
    """The pooling of ``ctx.inputs[0]`` over the operator's windows, its fused activation not
    applied."""
    x = ctx.inputs[0]
    opt = ctx.options()
    shape = infer_shape(x)
    h, w = (shape[1], shape[2]) if ctx.layout == "NHWC" else (shape[2], shape[3])
    kh, kw = opt.FilterHeight(), opt.FilterWidth()
    sh, sw = opt.StrideH(), opt.StrideW()
    pads = _conv_pads(opt.Padding(), h, w, kh, kw, sh, sw, 1, 1)
    if None in pads:  # SAME with a stride over a run-time size: padded when it runs
        axes, win = _spatial_axes(ctx.layout), ((kh, sh), (kw, sw))
        if kind == "max":
            dt = infer_dtype(x)  # (quantized max pools come here too)
            low = np.finfo(dt).min if dt.startswith("float") else np.iinfo(dt).min
            x, pads = pad_at_run_time(x, pads, axes, win, _expr.const(np.array(low, dt)))
            return _nn.max_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout)
        # the mean over the window's values only: the window sums of x and of ones, both
        # zero-padded alike
        xp, pads = pad_at_run_time(x, pads, axes, win, 0.0)
        ones, _ = pad_at_run_time(_op.ones_like(x), _conv_pads(
            opt.Padding(), h, w, kh, kw, sh, sw, 1, 1), axes, win, 0.0)
        return _op.divide(
            _nn.avg_pool2d(xp, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout),
            _nn.avg_pool2d(ones, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout))
    if kind == "max":
        return _nn.max_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout)
    return _nn.avg_pool2d(x, (kh, kw), (sh, sw), (1, 1), pads, layout=ctx.layout,
                          count_include_pad=False)


def _pool(kind):
    def convert(ctx):
        out = pool_window(ctx, kind)
        return _activation(ctx, out, ctx.options().FusedActivationFunction())

    return convert


register("MAX_POOL_2D")(_pool("max"))
register("AVERAGE_POOL_2D")(_pool("avg"))


@register("SOFTMAX")
def _softmax(ctx):
    x = ctx.inputs[0]
    beta = float(ctx.options().Beta())
    if beta != 1.0:
        x = _op.multiply(x, _expr.const(np.array(beta, "float32")))
    return _nn.softmax(x, axis=-1)


@register("LOG_SOFTMAX")
def _log_softmax(ctx):
    return _nn.log_softmax(ctx.inputs[0], axis=-1)


@register("BATCH_MATMUL")
def _batch_matmul(ctx):
    a, b = ctx.inputs[0], ctx.inputs[1]
    opt = ctx.options()
    sa, sb = infer_shape(a), infer_shape(b)
    if opt is not None and opt.AdjX():
        a = _op.transpose(a, list(range(len(sa) - 2)) + [len(sa) - 1, len(sa) - 2])
        sa = sa[:-2] + (sa[-1], sa[-2])
    tb = bool(opt is not None and opt.AdjY())
    lead_a, lead_b = sa[:-2], sb[:-2]
    if None in lead_a or None in lead_b:  # run-time batch dims: both operands carry them
        if len(sa) != len(sb) or any(p != q for p, q in zip(lead_a, lead_b)):
            raise ctx.fail(f"the batch dims of {sa} x {sb} broadcast over a run-time size")
        batch = lead_a
    else:
        batch = tuple(int(d) for d in np.broadcast_shapes(lead_a, lead_b))
    if lead_a != batch:  # batch dims broadcast (e.g. a rank-2 constant right operand)
        a = _op.broadcast_to(a, batch + sa[-2:])
    if lead_b != batch:
        b = _op.broadcast_to(b, batch + sb[-2:])
    # the matrix dims (a sequence length, say) may be run-time sizes: merged and split back
    # by Relay's special reshape values, not by sizes
    out = _nn.batch_matmul(merge_leading(a, len(batch)), merge_leading(b, len(batch)),
                           transpose_b=tb)
    return split_leading(ctx, out, batch, like=a)


@register("TRANSPOSE_CONV")
def _transpose_conv(ctx):
    # inputs: output_shape, weights (O, kh, kw, I), input (NHWC), optional bias
    out = transpose_conv_window(ctx)
    b = ctx.inputs[3] if len(ctx.inputs) > 3 else None
    if b is not None:
        out = _nn.bias_add(out, b, axis=3)
    opt = ctx.options()
    act = opt.FusedActivationFunction() if hasattr(opt, "FusedActivationFunction") else 0
    return _activation(ctx, out, act)


def transpose_conv_window(ctx):
    """TRANSPOSE_CONV of ``ctx.inputs[2]`` (NHWC) by the weights ``ctx.inputs[1]`` (O, kh, kw,
    I) to the output shape of input 0, in NHWC: no bias, no fused activation."""
    w, x = ctx.inputs[1], ctx.inputs[2]
    opt = ctx.options()
    _, h, wd, _ = infer_shape(x)
    o, kh, kw, _ = infer_shape(w)
    strides = (opt.StrideH(), opt.StrideW())
    shape_in = ctx.importer.fold(ctx.inputs[0])
    if not isinstance(shape_in, _expr.Constant) or None in (h, wd):
        return _transpose_conv_at_run_time(ctx, x, w, shape_in, (kh, kw), strides, o)
    out_shape = _ints(ctx, 0, "the output shape")
    pads, out_pad = [], []
    for n_in, k, s, n_out in ((h, kh, strides[0], out_shape[1]), (wd, kw, strides[1],
                                                                     out_shape[2])):
        total = (n_in - 1) * s + k - n_out
        if total >= 0:
            pads.append((total // 2, total - total // 2))
            out_pad.append(0)
        elif -total < s:
            pads.append((0, 0))
            out_pad.append(-total)
        else:
            raise ctx.fail(f"output shape {out_shape} is not reachable from input {h}x{wd} "
                           f"with stride {strides} and kernel {kh}x{kw}")
    w_iohw = _op.transpose(w, (3, 0, 1, 2))
    xt = _op.transpose(x, (0, 3, 1, 2))
    out = _nn.conv2d_transpose(xt, w_iohw, strides=strides,
                               padding=(pads[0][0], pads[1][0], pads[0][1], pads[1][1]),
                               channels=o, kernel_size=(kh, kw), data_layout="NCHW",
                               kernel_layout="IOHW", output_padding=tuple(out_pad))
    return _op.transpose(out, (0, 2, 3, 1))


def _transpose_conv_at_run_time(ctx, x, w, out_shape, kernel, strides, o):
    """TRANSPOSE_CONV whose output shape is computed when the model runs, or over a run-time
    input H / W: the whole transposed conv (no padding; ``stride - 1`` zeros more at the end,
    where LiteRT writes no tap; as a conv of the zero-stuffed input, which lowers natively at
    any size) cropped to the output H / W from LiteRT's pad, computed then
    from the output size as its ComputePaddingHeightWidth does (SAME: half of
    ``max((ceil(out / stride) - 1) * stride + k - out, 0)``, the smaller half first; VALID:
    0)."""
    from ...op import dyn as _dyn

    def i64(v):
        return _expr.const(np.array(v, "int64"), "int64")

    same = ctx.options().Padding() == 0
    # each input pixel followed by stride - 1 zeros (static pads of two new unit axes, merged
    # back by reshape's -3 whatever the run-time H / W), padded by k - 1, correlated with the
    # flipped kernel: a plain NHWC conv of static pads, (H - 1) * s + k + s - 1 rows
    (sh, sw), (kh, kw) = strides, kernel
    xd = _op.expand_dims(_op.expand_dims(x, 3), 2)  # (N, H, 1, W, 1, C)
    xd = _nn.pad(xd, [(0, 0), (0, 0), (0, sh - 1), (0, 0), (0, sw - 1), (0, 0)])
    xd = _op.reshape(xd, [0, -3, -3, 0])
    w_hwio = _op.transpose(_op.reverse(_op.reverse(w, 1), 2), (1, 2, 3, 0))
    full = _nn.conv2d(xd, w_hwio, padding=(kh - 1, kw - 1, kh - 1, kw - 1), channels=o,
                      kernel_size=kernel, data_layout="NHWC", kernel_layout="HWIO")
    size = _op.cast(out_shape, "int64")
    begin, end = [i64(0)], [_op.take(_op.shape_of(full, "int64"), i64(0), axis=0)]
    for axis, k, s in ((1, kernel[0], strides[0]), (2, kernel[1], strides[1])):
        n_out = _op.take(size, i64(axis), axis=0)
        top = i64(0)
        if same:
            steps = _op.floor_divide(_op.add(n_out, i64(s - 1)), i64(s))
            total = _op.maximum(_op.subtract(_op.add(_op.multiply(
                _op.subtract(steps, i64(1)), i64(s)), i64(k)), n_out), i64(0))
            top = _op.floor_divide(total, i64(2))
        begin.append(top)
        end.append(_op.add(top, n_out))
    begin.append(i64(0))
    end.append(i64(o))
    out = _dyn.strided_slice(full, _op.stack(begin, 0), _op.stack(end, 0),
                             _expr.const(np.ones(4, "int64"), "int64"))
    batch = infer_shape(x)[0]
    if isinstance(out_shape, _expr.Constant):  # (the output's sizes static in the type)
        dims = [int(v) for v in out_shape.data.numpy().reshape(-1)]
        return _op.reshape(out, [0 if batch is None else dims[0], dims[1], dims[2], o])
    return _op.reshape(out, [0 if batch is None else batch, 0, 0, o])


@register("L2_NORMALIZATION")
def _l2_norm(ctx):
    x = ctx.inputs[0]
    out = _nn.l2_normalize(x, 1e-12, axis=[len(infer_shape(x)) - 1])
    opt = ctx.options()
    return _activation(ctx, out, opt.FusedActivationFunction() if opt is not None else 0)


@register("LOCAL_RESPONSE_NORMALIZATION")
def _lrn(ctx):
    x = ctx.inputs[0]
    opt = ctx.options()
    size = 2 * int(opt.Radius()) + 1
    # TFLite's alpha multiplies the plain window sum; Relay's lrn divides alpha by size.
    return _nn.lrn(x, size=size, axis=len(infer_shape(x)) - 1, bias=float(opt.Bias()),
                   alpha=float(opt.Alpha()) * size, beta=float(opt.Beta()))
