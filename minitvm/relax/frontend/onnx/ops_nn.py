"""Neural-network ONNX ops: Conv, ConvTranspose, Gemm, MatMul, normalizations, pooling, Pad."""

from __future__ import annotations

import math

import numpy as np

from .... import tir
from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_model import check_dropout_is_identity, dropout_training_mask
from ....frontend_common.onnx_quant import conv_output_scale, keeps_int8_weight
from ....ir.prim_expr import PrimExpr
from ... import op as _op
from ...expr import TupleGetItem, const
from ..common import crop_negative_pads
from ..pool_indices import maxpool_indices
from .context import Context, register
from .pad_gather import needs_gather, pad_by_gather
from .qdq_scale_fold import unscaled_input, weight_value
from .qdq_vnni import qdq_conv, qdq_depthwise, qdq_matmul


def _spatial_pads(ctx: Context, attrs, in_dims, kernel, strides, dilations) -> list[int]:
    """ONNX ``pads`` (all begins, then all ends) resolving ``auto_pad`` on static dims."""
    n = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", "VALID"):
        pads = list(attrs.get("pads", [0] * (2 * n)))
        return [0] * (2 * n) if auto == "VALID" else [int(p) for p in pads]
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(f"auto_pad={auto!r} is not supported")
    begins, ends = [], []
    for d, k, s, dl in zip(in_dims, kernel, strides, dilations, strict=True):
        if not isinstance(d, int):
            raise ctx.fail("auto_pad SAME needs static spatial dims")
        out = math.ceil(d / s)
        total = max(0, (out - 1) * s + (k - 1) * dl + 1 - d)
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    return begins + ends


def _add_channel_bias(ctx: Context, y, bias, ndim: int):
    b = ctx.expr(bias)
    b = _op.reshape(b, ctx.shape_expr([1, -1] + [1] * (ndim - 2)))
    return ctx.emit(_op.add(y, b))


def _row_weight(ctx: Context, v):
    """A 1-D conv's ``[O, I, K]`` weight as the ``[O, I, 1, K]`` of a one-row conv2d."""
    k = ctx.known(v)
    if k is not None and k.dtype != object:
        return ctx.expr(np.ascontiguousarray(k[:, :, None, :]))  # (its own dtype)
    return _op.expand_dims(ctx.expr(v), 2)


@register("Conv")
def _conv(ctx: Context, ins, attrs):
    x, w = ctx.expr(ins[0]), ctx.expr(ins[1])
    ndim = ctx.ndim(x)
    wshape = ctx.shape(w)
    kernel = [int(k) for k in attrs.get("kernel_shape", wshape[2:])]
    n = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    pads = _spatial_pads(ctx, attrs, ctx.shape(x)[2:], kernel, strides, dilations)
    groups = int(attrs.get("group", 1))
    if n == 1:
        # a conv2d over one row (as Relay's legalization does): conv2d has the native GEMM
        # schedules, a conv1d lowers to a plain loop nest (Whisper's 128-channel stride-2
        # conv over 200 frames took 25 ms so, against ORT's 0.1 ms)
        row = [1, strides[0]], [0, pads[0], 0, pads[1]], [1, dilations[0]]
        y = qdq_conv(ctx, *row, groups)  # (a QDQ model's 8-bit input and weight, on VNNI)
        if y is None:
            y = _op.nn.conv2d(_op.expand_dims(x, 2), _row_weight(ctx, ins[1]), *row, groups)
            y = _op.squeeze(ctx.emit(y), [2])
    elif n == 2:
        found = ctx.int8_weights.get(ctx.node.input[1])  # (a QDQ model's weight)
        vnni = qdq_conv(ctx, strides, pads, dilations, groups)
        if vnni is None:  # (a depthwise conv of its 8-bit input)
            vnni = qdq_depthwise(ctx, strides, pads, dilations, groups)
        if vnni is not None:  # (and its 8-bit input, read as it is)
            y = vnni
        elif found is not None and keeps_int8_weight("int8", found[0], None, groups, kernel):
            unscaled = unscaled_input(ctx)
            scale = found[1]
            if unscaled is not None:  # (the input's scale joins the weight's)
                x, scale = unscaled[0], (np.asarray(scale) * unscaled[1]).astype("float32")
            y = _op.nn.conv2d(x, const(found[0]), strides, pads, dilations, groups,
                              out_dtype="float32")
            y = _op.multiply(ctx.emit(y), const(conv_output_scale(scale, wshape[0])))
        else:
            wv = weight_value(ctx, ins[1], found)
            unscaled = unscaled_input(ctx) if wv is not None else None
            if unscaled is not None:  # (the input's scale goes into the constant weight)
                x, w = unscaled[0], const((wv * unscaled[1]).astype("float32"))
            y = _op.nn.conv2d(x, w, strides, pads, dilations, groups)
    elif n == 3:
        y = _op.nn.conv3d(x, w, strides, pads, dilations, groups)
    else:
        raise ctx.fail(f"{n}-D convolution is not supported")
    y = ctx.emit(y)
    if len(ins) > 2 and ins[2] is not None:
        y = _add_channel_bias(ctx, y, ins[2], ndim)
    return y


