"""Gradients of the Relay operators (op attribute ``FPrimalGradient``), read by ``gradient``.

Each rule is ``grad(orig, out_grad) -> [grad of each input]``: ``orig`` is the forward call (its
arguments carry their types) and ``out_grad`` the gradient of its output. Broadcasting binary ops
reduce their gradients back to each input's shape with ``collapse_sum_like``.
"""

from __future__ import annotations

import math

from ..expr import Call, Tuple, TupleGetItem, const
from . import reduce as _reduce
from . import tensor as _t
from . import transform as _tr
from .nn import _pool_grad  # noqa: F401  registers nn.max_pool2d_grad / nn.avg_pool2d_grad
from .nn import nn as _nn
from .op import register_gradient
from .reduce import sum as _sum

__all__ = ["register_gradient"]


def _type(e):
    t = e._checked_type or getattr(e, "type_annotation", None)
    if t is None:
        raise ValueError(f"gradient rule needs the type of {e}; run InferType on the program")
    return t


def _shape(e) -> list[int]:
    return [int(d) for d in _type(e).shape]


def _dtype(e) -> str:
    return _type(e).dtype


def _c(value, like) -> Call:
    return const(value, _dtype(like))


def _zero_grads(orig):
    return [_t.zeros_like(a) for a in orig.args]


# ------------------------------------------------------------------ elementwise unary
def _unary(name, rule):
    register_gradient(name)(lambda orig, g: [rule(orig.args[0], orig, g)])


_unary("log", lambda x, y, g: _t.divide(g, x))
_unary("log2", lambda x, y, g: _t.divide(g, _t.multiply(x, _c(math.log(2.0), x))))
_unary("log10", lambda x, y, g: _t.divide(g, _t.multiply(x, _c(math.log(10.0), x))))
_unary("exp", lambda x, y, g: _t.multiply(g, y))
_unary("sqrt", lambda x, y, g: _t.divide(_t.multiply(g, _c(0.5, x)), y))
_unary("rsqrt", lambda x, y, g: _t.multiply(g, _t.multiply(_c(-0.5, x), _t.multiply(
    y, _t.multiply(y, y)))))
_unary("sin", lambda x, y, g: _t.multiply(g, _t.cos(x)))
_unary("cos", lambda x, y, g: _t.negative(_t.multiply(g, _t.sin(x))))
_unary("tan", lambda x, y, g: _t.divide(g, _t.multiply(_t.cos(x), _t.cos(x))))
_unary("sinh", lambda x, y, g: _t.multiply(g, _t.cosh(x)))
_unary("cosh", lambda x, y, g: _t.multiply(g, _t.sinh(x)))
_unary("tanh", lambda x, y, g: _t.multiply(g, _t.subtract(_t.ones_like(y),
                                                           _t.multiply(y, y))))
_unary("sigmoid", lambda x, y, g: _t.multiply(g, _t.multiply(y, _t.subtract(_t.ones_like(y),
                                                                             y))))
_unary("atan", lambda x, y, g: _t.divide(g, _t.add(_t.ones_like(x), _t.multiply(x, x))))
_unary("negative", lambda x, y, g: _t.negative(g))
_unary("abs", lambda x, y, g: _t.multiply(g, _t.sign(x)))
_unary("erf", lambda x, y, g: _t.multiply(g, _t.multiply(
    _c(2.0 / math.sqrt(math.pi), x), _t.exp(_t.negative(_t.multiply(x, x))))))
_unary("copy", lambda x, y, g: g)
_unary("nn.relu", lambda x, y, g: _t.where(_t.less(_t.zeros_like(x), x), g, _t.zeros_like(g)))
_unary("cast", lambda x, y, g: _t.cast_like(g, x))
for _name in ("sign", "floor", "ceil", "round", "trunc", "zeros_like", "ones_like",
              "stop_gradient"):
    _unary(_name, lambda x, y, g: _t.zeros_like(x))


@register_gradient("nn.leaky_relu")
def _leaky_relu_grad(orig, g):
    x = orig.args[0]
    alpha = _c(float(orig.attrs.alpha), x)
    return [_t.where(_t.less(_t.zeros_like(x), x), g, _t.multiply(g, alpha))]


