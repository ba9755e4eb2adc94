"""ONNX neural-network operators: convolutions, matrix products, normalization, pooling,
softmax."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_model import dropout_training_mask
from ....frontend_common.onnx_qsoftmax import note_softmax
from ... import op as _op
from ...op import nn as _nn
from ..common import bmm_operand, last_two_swapped
from ..pool_indices import maxpool_indices
from .dynamic_dim import DynamicDim, has_dynamic, one_inferred
from .dynamic_reshape import merge_leading, reshape_exact, reshape_to
from .ops_tensor import first_line
from .qdq_weight import (
    depthwise_qdq_conv,
    int8_weight_and_scale,
    vnni_qdq_conv,
    vnni_qdq_matmul,
)
from .registry import register


def _spatial_pads(ctx, attrs, in_sizes, kernel, strides, dilations):
    """Begin and end padding per spatial axis, honouring ``auto_pad``."""
    n = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(n):
            out = -(-in_sizes[i] // strides[i])
            eff = (kernel[i] - 1) * dilations[i] + 1
            total = max(0, (out - 1) * strides[i] + eff - in_sizes[i])
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        return begin, end
    if auto == "VALID":
        return [0] * n, [0] * n
    pads = list(attrs.get("pads", [0] * (2 * n)))
    return pads[:n], pads[n:]


def _conv_common(ctx, x, w, attrs):
    shape = ctx.shape(x)
    wshape = ctx.shape(w)
    n = len(shape) - 2
    kernel = list(attrs.get("kernel_shape", wshape[2:]))
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    begin, end = _spatial_pads(ctx, attrs, shape[2:], kernel, strides, dilations)
    return n, kernel, strides, dilations, begin, end


def _add_bias(x, b, ndim):
    if b is None:
        return x
    return _nn.bias_add(x, b, axis=1)


@register("Conv")
def _conv(ctx, ins, attrs):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    n, kernel, strides, dil, begin, end = _conv_common(ctx, x, w, attrs)
    groups = int(attrs.get("group", 1))
    channels = ctx.shape(w)[0]
    if n == 1:
        vnni = vnni_qdq_conv(ctx, strides, dil, begin, end, groups, kernel)
        if vnni is not None:  # (a QDQ model's 8-bit input and int8 weight, on VNNI)
            return _add_bias(vnni, b, n + 2)
        out = _nn.conv1d(x, w, strides=strides, padding=(begin[0], end[0]), dilation=dil,
                         groups=groups, channels=channels, kernel_size=kernel)
    elif n == 2:
        vnni = vnni_qdq_conv(ctx, strides, dil, begin, end, groups, kernel)
        if vnni is None:  # (a QDQ model's depthwise conv of its 8-bit input)
            vnni = depthwise_qdq_conv(ctx, strides, dil, begin, end, groups, kernel)
        if vnni is not None:  # (a QDQ model's 8-bit input and int8 weight read as they are)
            return _add_bias(vnni, b, n + 2)
        narrow = int8_weight_and_scale(ctx, groups, kernel)  # (a QDQ model's weight)
        out = _nn.conv2d(x, w if narrow is None else narrow[0], strides=strides,
                         padding=(begin[0], begin[1], end[0], end[1]), dilation=dil,
                         groups=groups, channels=channels, kernel_size=kernel,
                         out_dtype="" if narrow is None else "float32")
        if narrow is not None:
            out = _op.multiply(out, narrow[1])
    elif n == 3:  # video / volumetric models (C3D, a temporal non-local block)
        out = _nn.conv3d(x, w, strides=strides, padding=tuple(begin) + tuple(end),
                         dilation=dil, groups=groups, channels=channels, kernel_size=kernel)
    else:
        raise NotImplementedError(f"{ctx.where()}: {n}-D convolution is not supported "
                                  "(1-D, 2-D and 3-D are)")
    return _add_bias(out, b, n + 2)


@register("ConvTranspose")
def _conv_transpose(ctx, ins, attrs):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    shape, wshape = ctx.shape(x), ctx.shape(w)
    n = len(shape) - 2
    if n not in (1, 2, 3):
        raise NotImplementedError(f"{ctx.where()}: {n}-D transposed convolution is not "
                                  "supported (1-D, 2-D and 3-D are)")
    groups = int(attrs.get("group", 1))
    kernel = list(attrs.get("kernel_shape", wshape[2:]))
    strides = list(attrs.get("strides", [1] * n))
    dil = list(attrs.get("dilations", [1] * n))
    out_pad = list(attrs.get("output_padding", [0] * n))
    if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        target = list(attrs["output_shape"])[-n:] if "output_shape" in attrs else [
            shape[2 + i] * strides[i] for i in range(n)]
        begin, end = [], []
        for i in range(n):
            total = strides[i] * (shape[2 + i] - 1) + out_pad[i] + \
                ((kernel[i] - 1) * dil[i] + 1) - target[i]
            if total < 0:  # the requested output is larger: grow it with output padding
                out_pad[i] -= total
                total = 0
            lo, hi = total // 2, total - total // 2
            if attrs.get("auto_pad", "SAME_UPPER") == "SAME_LOWER":
                lo, hi = hi, lo
            begin.append(lo)
            end.append(hi)
    else:
        begin, end = _spatial_pads(ctx, attrs, shape[2:], kernel, strides, dil)
    channels = wshape[1] * groups
    if n == 3:
        out = _nn.conv3d_transpose(x, w, strides=strides, padding=tuple(begin) + tuple(end),
                                   dilation=dil, groups=groups, channels=channels,
                                   kernel_size=kernel, output_padding=out_pad)
        return _add_bias(out, b, n + 2)
    if n == 1:
        x = _op.expand_dims(x, 2)
        w = _op.expand_dims(w, 2)
        kernel, strides, dil, out_pad = [1] + kernel, [1] + strides, [1] + dil, [0] + out_pad
        begin, end = [0] + begin, [0] + end
    out = _nn.conv2d_transpose(x, w, strides=strides, padding=(begin[0], begin[1], end[0],
                                                                end[1]),
                               dilation=dil, groups=groups, channels=channels,
                               kernel_size=kernel, output_padding=out_pad)
    if n == 1:
        out = _op.squeeze(out, axis=[2])
    return _add_bias(out, b, n + 2)


# ------------------------------------------------------------------ matrix products
def _same_batch(da, db) -> bool:
    """Whether two batch shapes are known to be equal once batch_matmul has checked that their
    products are: the same sizes, or one dynamic axis at the same place beside equal static
    ones (equal products then make it equal too)."""
    if da == db:
        return True
    dynamic = [i for i, (x, y) in enumerate(zip(da, db, strict=True))
               if isinstance(x, DynamicDim) or isinstance(y, DynamicDim)]
    return len(dynamic) == 1 and all(
        isinstance(da[i], DynamicDim) and isinstance(db[i], DynamicDim) for i in dynamic) and \
        all(da[i] == db[i] for i in range(len(da)) if i not in dynamic)


def _broadcast_batches(ctx, a, b):
    """``a`` and ``b`` (rank 3 or more) broadcast to the same batch axes where each axis of
    size 1 meets one size: a static one repeats, a run-time one grows by a take along the other
    operand's axis (keeping its ``relay.Any()``); unchanged where two sizes differ otherwise."""
    sa, sb = ctx.shape(a), ctx.shape(b)
    nd = max(len(sa), len(sb))
    if len(sa) < nd:
        a, sa = _op.expand_dims(a, 0, nd - len(sa)), (1,) * (nd - len(sa)) + sa
    if len(sb) < nd:
        b, sb = _op.expand_dims(b, 0, nd - len(sb)), (1,) * (nd - len(sb)) + sb

    def grow(t, axis, size, src):  # t's axis of size 1 to ``size``, read from src's axis
        if isinstance(size, DynamicDim):
            line = first_line(src, axis, nd)
            return _op.take(t, _op.cast(_op.zeros_like(line), "int64"), axis=axis)
        return _op.repeat(t, int(size), axis)

    def is_one(d):
        return not isinstance(d, DynamicDim) and d == 1

    for axis in range(nd - 2):
        x, y = sa[axis], sb[axis]
        if isinstance(x, DynamicDim) == isinstance(y, DynamicDim) and x == y:
            continue
        if is_one(y):
            b = grow(b, axis, x, a)
        elif is_one(x):
            a = grow(a, axis, y, b)
    return a, b