@register("ConvTranspose")
def _conv_transpose(ctx: Context, ins, attrs):
    x, w = ctx.expr(ins[0]), ctx.expr(ins[1])
    wshape = ctx.shape(w)
    kernel = [int(k) for k in attrs.get("kernel_shape", wshape[2:])]
    n = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * n))]
    out_pad = [int(p) for p in attrs.get("output_padding", [0] * n)]
    auto = attrs.get("auto_pad", "NOTSET")
    if "output_shape" in attrs or auto in ("SAME_UPPER", "SAME_LOWER"):
        # pads that give the requested output size (auto_pad SAME: input size * stride)
        spatial = ctx.shape(x)[2:]
        if not all(isinstance(d, int) for d in spatial):
            raise ctx.fail("output_shape / auto_pad SAME need static spatial dims")
        want = [int(d) for d in attrs["output_shape"]][-n:] if "output_shape" in attrs \
            else [spatial[i] * strides[i] for i in range(n)]
        begin, end = [], []
        for i in range(n):
            full = strides[i] * (spatial[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            extra = full - want[i]
            if extra < 0:  # a larger output than the kernel covers: extend by output padding
                out_pad[i] -= extra
                extra = 0
            small, big = extra // 2, extra - extra // 2
            lo, hi = (big, small) if auto == "SAME_LOWER" else (small, big)
            begin.append(lo)
            end.append(hi)
        pads = begin + end
    groups = int(attrs.get("group", 1))
    spatial = ctx.shape(x)[2:]
    if groups == 1 and all(isinstance(d, int) and d == 1 for d in spatial) and \
            not any(pads) and not any(out_pad) and all(d == 1 for d in dilations) and \
            all(isinstance(d, int) for d in wshape):
        # a 1x1 input (a GAN generator's first layer, from the latent): one GEMM,
        # out[n, (o, taps)] = x[n, :] @ w[:, (o, taps)], not a conv over a zero-padded input
        k = ctx.known(ins[1])
        cols = ctx.expr(np.ascontiguousarray(k.reshape(wshape[0], -1))) \
            if k is not None and k.dtype != object else \
            _op.reshape(w, ctx.shape_expr([wshape[0], -1]))
        batch = ctx.shape(x)[0]
        flat = ctx.emit(_op.reshape(x, ctx.shape_expr([batch, wshape[0]])))
        y = ctx.emit(_op.matmul(flat, cols))
        y = _op.reshape(y, ctx.shape_expr([batch, wshape[1], *wshape[2:]]))
    elif n == 1:
        y = _op.nn.conv1d_transpose(x, w, strides, pads, out_pad, dilations, groups)
    elif n == 2:
        y = _op.nn.conv2d_transpose(x, w, strides, pads, out_pad, dilations, groups)
    elif n == 3:
        y = _op.nn.conv3d_transpose(x, w, strides, pads, out_pad, dilations, groups)
    else:
        raise ctx.fail(f"{n}-D transposed convolution is not supported (1-D, 2-D and 3-D "
                       "are)")
    y = ctx.emit(y)
    if len(ins) > 2 and ins[2] is not None:
        y = _add_channel_bias(ctx, y, ins[2], n + 2)
    return y


def _transposed(ctx: Context, v):
    """The transpose of a 2-D value (folded when it is a constant)."""
    k = ctx.known(v)
    if k is not None and k.dtype != object:
        return const(np.ascontiguousarray(k.T), str(k.dtype))
    return _op.permute_dims(ctx.expr(v), [1, 0])


@register("Gemm")
def _gemm(ctx: Context, ins, attrs):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    a = _transposed(ctx, ins[0]) if attrs.get("transA", 0) else ctx.expr(ins[0])
    b = _transposed(ctx, ins[1]) if attrs.get("transB", 0) else ctx.expr(ins[1])
    dtype = ctx.dtype(ins[0])
    vnni = None if attrs.get("transA", 0) else qdq_matmul(ctx, bool(attrs.get("transB", 0)))
    y = _op.matmul(a, b) if vnni is None else vnni  # (VNNI: a QDQ model's 8-bit operands)
    if alpha != 1.0:
        y = _op.multiply(y, const(np.array(alpha, dtype), dtype))
    if len(ins) > 2 and ins[2] is not None:
        c = ctx.expr(ins[2])
        if beta != 1.0:
            c = _op.multiply(c, const(np.array(beta, dtype), dtype))
        y = _op.add(ctx.emit(y), c)
    return ctx.emit(y)


@register("MatMul")
def _matmul(ctx: Context, ins, attrs):
    vnni = qdq_matmul(ctx, False)  # (a QDQ model's 8-bit input and weight, on VNNI)
    return ctx.emit(vnni if vnni is not None else _op.matmul(ctx.expr(ins[0]),
                                                             ctx.expr(ins[1])))


@register("BatchNormalization")
def _batch_norm(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    gamma, beta, mean, var = (ctx.expr(v) for v in ins[1:5])
    eps = float(attrs.get("epsilon", 1e-5))
    if attrs.get("training_mode", 0):
        return _batch_norm_training(ctx, x, gamma, beta, mean, var, eps,
                                    float(attrs.get("momentum", 0.9)))
    bn = ctx.emit(_op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=eps))
    return ctx.emit(TupleGetItem(bn, 0))


def _batch_norm_training(ctx: Context, x, gamma, beta, mean, var, eps, momentum):
    """training_mode=1 (opset 14+): normalize with the batch's statistics (population
    variance) and return the running mean and variance updated with ``momentum``."""
    nd, dt = ctx.ndim(x), ctx.dtype(x)
    axes = [0] + list(range(2, nd))
    bshape = ctx.shape_expr([1, -1] + [1] * (nd - 2))
    cur_mean = ctx.emit(_op.mean(x, axes))
    cur_var = ctx.emit(_op.variance(x, axes))
    inv = ctx.emit(_op.rsqrt(ctx.emit(_op.add(cur_var, const(np.array(eps, dt), dt)))))
    centered = ctx.emit(_op.subtract(x, ctx.emit(_op.reshape(cur_mean, bshape))))
    factor = ctx.emit(_op.reshape(ctx.emit(_op.multiply(inv, gamma)), bshape))
    y = ctx.emit(_op.add(ctx.emit(_op.multiply(centered, factor)),
                         ctx.emit(_op.reshape(beta, bshape))))
    keep, new = const(np.array(momentum, dt), dt), const(np.array(1.0 - momentum, dt), dt)

    def update(old, cur):
        return ctx.emit(_op.add(ctx.emit(_op.multiply(old, keep)),
                                ctx.emit(_op.multiply(cur, new))))

    return [y, update(mean, cur_mean), update(var, cur_var)]


@register("LayerNormalization")
def _layer_norm(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    ndim = ctx.ndim(x)
    axis = _om.axis_attr(attrs.get("axis", -1), ndim)
    axes = list(range(axis, ndim))
    gamma = ctx.expr(ins[1])
    if len(ins) > 2 and ins[2] is not None:
        beta = ctx.expr(ins[2])
    else:
        beta = const(np.zeros([int(d) for d in ctx.shape(gamma)], ctx.dtype(x)))
    eps = float(attrs.get("epsilon", 1e-5))
    if ctx.num_outputs() == 1:
        return ctx.emit(_op.nn.layer_norm(x, gamma, beta, axes, eps))
    # the optional Mean and InvStdDev outputs (kept dims): spell the normalization out
    mean = ctx.emit(_op.mean(x, axes, True))
    cent = ctx.emit(_op.subtract(x, mean))
    var = _op.mean(_op.multiply(cent, cent), axes, True)
    inv = ctx.emit(_op.divide(const(np.array(1.0, ctx.dtype(x)), ctx.dtype(x)),
                              _op.sqrt(_op.add(var, const(np.array(eps, ctx.dtype(x)), ctx.dtype(x))))))
    y = ctx.emit(_op.add(_op.multiply(_op.multiply(cent, inv), gamma), beta))
    return [y, mean, inv]


@register("RMSNormalization")
def _rms_norm(ctx: Context, ins, attrs):
    """Opset 23's RMSNormalization over the axes from ``axis`` on: Relax's ``nn.rms_norm``
    when the scale has the normalized shape, else spelled out with a broadcast scale."""
    x, scale = ctx.expr(ins[0]), ctx.expr(ins[1])
    nd = ctx.ndim(x)
    axes = list(range(int(attrs.get("axis", -1)) % nd, nd))
    eps = float(attrs.get("epsilon", 1e-5))
    shape = ctx.shape(x)
    if list(ctx.shape(scale)) == [shape[a] for a in axes]:
        return ctx.emit(_op.nn.rms_norm(x, scale, axes, eps))
    ms = _op.mean(_op.multiply(x, x), axes, True)
    inv = _op.rsqrt(_op.add(ms, const(np.array(eps, ctx.dtype(x)), ctx.dtype(x))))
    return ctx.emit(_op.multiply(_op.multiply(x, ctx.emit(inv)), scale))


@register("InstanceNormalization")
def _instance_norm(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    ndim = ctx.ndim(x)
    channels = ctx.shape(x)[1]
    return ctx.emit(_op.nn.group_norm(x, ctx.expr(ins[1]), ctx.expr(ins[2]), channels, 1,
                                      list(range(2, ndim)), float(attrs.get("epsilon", 1e-5))))


@register("LRN")
def _lrn(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    if ctx.ndim(x) < 3:
        raise ctx.fail(f"LRN needs an (N, C, D1, ...) input, got {ctx.ndim(x)} dimensions")
    if "size" not in attrs:
        raise ctx.fail("LRN needs its 'size' attribute")
    size = int(attrs["size"])
    # ONNX's window is [c - (size - 1) // 2, ...], nn.lrn's [c - size // 2, ...]: for an even
    # size, normalize the channel-reversed tensor (window mirrored) and reverse back
    mirror = size > 0 and size % 2 == 0
    if mirror:
        x = ctx.emit(_op.flip(x, axis=1))
    y = ctx.emit(_op.nn.lrn(x, size=size, axis=1, bias=float(attrs.get("bias", 1.0)),
                            alpha=float(attrs.get("alpha", 1e-4)),
                            beta=float(attrs.get("beta", 0.75))))
    return ctx.emit(_op.flip(y, axis=1)) if mirror else y


_POOLS = {
    ("MaxPool", 1): _op.nn.max_pool1d, ("MaxPool", 2): _op.nn.max_pool2d,
    ("MaxPool", 3): _op.nn.max_pool3d, ("AveragePool", 1): _op.nn.avg_pool1d,
    ("AveragePool", 2): _op.nn.avg_pool2d, ("AveragePool", 3): _op.nn.avg_pool3d,
}


def _drop_window_in_end_pad(ctx: Context, x, y, kernel, strides, dilations, pads):
    """ONNX's ceil mode drops a last window that would start inside the end padding; the
    pooling ops keep it, so slice it off (static spatial dims only)."""
    n = len(kernel)
    src, got = ctx.shape(x)[2:], ctx.shape(y)[2:]
    if not all(isinstance(d, int) for d in list(src) + list(got)):
        return y
    want = []
    for i in range(n):
        eff = (kernel[i] - 1) * dilations[i] + 1
        o = -(-(src[i] + pads[i] + pads[n + i] - eff) // strides[i]) + 1
        if (o - 1) * strides[i] >= src[i] + pads[i]:
            o -= 1
        want.append(o)
    if want == list(got):
        return y
    return ctx.emit(_op.strided_slice(y, list(range(2, n + 2)), [0] * n, want))


@register("MaxPool", "AveragePool")
def _pool(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    name = ctx.node.op_type
    kernel = [int(k) for k in attrs["kernel_shape"]]
    n = len(kernel)
    if (name, n) not in _POOLS:
        raise ctx.fail(f"{n}-D {name} is not supported")
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    pads = _spatial_pads(ctx, attrs, ctx.shape(x)[2:], kernel, strides, dilations)
    ceil = bool(attrs.get("ceil_mode", 0))
    include = bool(attrs.get("count_include_pad", 0))
    src, op_pads = x, pads
    if name == "AveragePool" and include:
        # ONNX counts the padding but not a ceil-mode window's overhang past it: pad with
        # zeros explicitly and count only in-bounds elements of the padded input
        flat = [0, 0, 0, 0]
        for i in range(n):
            flat += [int(pads[i]), int(pads[n + i])]
        if any(flat):
            x = ctx.emit(_op.nn.pad(x, flat, 0.0, "constant"))
        op_pads, include = [0] * (2 * n), False
    y = ctx.emit(_POOLS[(name, n)](x, kernel, strides, op_pads, dilations, ceil, include))
    if ceil:
        y = _drop_window_in_end_pad(ctx, src, y, kernel, strides, dilations, pads)
    if name == "MaxPool" and ctx.output_used(1):
        shape = ctx.shape(x)
        if not all(isinstance(d, int) for d in shape):
            raise ctx.fail("MaxPool's Indices output needs static input dims")
        idx = maxpool_indices(ctx.emit, shape, ctx.dtype(x), x,
                              ctx.shape(y)[2:], kernel, strides, dilations, pads[:n], pads[n:],
                              int(attrs.get("storage_order", 0)))
        return [y, idx]
    return y


@register("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axes = list(range(2, ctx.ndim(x)))
    fn = _op.mean if ctx.node.op_type == "GlobalAveragePool" else _op.max
    return ctx.emit(fn(x, axes, True))


def _pad_wrap(ctx: Context, x, pads, ndim: int):
    """Circular padding: negative pads crop first, then each padded axis is gathered with
    indices taken modulo its (cropped) length, as ONNX Runtime does."""
    shape = ctx.shape(x)
    for a in range(ndim):
        b, e = int(pads[a]), int(pads[ndim + a])
        if not (b or e):
            continue
        if not isinstance(shape[a], int):
            raise ctx.fail(f"mode 'wrap' needs a static length on padded axis {a}")
        lo, hi = max(-b, 0), shape[a] - max(-e, 0)
        n = hi - lo
        idx = lo + np.arange(-max(b, 0), n + max(e, 0), dtype="int64") % n
        x = ctx.emit(_op.take(x, const(idx), axis=a))
    return x


@register("Pad")
def _pad(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    ndim = ctx.ndim(x)
    if ctx.opset < 11:
        pads, value = list(attrs["pads"]), float(attrs.get("value", 0.0))
    else:
        pads = ctx.ints(ins[1], "Pad's pads")  # (symbolic where computed from the batch)
        value = 0.0
        if len(ins) > 2 and ins[2] is not None:
            value = float(ctx.value(ins[2], "Pad's constant_value").reshape(-1)[0])
    if len(ins) > 3 and ins[3] is not None:
        axes = _om.axes_attr(ctx.ints(ins[3], "Pad's axes"), ndim, "Pad's axis")
        full = [0] * (2 * ndim)
        for i, a in enumerate(axes):
            full[a], full[ndim + a] = pads[i], pads[len(axes) + i]
        pads = full
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise ctx.fail(f"mode {mode!r} is not supported")
    pads = [p if isinstance(p, PrimExpr) else int(p) for p in pads]
    _require_pads_fit(ctx, ctx.shape(x), pads, mode)
    if needs_gather(ctx.shape(x), pads, mode):
        return pad_by_gather(ctx, x, pads, value, mode)
    if mode == "wrap":
        return _pad_wrap(ctx, x, pads, ndim)
    flat = []
    for i in range(ndim):
        flat += [int(pads[i]), int(pads[ndim + i])]
    if mode == "constant" and any(flat) and min(flat) < 0:
        # pad, then crop: a crop reaching past the input into the padding keeps it (as ONNX
        # Runtime); the other modes crop first and pad from what is left
        grow = [max(p, 0) for p in flat]
        if any(grow):
            x = ctx.emit(_op.nn.pad(x, grow, value, mode))
        crop, _ = crop_negative_pads(x, flat)
        return ctx.emit(crop)
    crop, flat = crop_negative_pads(x, flat)  # negative pads crop first, as ONNX Runtime does
    if crop is not None:
        x = ctx.emit(crop)
        if not any(flat):
            return x
    return ctx.emit(_op.nn.pad(x, flat, value, mode))


def _require_pads_fit(ctx: Context, shape: list, pads: list, mode: str) -> None:
    """Check ``pads`` (ONNX's begins, then ends) against ``shape`` as ONNX Runtime does,
    at import or at run time for symbolic dims: no output size below 0; in the other modes no
    axis padded or cropped with nothing of it left, and for reflect no pad at or past the
    (cropped) size."""
    nd = len(shape)
    sym = [p for p in pads if isinstance(p, PrimExpr)] + \
        [d for d in shape if isinstance(d, PrimExpr)]
    given = "[" + ", ".join("{}" if isinstance(p, PrimExpr) else str(p) for p in pads) + "]"
    where = "[" + ", ".join("{}" if isinstance(d, PrimExpr) else str(d) for d in shape) + "]"
    message = f"{mode} pads {given} (begin, end per axis) do not fit the input of shape {where}"
    for a, n in enumerate(shape):
        b, e = pads[a], pads[nd + a]
        conds = [n + b + e >= 0]
        if mode != "constant" and not (isinstance(b, int) and isinstance(e, int) and
                                       not (b or e)):
            kept = n + _at_most_0(b) + _at_most_0(e)
            conds.append(kept > 0)
            if mode == "reflect":
                conds += [kept > b, kept > e]
        for c in conds:
            ctx.require(c, message, sym)


def _at_most_0(v):
    """min(v, 0) of an int or a symbolic dim expression."""
    return tir.Min(v, 0) if isinstance(v, PrimExpr) else min(v, 0)


@register("Dropout")
def _dropout(ctx: Context, ins, attrs):
    """Inference Dropout is the identity with an all-true mask; a seeded training-mode one
    applies a mask drawn at import (see dropout_training_mask)."""
    shape = ctx.shape(ins[0])
    plan = None
    if all(isinstance(d, int) for d in shape):
        plan = dropout_training_mask(ctx, ins, attrs, ctx.value, shape)
    else:
        check_dropout_is_identity(ctx, ins, attrs, ctx.value)
    if plan is not None:
        keep, scale = plan
        y = ctx.emit(_op.multiply(ctx.expr(ins[0]),
                                  const((keep * scale).astype(ctx.dtype(ins[0])), ctx.dtype(ins[0]))))
        return [y, keep]
    if not ctx.output_used(1):
        return [ins[0]]
    return [ins[0], ctx.emit(_op.ones(ctx.shape_expr(ctx.shape(ins[0])), "bool"))]