@register_gradient("clip")
def _clip_grad(orig, g):
    x, lo, hi = orig.args[0], orig.attrs.a_min, orig.attrs.a_max
    inside = _t.logical_and(_t.greater_equal(x, _c(float(lo), x)),
                            _t.less_equal(x, _c(float(hi), x)))
    return [_t.where(inside, g, _t.zeros_like(g))]


# ------------------------------------------------------------------ broadcasting binary
@register_gradient("add")
def _add_grad(orig, g):
    x, y = orig.args
    return [_tr.collapse_sum_like(g, x), _tr.collapse_sum_like(g, y)]


@register_gradient("subtract")
def _subtract_grad(orig, g):
    x, y = orig.args
    return [_tr.collapse_sum_like(g, x), _tr.collapse_sum_like(_t.negative(g), y)]


@register_gradient("multiply")
def _multiply_grad(orig, g):
    x, y = orig.args
    return [_tr.collapse_sum_like(_t.multiply(g, y), x),
            _tr.collapse_sum_like(_t.multiply(g, x), y)]


@register_gradient("divide")
def _divide_grad(orig, g):
    x, y = orig.args
    return [_tr.collapse_sum_like(_t.divide(g, y), x),
            _tr.collapse_sum_like(_t.negative(_t.divide(_t.multiply(g, orig), y)), y)]


@register_gradient("power")
def _power_grad(orig, g):
    x, y = orig.args
    dx = _t.multiply(g, _t.multiply(y, _t.power(x, _t.subtract(y, _t.ones_like(y)))))
    dy = _t.multiply(g, _t.multiply(orig, _t.log(x)))
    return [_tr.collapse_sum_like(dx, x), _tr.collapse_sum_like(dy, y)]


def _select_grad(first_wins: bool):
    def rule(orig, g):
        x, y = orig.args
        pick_x = _t.greater_equal(x, y) if first_wins else _t.less_equal(x, y)
        zero = _t.zeros_like(g)
        return [_tr.collapse_sum_like(_t.where(pick_x, g, zero), x),
                _tr.collapse_sum_like(_t.where(pick_x, zero, g), y)]

    return rule


register_gradient("maximum")(_select_grad(True))
register_gradient("minimum")(_select_grad(False))


@register_gradient("where")
def _where_grad(orig, g):
    cond, x, y = orig.args
    zero = _t.zeros_like(g)
    return [_t.zeros_like(cond), _tr.collapse_sum_like(_t.where(cond, g, zero), x),
            _tr.collapse_sum_like(_t.where(cond, zero, g), y)]


for _name in ("zeros", "ones", "full", "equal", "not_equal", "less", "less_equal", "greater",
              "greater_equal", "shape_of", "argmax", "argmin"):
    register_gradient(_name)(lambda orig, g: _zero_grads(orig))


@register_gradient("full_like")
def _full_like_grad(orig, g):
    return _zero_grads(orig)


@register_gradient("collapse_sum_like")
def _collapse_sum_like_grad(orig, g):
    x, like = orig.args
    return [_tr.broadcast_to_like(g, x), _t.zeros_like(like)]


@register_gradient("broadcast_to_like")
def _broadcast_to_like_grad(orig, g):
    x, like = orig.args
    return [_tr.collapse_sum_like(g, x), _t.zeros_like(like)]


@register_gradient("broadcast_to")
def _broadcast_to_grad(orig, g):
    return [_tr.collapse_sum_like(g, orig.args[0])]


# ------------------------------------------------------------------ shape
def _reshape_back(orig, g):
    rest = [_t.zeros_like(a) for a in orig.args[1:]]
    return [_tr.reshape_like(g, orig.args[0])] + rest


for _name in ("reshape", "reshape_like", "squeeze", "expand_dims", "nn.batch_flatten",
              "contrib_reverse_reshape"):
    register_gradient(_name)(_reshape_back)


@register_gradient("transpose")
def _transpose_grad(orig, g):
    ndim = len(_shape(orig.args[0]))
    axes = orig.attrs.axes
    axes = list(range(ndim))[::-1] if not axes else [int(a) % ndim for a in axes]
    inverse = [0] * ndim
    for i, a in enumerate(axes):
        inverse[a] = i
    return [_tr.transpose(g, inverse)]