def matmul(ctx, a, b):
    """numpy.matmul semantics on Relay's dense / batch_matmul."""
    sa, sb = ctx.shape(a), ctx.shape(b)
    squeeze = []
    if len(sa) == 1:
        a, sa = _op.expand_dims(a, 0), (1,) + sa
        squeeze.append(-2)
    if len(sb) == 1:
        b, sb = _op.expand_dims(b, 1), sb + (1,)
        squeeze.append(-1)
    m, k, n = sa[-2], sa[-1], sb[-1]
    if len(sb) == 2:
        flat = a if len(sa) == 2 else _op.reshape(a, (-1, k))
        out = _nn.dense(flat, _op.transpose(b, (1, 0)))
        out_shape = sa[:-1] + (n,)
        if len(sa) != 2:
            out = reshape_to(ctx.shape, out, ctx.shape(out), out_shape)
    elif has_dynamic(sa[:-2]) or has_dynamic(sb[:-2]):
        # a run-time batch (attention's batch x heads): the same batch axes on both sides (their
        # sizes checked by batch_matmul when it runs), merged into one and split back like ``a``
        if len(sa) != len(sb) or not _same_batch(sa[:-2], sb[:-2]):
            a, b = _broadcast_batches(ctx, a, b)
            sa, sb = ctx.shape(a), ctx.shape(b)
        if len(sa) != len(sb) or not _same_batch(sa[:-2], sb[:-2]):
            raise ctx.fail(f"MatMul of {sa} by {sb}: a dynamic batch needs the same batch "
                           "axes on both operands (the same sizes, not just both dynamic)")
        bt = last_two_swapped(b)
        b = b if bt is None else bt
        out_shape = sa[:-1] + (n,)
        if one_inferred(sa[:-2]) is not None and not has_dynamic((m, k, n)):
            # (only one batch axis is dynamic: -1 says it)
            if len(sa) > 3:
                a = _op.reshape(a, (-1, m, k))
                b = _op.reshape(b, (-1, k, n) if bt is None else (-1, n, k))
            out = _nn.batch_matmul(a, b, transpose_b=bt is not None)
            if len(sa) > 3:
                out = reshape_exact(out, out_shape)
        else:  # (a dynamic seq too: merged with -3, split back like ``a``)
            out = _nn.batch_matmul(merge_leading(a, len(sa) - 2), merge_leading(b, len(sb) - 2),
                                   transpose_b=bt is not None)
            if len(sa) > 3:
                out = _op.reshape_like(out, a, lhs_begin=0, lhs_end=1, rhs_begin=0,
                                       rhs_end=len(sa) - 2)
    else:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        bt = last_two_swapped(b)  # (Transpose of the last two axes: batch_matmul's transpose_b)
        b, sb = (b, sb) if bt is None else (bt, sb[:-2] + (n, k))
        out = _nn.batch_matmul(bmm_operand(a, sa, batch), bmm_operand(b, sb, batch),
                               transpose_b=bt is not None)
        out_shape = batch + (m, n)
        if len(batch) != 1:
            out = _op.reshape(out, out_shape)
    if squeeze:
        nd = len(out_shape)
        out = _op.squeeze(out, axis=sorted(nd + s for s in squeeze))
    return out