@register_gradient("concatenate")
def _concatenate_grad(orig, g):
    fields = orig.args[0]
    types = _type(fields).fields
    axis = int(orig.attrs.axis)
    ndim = len(types[0].shape)
    axis = axis % ndim
    grads, begin = [], 0
    for t in types:
        size = int(t.shape[axis])
        grads.append(_tr.strided_slice(g, [begin], [begin + size], axes=[axis]))
        begin += size
    return [Tuple(grads)]


@register_gradient("nn.pad")
def _pad_grad(orig, g):
    x = orig.args[0]
    if orig.attrs.pad_mode != "constant":
        raise ValueError(f"the gradient of nn.pad supports pad_mode='constant', got "
                         f"{orig.attrs.pad_mode!r}")
    shape = _shape(x)
    begin = [int(p[0]) for p in orig.attrs.pad_width]
    end = [b + s for b, s in zip(begin, shape, strict=True)]
    rest = [_t.zeros_like(a) for a in orig.args[1:]]
    return [_tr.strided_slice(g, begin, end)] + rest


@register_gradient("strided_slice")
def _strided_slice_grad(orig, g):
    """Pad the gradient back to the data's shape (unit strides)."""
    x = orig.args[0]
    shape = _shape(x)
    at = orig.attrs
    begin, end = list(at.begin), list(at.end)
    strides = list(at.strides or [1])
    axes = list(at.axes) if at.axes is not None else list(range(len(begin)))
    widths = [(0, 0)] * len(shape)
    for i, axis in enumerate(axes):
        axis = int(axis) % len(shape)
        stride = int(strides[i]) if i < len(strides) else 1
        b = int(begin[i])
        e = None if end[i] is None else int(end[i])
        if at.slice_mode == "size":
            e = shape[axis] if e is None or e < 0 else b + e
        start, stop, step = slice(b, e, stride).indices(shape[axis])
        if step != 1:
            raise ValueError(f"the gradient of strided_slice supports unit strides, got {step} "
                             f"on axis {axis}")
        stop = max(stop, start)
        widths[axis] = (start, shape[axis] - stop)
    return [_nn.pad(g, widths)]


@register_gradient("split")
def _split_grad(orig, g):
    n = len(_type(orig).fields)
    parts = [g.fields[i] if isinstance(g, Tuple) else TupleGetItem(g, i) for i in range(n)]
    return [_tr.concatenate(parts, int(orig.attrs.axis))]


@register_gradient("stack")
def _stack_grad(orig, g):
    fields = orig.args[0]
    n = len(_type(fields).fields)
    ndim = len(_type(orig).shape)
    axis = int(orig.attrs.axis) % ndim
    return [Tuple([_tr.squeeze(_tr.strided_slice(g, [i], [i + 1], axes=[axis]), [axis])
                   for i in range(n)])]


@register_gradient("take")
def _take_grad(orig, g):
    """Scatter-add through a one-hot matrix: grad_x[.., j, ..] sums the rows taking index j."""
    x, idx = orig.args
    shape = _shape(x)
    axis = orig.attrs.axis
    if axis is None:
        flat = _take_axis_grad(_dtype(x), idx, g, 0, [math.prod(shape)], orig.attrs.mode)
        return [_tr.reshape(flat, shape), _t.zeros_like(idx)]
    axis = int(axis) % len(shape)
    return [_take_axis_grad(_dtype(x), idx, g, axis, shape, orig.attrs.mode),
            _t.zeros_like(idx)]


def _take_axis_grad(dtype, idx, g, axis, shape, mode):
    n = shape[axis]
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    k = math.prod(_shape(idx)) if _shape(idx) else 1
    index = _tr.reshape(idx, [k])
    if mode == "wrap":
        index = _t.floor_mod(index, const(n, _dtype(idx)))
    else:
        index = _t.clip(index, 0, n - 1)
    onehot = _tr.one_hot(index, const(1.0, dtype), const(0.0, dtype), n, -1, dtype)  # (k, n)
    g3 = _tr.transpose(_tr.reshape(g, [pre, k, post]), [0, 2, 1])  # (pre, post, k)
    out = _nn.dense(_tr.reshape(g3, [pre * post, k]), _tr.transpose(onehot, [1, 0]))
    out = _tr.transpose(_tr.reshape(out, [pre, post, n]), [0, 2, 1])
    return _tr.reshape(out, shape)