@register("MatMul")
def _matmul(ctx, ins, attrs):
    vnni = vnni_qdq_matmul(ctx, ins[0], False)  # (a QDQ model's 8-bit input and weight, VNNI)
    return vnni if vnni is not None else matmul(ctx, ins[0], ins[1])


@register("Gemm")
def _gemm(ctx, ins, attrs):
    a, b = ins[0], ins[1]
    c = ins[2] if len(ins) > 2 else None
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    vnni = None if attrs.get("transA", 0) else vnni_qdq_matmul(ctx, a, bool(attrs.get("transB",
                                                                                      0)))
    if attrs.get("transA", 0):
        a = _op.transpose(a, (1, 0))
    w = b if attrs.get("transB", 0) else _op.transpose(b, (1, 0))
    out = _nn.dense(a, w) if vnni is None else vnni
    dt = ctx.dtype(ins[0])
    if alpha != 1.0:
        out = _op.multiply(out, ctx.const(np.array(alpha, dt)))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = _op.multiply(c, ctx.const(np.array(beta, dt)))
        out = _op.add(out, c)
    return out


# ------------------------------------------------------------------ normalization
@register("BatchNormalization")
def _batch_norm(ctx, ins, attrs):
    x, scale, bias, mean, var = ins[:5]
    eps = float(attrs.get("epsilon", 1e-5))
    if attrs.get("training_mode", 0):
        return _batch_norm_training(ctx, x, scale, bias, mean, var, eps,
                                    float(attrs.get("momentum", 0.9)))
    return _nn.batch_norm(x, scale, bias, mean, var, axis=1, epsilon=eps)[0]