# ------------------------------------------------------------------ reductions
def _reduced_axes(orig) -> list[int]:
    ndim = len(_shape(orig.args[0]))
    axis = orig.attrs.axis
    axes = list(range(ndim)) if axis is None else [int(a) % ndim for a in axis]
    if orig.attrs.exclude:
        axes = [a for a in range(ndim) if a not in axes]
    return sorted(axes)


def _unreduce(orig, g):
    """``g`` with the reduced axes put back (as size 1), broadcast to the input's shape."""
    x = orig.args[0]
    if not orig.attrs.keepdims:
        shape = _shape(x)
        kept = [1 if i in _reduced_axes(orig) else d for i, d in enumerate(shape)]
        g = _tr.reshape(g, kept)
    return _tr.broadcast_to_like(g, x)


@register_gradient("sum")
def _sum_grad(orig, g):
    return [_unreduce(orig, g)]


@register_gradient("mean")
def _mean_grad(orig, g):
    shape = _shape(orig.args[0])
    count = math.prod(shape[a] for a in _reduced_axes(orig))
    return [_t.divide(_unreduce(orig, g), _c(float(count), orig.args[0]))]


def _extreme_grad(orig, g):
    x = orig.args[0]
    y = orig if orig.attrs.keepdims else _unreduce(orig, orig)
    hit = _t.cast_like(_t.equal(x, _tr.broadcast_to_like(y, x)), x)
    return [_t.multiply(_unreduce(orig, g), hit)]


register_gradient("max")(_extreme_grad)
register_gradient("min")(_extreme_grad)


# ------------------------------------------------------------------ nn
@register_gradient("nn.dense")
def _dense_grad(orig, g):
    x, w = orig.args
    return [_nn.dense(g, _tr.transpose(w, [1, 0])),
            _nn.dense(_tr.transpose(g, [1, 0]), _tr.transpose(x, [1, 0]))]


@register_gradient("nn.matmul")
def _matmul_grad(orig, g):
    a, b = orig.args
    ta, tb = bool(orig.attrs.transpose_a), bool(orig.attrs.transpose_b)
    mm = _nn.matmul
    da = mm(b, g, transpose_a=tb, transpose_b=True) if ta else mm(g, b, transpose_b=not tb)
    db = mm(g, a, transpose_a=True, transpose_b=True) if tb else mm(a, g, transpose_a=not ta)
    return [da, db]


@register_gradient("nn.batch_matmul")
def _batch_matmul_grad(orig, g):
    a, b = orig.args
    ta, tb = bool(orig.attrs.transpose_a), bool(orig.attrs.transpose_b)
    bm = _nn.batch_matmul
    da = bm(b, g, transpose_a=tb, transpose_b=True) if ta else bm(g, b, transpose_b=not tb)
    db = bm(g, a, transpose_a=True, transpose_b=True) if tb else bm(a, g, transpose_a=not ta,
                                                                     transpose_b=False)
    return [_tr.collapse_sum_like(da, a), _tr.collapse_sum_like(db, b)]


@register_gradient("nn.bias_add")
def _bias_add_grad(orig, g):
    x, b = orig.args
    axis = int(orig.attrs.axis) % len(_shape(x))
    return [g, _sum(g, [axis], exclude=True)]


@register_gradient("nn.softmax")
def _softmax_grad(orig, g):
    axis = int(orig.attrs.axis)
    inner = _sum(_t.multiply(g, orig), [axis], keepdims=True)
    return [_t.multiply(_t.subtract(g, inner), orig)]


@register_gradient("nn.log_softmax")
def _log_softmax_grad(orig, g):
    axis = int(orig.attrs.axis)
    return [_t.subtract(g, _t.multiply(_t.exp(orig), _sum(g, [axis], keepdims=True)))]


@register_gradient("nn.layer_norm")
def _layer_norm_grad(orig, g):
    """With xhat = (x - mean) * rstd over ``axis``: dgamma = sum(g * xhat), dbeta = sum(g),
    dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat)) where gx = g * gamma."""
    x, gamma, beta = orig.args
    at = orig.attrs
    ndim = len(_shape(x))
    axis = int(at.axis) % ndim
    mean = _reduce.mean(x, [axis], keepdims=True)
    centered = _t.subtract(x, mean)
    var = _reduce.mean(_t.multiply(centered, centered), [axis], keepdims=True)
    rstd = _t.rsqrt(_t.add(var, _c(float(at.epsilon), x)))
    xhat = _t.multiply(centered, rstd)
    gx = _t.multiply(g, _expand_to(gamma, ndim, axis)) if at.scale else g
    inner = _t.subtract(_t.subtract(gx, _reduce.mean(gx, [axis], keepdims=True)), _t.multiply(
        xhat, _reduce.mean(_t.multiply(gx, xhat), [axis], keepdims=True)))
    dx = _t.multiply(rstd, inner)
    dgamma = _sum(_t.multiply(g, xhat), [axis], exclude=True) if at.scale else _t.zeros_like(
        gamma)
    dbeta = _sum(g, [axis], exclude=True) if at.center else _t.zeros_like(beta)
    return [dx, dgamma, dbeta]


def _expand_to(v, ndim: int, axis: int):
    """A 1-D tensor along ``axis`` shaped to broadcast against an ``ndim`` tensor."""
    trailing = ndim - axis - 1
    return _tr.expand_dims(v, 1, trailing) if trailing > 0 else v


@register_gradient("nn.conv2d")
def _conv2d_grad(orig, g):
    """Data: a transposed convolution of ``g``; weight: a convolution of the data (batch and
    channels swapped) by ``g``, strides and dilation exchanged, cropped to the kernel size."""
    data, weight = orig.args
    at = orig.attrs
    if at.data_layout != "NCHW" or at.kernel_layout != "OIHW" or int(at.groups) != 1:
        raise ValueError("the gradient of nn.conv2d supports NCHW/OIHW with groups=1, got "
                         f"{at.data_layout}/{at.kernel_layout} groups={at.groups}")
    n, c, h, w = _shape(data)
    o, _, kh, kw = _shape(weight)
    _, _, ho, wo = _shape(orig)
    sh, sw = (int(s) for s in at.strides)
    dh, dw = (int(d) for d in at.dilation)
    pad = [int(p) for p in at.padding]
    pt, pl, pb, pr = pad if len(pad) == 4 else (pad[0], pad[1], pad[0], pad[1])
    used_h = (ho - 1) * sh + (kh - 1) * dh + 1
    used_w = (wo - 1) * sw + (kw - 1) * dw + 1
    out_pad = (h + pt + pb - used_h, w + pl + pr - used_w)
    dx = _nn.conv2d_transpose(g, weight, strides=(sh, sw), padding=(pt, pl, pb, pr),
                              dilation=(dh, dw), channels=c, kernel_size=(kh, kw),
                              output_padding=out_pad)
    # weight grad: conv of data^T (C, N, H, W) by g^T (O, N, Ho, Wo) -> (C, O, kh', kw')
    xt = _tr.transpose(data, [1, 0, 2, 3])
    gt = _tr.transpose(g, [1, 0, 2, 3])
    dwt = _nn.conv2d(xt, gt, strides=(dh, dw), padding=(pt, pl, pb, pr), dilation=(sh, sw),
                     channels=o, kernel_size=(ho, wo))
    dwt = _tr.strided_slice(dwt, [0, 0, 0, 0], [c, o, kh, kw])
    return [dx, _tr.transpose(dwt, [1, 0, 2, 3])]


@register_gradient("nn.max_pool2d")
def _max_pool2d_grad(orig, g):
    at = orig.attrs
    return [Call(_op("nn.max_pool2d_grad"), [g, orig.args[0]], at)]


@register_gradient("nn.avg_pool2d")
def _avg_pool2d_grad(orig, g):
    at = orig.attrs
    return [Call(_op("nn.avg_pool2d_grad"), [g, orig.args[0]], at)]


@register_gradient("nn.global_avg_pool2d")
def _global_avg_pool2d_grad(orig, g):
    x = orig.args[0]
    n, c, h, w = _shape(x)
    return [_tr.broadcast_to_like(_t.divide(g, _c(float(h * w), x)), x)]


@register_gradient("nn.dropout")
def _dropout_grad(orig, g):
    return [TupleGetItem(g, 0)]


def _op(name):
    from ...ir.op import Op

    return Op.get(name)