def _batch_norm_training(ctx, x, scale, bias, mean, var, eps, momentum):
    """training_mode=1 (opset 14+): normalize with the batch's own statistics (population
    variance) and also return the updated running mean and variance. Deterministic: no
    randomness is involved, only which statistics are used."""
    shape = ctx.shape(x)
    dt = ctx.dtype(x)
    axes = [0] + list(range(2, len(shape)))
    bshape = [1, shape[1]] + [1] * (len(shape) - 2)
    cur_mean = _op.mean(x, axes)
    centered = _op.subtract(x, _op.reshape(cur_mean, bshape))
    cur_var = _op.mean(_op.multiply(centered, centered), axes)
    inv = _op.rsqrt(_op.add(cur_var, ctx.const(np.array(eps, dt))))
    y = _op.add(_op.multiply(centered, _op.reshape(_op.multiply(inv, scale), bshape)),
                _op.reshape(bias, bshape))
    keep, new = ctx.const(np.array(momentum, dt)), ctx.const(np.array(1.0 - momentum, dt))
    run_mean = _op.add(_op.multiply(mean, keep), _op.multiply(cur_mean, new))
    run_var = _op.add(_op.multiply(var, keep), _op.multiply(cur_var, new))
    return [y, run_mean, run_var]


@register("LayerNormalization")
def _layer_norm(ctx, ins, attrs):
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    shape = ctx.shape(x)
    axis = _om.axis_attr(attrs.get("axis", -1), len(shape), "LayerNormalization's axis")
    eps = float(attrs.get("epsilon", 1e-5))
    nout = len([o for o in ctx.node.output if o])
    dt = ctx.dtype(x)
    if axis == len(shape) - 1 and nout == 1 and ctx.shape(scale) == shape[-1:] and (
            bias is None or ctx.shape(bias) == shape[-1:]):
        if bias is None:
            bias = ctx.const(np.zeros(shape[-1], dt))
        return _nn.layer_norm(x, scale, bias, axis=-1, epsilon=eps)
    axes = list(range(axis, len(shape)))
    mean = _op.mean(x, axes, keepdims=True)
    centered = _op.subtract(x, mean)
    var = _op.mean(_op.multiply(centered, centered), axes, keepdims=True)
    inv = _op.rsqrt(_op.add(var, ctx.const(np.array(eps, dt))))
    y = _op.multiply(_op.multiply(centered, inv), scale)
    if bias is not None:
        y = _op.add(y, bias)
    return [y, mean, inv]


@register("RMSNormalization")
def _rms_norm(ctx, ins, attrs):
    """Opset 23's RMSNormalization: ``X / sqrt(mean(X^2) + epsilon) * scale`` over the axes
    from ``axis`` on (the dynamo exporter's form of ``nn.RMSNorm``)."""
    x, scale = ins[0], ins[1]
    nd = len(ctx.shape(x))
    axes = list(range(int(attrs.get("axis", -1)) % nd, nd))
    dt = ctx.dtype(x)
    ms = _op.mean(_op.multiply(x, x), axes, keepdims=True)
    inv = _op.rsqrt(_op.add(ms, ctx.const(np.array(float(attrs.get("epsilon", 1e-5)), dt))))
    return _op.multiply(_op.multiply(x, inv), scale)


@register("InstanceNormalization")
def _instance_norm(ctx, ins, attrs):
    return _nn.instance_norm(ins[0], ins[1], ins[2], axis=1,
                             epsilon=float(attrs.get("epsilon", 1e-5)))


@register("LRN")
def _lrn(ctx, ins, attrs):
    return _nn.lrn(ins[0], size=int(attrs["size"]), axis=1, bias=float(attrs.get("bias", 1.0)),
                   alpha=float(attrs.get("alpha", 1e-4)), beta=float(attrs.get("beta", 0.75)))


@register("Dropout")
def _dropout(ctx, ins, attrs):
    """Inference Dropout is the identity with an all-true mask; a seeded training-mode one
    applies a mask drawn at import (see dropout_training_mask)."""
    x = ins[0]
    plan = dropout_training_mask(ctx, ins, attrs, ctx.value, ctx.shape(x))
    if plan is None:
        return [x, _op.ones(ctx.shape(x), "bool")]
    keep, scale = plan
    factor = ctx.const((keep * scale).astype(ctx.dtype(x)))
    return [_op.multiply(x, factor), ctx.const(keep)]


# ------------------------------------------------------------------ pooling
def _pool2d(ctx, x, kind, kernel, strides, dil, begin, end, ceil, include_pad):
    """One 2-D pooling on NCHW with ONNX's output size (ceil mode drops a last window that
    would start inside the end padding)."""
    pad = (begin[0], begin[1], end[0], end[1])
    if kind == "max":
        out = _nn.max_pool2d(x, kernel, strides, dil, pad, ceil_mode=ceil)
    else:
        out = _nn.avg_pool2d(x, kernel, strides, dil, pad, ceil_mode=ceil,
                             count_include_pad=include_pad)
    if ceil:
        src = ctx.shape(x)[2:]
        size = []
        for i in range(2):
            eff = (kernel[i] - 1) * dil[i] + 1
            o = -(-(src[i] + begin[i] + end[i] - eff) // strides[i]) + 1
            if (o - 1) * strides[i] >= src[i] + begin[i]:
                o -= 1
            size.append(o)
        if tuple(size) != tuple(ctx.shape(out)[2:]):
            out = _op.strided_slice(out, [0, 0], size, axes=[2, 3])
    return out


def _pool(kind):
    def convert(ctx, ins, attrs):
        x = ins[0]
        shape = ctx.shape(x)
        n = len(shape) - 2
        if n not in (1, 2, 3):
            raise NotImplementedError(f"{ctx.where()}: {n}-D pooling is not supported")
        kernel = list(attrs["kernel_shape"])
        strides = list(attrs.get("strides", [1] * n))
        dil = list(attrs.get("dilations", [1] * n))
        begin, end = _spatial_pads(ctx, attrs, shape[2:], kernel, strides, dil)
        ceil = bool(attrs.get("ceil_mode", 0))
        inc = bool(attrs.get("count_include_pad", 0))
        y = _pool_nd(ctx, x, kind, n, kernel, strides, dil, begin, end, ceil, inc)
        if kind == "max" and ctx.output_used(1):
            idx = maxpool_indices(x, ctx.shape(y)[2:], kernel, strides, dil, begin, end,
                                  int(attrs.get("storage_order", 0)))
            return [y, idx]
        return y

    return convert


def _pool_nd(ctx, x, kind, n, kernel, strides, dil, begin, end, ceil, inc):
    """1-, 2- or 3-D pooling on a channels-first input."""
    shape = ctx.shape(x)
    if n == 1:
        y = _pool2d(ctx, _op.expand_dims(x, 2), kind, [1] + kernel, [1] + strides,
                    [1] + dil, [0] + begin, [0] + end, ceil, inc)
        return _op.squeeze(y, axis=[2])
    if n == 2:
        return _pool2d(ctx, x, kind, kernel, strides, dil, begin, end, ceil, inc)
    # 3-D: a box window is separable (max of maxes; sums and pad-aware counts multiply),
    # so pool (H, W) with the depth folded into channels, then pool D as a 2-D (kd, 1)
    nb, c, d, h, w = shape
    nb = 0 if isinstance(nb, DynamicDim) else nb  # (a dynamic batch: copied by each reshape)
    y = _pool2d(ctx, _op.reshape(x, (nb, c * d, h, w)), kind, kernel[1:], strides[1:],
                dil[1:], begin[1:], end[1:], ceil, inc)
    oh, ow = ctx.shape(y)[2:]
    y = _pool2d(ctx, _op.reshape(y, (nb, c, d, oh * ow)), kind, [kernel[0], 1],
                [strides[0], 1], [dil[0], 1], [begin[0], 0], [end[0], 0], ceil, inc)
    return _op.reshape(y, (nb, c, ctx.shape(y)[2], oh, ow))


register("MaxPool")(_pool("max"))
register("AveragePool")(_pool("avg"))


def _global_pool(kind):
    def convert(ctx, ins, attrs):
        x = ins[0]
        nd = ctx.ndim(x)
        if nd == 4:
            return (_nn.global_max_pool2d if kind == "max" else _nn.global_avg_pool2d)(x)
        axes = list(range(2, nd))
        return (_op.max if kind == "max" else _op.mean)(x, axes, keepdims=True)

    return convert


register("GlobalMaxPool")(_global_pool("max"))
register("GlobalAveragePool")(_global_pool("avg"))


# ------------------------------------------------------------------ softmax family
def _softmax(fn):
    def convert(ctx, ins, attrs):
        x = ins[0]
        shape = ctx.shape(x)
        nd = len(shape)
        if ctx.node.op_type == "Softmax":  # (its QuantizeLinear may take ORT's integer form)
            note_softmax(ctx, attrs)
        if ctx.opset >= 13:
            return fn(x, axis=int(attrs.get("axis", -1)))
        axis = int(attrs.get("axis", 1)) % max(nd, 1)
        if axis == nd - 1:
            return fn(x, axis=-1)
        rows = int(np.prod(shape[:axis])) if axis else 1
        flat = _op.reshape(x, (rows, -1))
        return _op.reshape(fn(flat, axis=-1), shape)

    return convert


register("Softmax")(_softmax(_nn.softmax))
register("LogSoftmax")(_softmax(_nn.log_softmax))


@register("Hardmax")
def _hardmax(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    nd = len(shape)
    dt = ctx.dtype(x)
    if ctx.opset >= 13:
        axis = int(attrs.get("axis", -1)) % nd
        idx = _op.argmax(x, axis=[axis])
        return _op.one_hot(idx, ctx.const(np.array(1, dt)), ctx.const(np.array(0, dt)),
                           shape[axis], axis, dt)
    axis = int(attrs.get("axis", 1)) % nd
    rows = int(np.prod(shape[:axis])) if axis else 1
    cols = int(np.prod(shape[axis:]))
    flat = _op.reshape(x, (rows, cols))
    idx = _op.argmax(flat, axis=[1])
    hot = _op.one_hot(idx, ctx.const(np.array(1, dt)), ctx.const(np.array(0, dt)), cols, 1, dt)
    return _op.reshape(hot, shape)



@register("Einsum")
def _einsum(ctx, ins, attrs):
    from ..einsum import einsum

    return einsum(attrs["equation"], list(ins))
