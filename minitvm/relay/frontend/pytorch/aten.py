"""ATen operators -> Relay, shared by the TorchScript importer and the FX (torch.compile) one.

A converter takes the op's arguments in schema order (tensors as Relay expressions; ints,
floats, lists, None, bools as Python values) and returns an expression, a Python value (for
size arithmetic), or a tuple of them. Names are the op names without namespace or overload
("conv2d", "native_layer_norm", ...).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ....frontend_common.torch_promote import tensors_dtype, true_divide_dtype, with_number_dtype
from ....frontend_common.torch_rot90 import rot90_plan
from ....frontend_common.torch_take_along import take_along_plan
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from ..common import Folder, ImportError_, infer_dtype, infer_shape, last_two_swapped
from .aten_fake_quant_conv import fake_quant_conv, fake_quant_dense

__all__ = ["ATEN", "AtenContext", "DType", "torch_dtype"]

ATEN: dict = {}

# c10::ScalarType codes as TorchScript passes them
_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                 6: "float32", 7: "float64", 11: "bool"}


class DType(str):
    """A dtype argument (the walkers wrap torch.dtype / ScalarType arguments in it)."""


def torch_dtype(d) -> str:
    """A dtype name from a torch.dtype, a ScalarType code or a string."""
    if d is None:
        return "float32"
    if isinstance(d, DType):
        return str(d)
    if isinstance(d, int):
        if d not in _SCALAR_TYPES:
            raise ImportError_(f"PyTorch scalar type {d} is not supported")
        return _SCALAR_TYPES[d]
    s = str(d).replace("torch.", "")
    return {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "bool": "bool"}.get(s, s)


def register(*names):
    def deco(fn):
        for n in names:
            ATEN[n] = fn
        return fn

    return deco


class AtenContext:
    """Shape/dtype queries and constant folding for converters."""

    def __init__(self):
        self.fold = Folder()
        self.op_name = "?"
        # fake quantization as qnn.quantize / qnn.dequantize pairs (from_pytorch's
        # fake_quantize_as_qnn, for FakeQuantizationToInteger; ``aten_fake_quant``)
        self.fake_quantize_as_qnn = False
        # max-pool indices built so far -> their pool's (kernel, stride, padding, dilation),
        # for max_unpool's gather form (frontend_common.unpool_plan)
        self.pool_geometry: dict = {}

    @staticmethod
    def shape(e):
        return infer_shape(e)

    @staticmethod
    def dtype(e):
        return infer_dtype(e)

    def fail(self, detail: str) -> ImportError_:
        return ImportError_(f"aten::{self.op_name}: {detail}")


def _is_expr(v) -> bool:
    return isinstance(v, _expr.Expr)


def _scalar_like(ctx, value, like):
    dt = ctx.dtype(like)
    return _expr.const(np.array(value, dtype=dt), dt)


def _pair(ctx, a, b):
    """Two operands as Relay expressions of the dtype torch gives their result
    (``frontend_common.torch_promote``): a Python number takes the tensor's dtype unless it
    lifts the tensor (a float with an integer tensor: float32)."""
    if _is_expr(a) and _is_expr(b):
        da, db = ctx.dtype(a), ctx.dtype(b)
        if da != db:
            target = tensors_dtype(da, db, ctx.shape(a) == (), ctx.shape(b) == ())
            a = a if da == target else _op.cast(a, target)
            b = b if db == target else _op.cast(b, target)
        return a, b
    if _is_expr(a):
        a = _lifted(ctx, a, b)
        return a, _scalar_like(ctx, b, a)
    b = _lifted(ctx, b, a)
    return _scalar_like(ctx, a, b), b


def _lifted(ctx, tensor, number):
    """``tensor`` cast to the dtype of its result with the Python ``number``."""
    dt = ctx.dtype(tensor)
    target = with_number_dtype(dt, number)
    return tensor if target == dt else _op.cast(tensor, target)


def _binary(relay_fn, py_fn):
    def convert(ctx, args):
        a, b = args[0], args[1]
        if not _is_expr(a) and not _is_expr(b):
            return py_fn(a, b)
        alpha = args[2] if len(args) > 2 and relay_fn in (_op.add, _op.subtract) else 1
        a, b = _pair(ctx, a, b)
        if alpha not in (1, None):
            b = _op.multiply(b, _scalar_like(ctx, alpha, b))
        return relay_fn(a, b)

    return convert


register("add", "add_")(_binary(_op.add, operator.add))
register("sub", "sub_")(_binary(_op.subtract, operator.sub))
register("mul", "mul_")(_binary(_op.multiply, operator.mul))
register("floor_divide")(_binary(_op.floor_divide, operator.floordiv))
register("pow")(_binary(_op.power, operator.pow))
register("eq")(_binary(_op.equal, operator.eq))
register("ne")(_binary(_op.not_equal, operator.ne))
register("lt")(_binary(_op.less, operator.lt))
register("gt")(_binary(_op.greater, operator.gt))
register("le")(_binary(_op.less_equal, operator.le))
register("ge")(_binary(_op.greater_equal, operator.ge))
register("maximum")(_binary(_op.maximum, max))
register("minimum")(_binary(_op.minimum, min))


@register("div", "div_")
def _div(ctx, args):
    a, b = args[0], args[1]
    mode = args[2] if len(args) > 2 else None
    if not _is_expr(a) and not _is_expr(b):
        return a // b if mode == "floor" else (int(a / b) if mode == "trunc" else a / b)
    a, b = _pair(ctx, a, b)
    if mode == "floor":
        return _op.floor_divide(a, b)
    dt = ctx.dtype(a)
    if mode is None and true_divide_dtype(dt) != dt:  # integers divide as floats in torch
        a, b = _op.cast(a, true_divide_dtype(dt)), _op.cast(b, true_divide_dtype(dt))
    out = _op.divide(a, b)
    return _op.trunc(out) if mode == "trunc" and ctx.dtype(a).startswith("float") else out


@register("rsub")
def _rsub(ctx, args):
    alpha = args[2] if len(args) > 2 else 1
    return _binary(_op.subtract, operator.sub)(ctx, [args[1], args[0], alpha])


_UNARY = {
    "relu": _nn.relu, "relu_": _nn.relu, "sigmoid": _op.sigmoid, "sigmoid_": _op.sigmoid,
    "tanh": _op.tanh, "tanh_": _op.tanh, "exp": _op.exp, "log": _op.log, "sqrt": _op.sqrt,
    "rsqrt": _op.rsqrt, "neg": _op.negative, "abs": _op.abs, "erf": _op.erf, "sin": _op.sin,
    "cos": _op.cos, "floor": _op.floor, "ceil": _op.ceil, "round": _op.round,
}
for _n, _f in _UNARY.items():
    register(_n)(lambda ctx, args, _f=_f: _f(args[0]))


@register("contiguous", "clone", "detach", "detach_", "alias", "lift_fresh", "lift_fresh_copy",
          "dropout", "dropout_", "feature_dropout", "alpha_dropout", "alpha_dropout_",
          "feature_alpha_dropout", "feature_alpha_dropout_", "type_as")
def _identity(ctx, args):
    return args[0]


@register("_assert_tensor_metadata")
def _assert_metadata(ctx, args):
    """torch.export's check of a tensor's size / dtype after ``.to(dtype)`` (sparsemax's
    ``.to(z.dtype)``): the import has already fixed both, so it computes nothing."""
    return None


@register("hardtanh", "hardtanh_", "clamp", "clamp_", "clip")
def _clamp(ctx, args):
    x = args[0]
    lo = args[1] if len(args) > 1 else None
    hi = args[2] if len(args) > 2 else None
    if _is_expr(lo) or _is_expr(hi):
        out = x if lo is None else _op.maximum(x, lo)
        return out if hi is None else _op.minimum(out, hi)
    big = float(np.finfo("float32").max)
    return _op.clip(x, -big if lo is None else float(lo), big if hi is None else float(hi))


@register("leaky_relu", "leaky_relu_")
def _leaky_relu(ctx, args):
    return _nn.leaky_relu(args[0], float(args[1]) if len(args) > 1 else 0.01)


@register("silu", "silu_")
def _silu(ctx, args):
    return _op.multiply(args[0], _op.sigmoid(args[0]))


@register("hardsigmoid", "hardsigmoid_")
def _hardsigmoid(ctx, args):
    x = args[0]
    return _op.clip(_op.add(_op.divide(x, _scalar_like(ctx, 6.0, x)),
                            _scalar_like(ctx, 0.5, x)), 0.0, 1.0)


@register("hardswish", "hardswish_")
def _hardswish(ctx, args):
    return _op.multiply(args[0], _hardsigmoid(ctx, args))


@register("gelu")
def _gelu(ctx, args):
    x = args[0]
    approx = args[1] if len(args) > 1 else "none"
    half, one = _scalar_like(ctx, 0.5, x), _scalar_like(ctx, 1.0, x)
    if approx == "tanh":
        inner = _op.multiply(_scalar_like(ctx, math.sqrt(2 / math.pi), x), _op.add(
            x, _op.multiply(_scalar_like(ctx, 0.044715, x), _op.multiply(x, _op.multiply(x, x)))))
        return _op.multiply(_op.multiply(half, x), _op.add(one, _op.tanh(inner)))
    erf = _op.erf(_op.multiply(x, _scalar_like(ctx, 1 / math.sqrt(2), x)))
    return _op.multiply(_op.multiply(half, x), _op.add(one, erf))


# ------------------------------------------------------------------ convolution / pooling
def _string_padding(ctx, padding: str, kernel, dilation, nd: int) -> list[int]:
    """``padding="valid"`` / ``"same"`` (torch.export keeps the string; stride is 1 for
    "same") as explicit pads: one per axis when symmetric, else all begins then all ends
    (torch puts the odd one at the end)."""
    if padding == "valid":
        return [0] * nd
    if padding != "same":
        raise ctx.fail(f"padding={padding!r} is not supported")
    dil = list(dilation) if isinstance(dilation, list | tuple) else [dilation]
    dil = dil * nd if len(dil) == 1 else dil
    totals = [d * (int(k) - 1) for d, k in zip(dil, kernel, strict=True)]
    begin, end = [t // 2 for t in totals], [t - t // 2 for t in totals]
    return begin if begin == end else begin + end


def _conv(ctx, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    nd = len(ctx.shape(x)) - 2
    if isinstance(padding, str):
        padding = _string_padding(ctx, padding, ctx.shape(w)[2:], dilation, nd)

    def per(v, fill=1):
        v = list(v) if isinstance(v, list | tuple) else [v]
        return v * nd if len(v) == 1 else v

    stride, padding, dilation = per(stride), per(padding, 0), per(dilation)
    q = None if transposed else fake_quant_conv(ctx, x, w, stride, padding, dilation, groups)
    if q is not None:  # (a QAT conv of 8-bit values: aten_fake_quant_conv)
        return q if b is None else _nn.bias_add(q, b, axis=1)
    wshape = ctx.shape(w)
    if transposed and nd == 1:  # a 1-row 2-D transposed convolution
        out = _conv(ctx, _op.expand_dims(x, 2), _op.expand_dims(w, 2), None, [1] + per(stride),
                    [0] + per(padding, 0), [1] + per(dilation), True,
                    [0] + per(output_padding), groups)
        out = _op.squeeze(out, [2])
    elif transposed and _pointwise_transposed(ctx, x, wshape, stride, padding, dilation,
                                              output_padding, groups):
        # a transposed conv of a 1x1 input (a GAN generator's first layer, from the latent) is
        # one GEMM: out[n, (o, taps)] = x[n, :] @ w[:, (o, taps)]; as a convolution it pads the
        # input to the kernel's size and multiplies mostly zeros (DCGAN's 64 -> 256 channel 4x4
        # layer took 0.18 ms so, 0.01 ms as a dense)
        cols = _op.transpose(_op.reshape(w, (wshape[0], -1)), (1, 0))
        out = _op.reshape(_nn.dense(_op.reshape(x, (0, -1)), cols), (0, wshape[1], *wshape[2:]))
    elif transposed:
        if nd not in (2, 3):
            raise ctx.fail(f"{nd}-D transposed convolution is not supported")
        fn = _nn.conv2d_transpose if nd == 2 else _nn.conv3d_transpose
        out = fn(x, w, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 channels=wshape[1] * groups, kernel_size=wshape[2:],
                 output_padding=per(output_padding))
    elif nd in (1, 2, 3):
        fn = {1: _nn.conv1d, 2: _nn.conv2d, 3: _nn.conv3d}[nd]
        out = fn(x, w, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 channels=wshape[0], kernel_size=wshape[2:])
    else:
        raise ctx.fail(f"{nd}-D convolution is not supported")
    return out if b is None else _nn.bias_add(out, b, axis=1)


def _pointwise_transposed(ctx, x, wshape, stride, padding, dilation, output_padding,
                          groups) -> bool:
    """Is this transposed conv one whose input has every spatial size 1, with no padding,
    dilation or groups (so each output is one input pixel times one filter tap)?"""
    spatial = ctx.shape(x)[2:]
    out_pad = output_padding if isinstance(output_padding, list | tuple) else [output_padding]
    return (groups in (1, None) and all(isinstance(d, int) and d == 1 for d in spatial)
            and all(p == 0 for p in padding) and all(d == 1 for d in dilation)
            and all(p == 0 for p in out_pad) and all(isinstance(k, int) for k in wshape))


@register("convolution", "_convolution")
def _convolution(ctx, args):
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    return _conv(ctx, x, w, b, stride, padding, dilation, transposed, output_padding, groups)


@register("conv1d", "conv2d", "conv3d")
def _conv2d(ctx, args):
    x, w, b, stride, padding, dilation, groups = (list(args) + [None] * 7)[:7]
    return _conv(ctx, x, w, b, stride or 1, padding or 0, dilation or 1, False, 0, groups or 1)


@register("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(ctx, args):
    """``F.conv_transpose2d`` as torch.export records it (a VQ-VAE's decoder): (input, weight,
    bias, stride, padding, output_padding, groups, dilation)."""
    x, w, b, stride, padding, out_pad, groups, dilation = (list(args) + [None] * 8)[:8]
    return _conv(ctx, x, w, b, stride or 1, padding or 0, dilation or 1, True, out_pad or 0,
                 groups or 1)


@register("batch_norm", "_native_batch_norm_legit_no_training", "native_batch_norm",
          "_native_batch_norm_legit")
def _batch_norm(ctx, args):
    name = ctx.op_name
    if name == "batch_norm":
        x, w, b, mean, var, training, _, eps = args[:8]
    elif name == "_native_batch_norm_legit_no_training":
        x, w, b, mean, var, _, eps = args[:7]
        training = False
    elif len(args) == 6:  # _native_batch_norm_legit.no_stats (instance norm's decomposition)
        x, w, b, training, _, eps = args
        mean = var = None
    else:
        x, w, b, mean, var, training, _, eps = args[:8]
    if training and mean is not None:
        raise ctx.fail("batch norm in training mode is not supported (call model.eval())")
    c = ctx.shape(x)[1]
    dt = ctx.dtype(x)
    w = w if w is not None else _expr.const(np.ones(c, dt), dt)
    b = b if b is not None else _expr.const(np.zeros(c, dt), dt)
    if mean is None:  # no running statistics: normalise with the batch's own
        axes = [d for d in range(len(ctx.shape(x))) if d != 1]
        mean = _op.mean(x, axes)
        var = _op.variance(x, axes)
    out = _nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=float(eps))[0]
    return out if name == "batch_norm" else (out, None, None)


@register("layer_norm", "native_layer_norm")
def _layer_norm(ctx, args):
    x, shape, w, b, eps = args[:5]
    xs = ctx.shape(x)
    dt = ctx.dtype(x)
    k = len(shape)
    if k == 1:
        w = w if w is not None else _expr.const(np.ones(xs[-1], dt), dt)
        b = b if b is not None else _expr.const(np.zeros(xs[-1], dt), dt)
        out = _nn.layer_norm(x, w, b, axis=-1, epsilon=float(eps))
    else:
        axes = list(range(len(xs) - k, len(xs)))
        mean = _op.mean(x, axes, keepdims=True)
        cen = _op.subtract(x, mean)
        var = _op.mean(_op.multiply(cen, cen), axes, keepdims=True)
        out = _op.multiply(cen, _op.rsqrt(_op.add(var, _scalar_like(ctx, eps, x))))
        out = out if w is None else _op.multiply(out, w)
        out = out if b is None else _op.add(out, b)
    return out if ctx.op_name == "layer_norm" else (out, None, None)


@register("rms_norm")
def _rms_norm(ctx, args):
    """rms_norm(input, normalized_shape, weight, eps): ``x / sqrt(mean(x^2) + eps) * weight``
    over the trailing ``len(normalized_shape)`` axes (``nn.RMSNorm``); eps None is torch's
    machine epsilon of the input's dtype."""
    x, shape = args[0], args[1]
    w = args[2] if len(args) > 2 else None
    eps = args[3] if len(args) > 3 else None
    dt = ctx.dtype(x)
    eps = float(np.finfo(dt).eps) if eps is None else float(eps)
    nd = len(ctx.shape(x))
    axes = list(range(nd - len(shape), nd))
    ms = _op.mean(_op.multiply(x, x), axes, keepdims=True)
    out = _op.multiply(x, _op.rsqrt(_op.add(ms, _scalar_like(ctx, eps, x))))
    return out if w is None else _op.multiply(out, w)


# ------------------------------------------------------------------ matrix products
def _matmul(ctx, a, b):
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sa) >= 2 and len(sb) == 2:
        k, n = sb
        flat = a if len(sa) == 2 else _op.reshape(a, (-1, k))
        out = _nn.dense(flat, _op.transpose(b, (1, 0)))
        return out if len(sa) == 2 else _op.reshape(out, sa[:-1] + (n,))
    if len(sa) >= 3 and len(sb) >= 3:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        nb = int(np.prod(batch))
        bt = last_two_swapped(b)  # (k.transpose(-2, -1): batch_matmul's own transpose_b)
        b, sb = (b, sb) if bt is None else (bt, sb[:-2] + (sb[-1], sb[-2]))
        a = a if sa[:-2] == batch else _op.broadcast_to(a, batch + sa[-2:])
        b = b if sb[:-2] == batch else _op.broadcast_to(b, batch + sb[-2:])
        a3 = a if len(batch) == 1 else _op.reshape(a, (nb,) + sa[-2:])
        b3 = b if len(batch) == 1 else _op.reshape(b, (nb,) + sb[-2:])
        out = _nn.batch_matmul(a3, b3, transpose_b=bt is not None)
        n = sb[-1] if bt is None else sb[-2]
        return out if len(batch) == 1 else _op.reshape(out, batch + (sa[-2], n))
    if len(sa) == 1 and len(sb) == 1:
        return _op.sum(_op.multiply(a, b))
    if len(sa) == 1:
        return _op.squeeze(_matmul(ctx, _op.expand_dims(a, 0), b), axis=[-2 + len(sb)])
    if len(sb) == 1:
        return _op.squeeze(_matmul(ctx, a, _op.expand_dims(b, 1)), axis=[len(sa) - 1])
    # 2-D @ N-D
    return _matmul(ctx, _op.broadcast_to(a, sb[:-2] + sa), b)


@register("matmul", "mm", "bmm", "mv", "dot")
def _matmul_op(ctx, args):
    return _matmul(ctx, args[0], args[1])


@register("linear")
def _linear(ctx, args):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    xs = ctx.shape(x)
    flat = x if len(xs) == 2 else _op.reshape(x, (-1, xs[-1]))
    out = fake_quant_dense(ctx, x, flat, w)  # (a QAT linear of 8-bit values: integer)
    if b is not None:
        out = _nn.bias_add(out, b, axis=-1)
    return out if len(xs) == 2 else _op.reshape(out, xs[:-1] + (ctx.shape(w)[0],))


@register("addmm")
def _addmm(ctx, args):
    c, a, b = args[:3]
    beta = args[3] if len(args) > 3 else 1
    alpha = args[4] if len(args) > 4 else 1
    out = _matmul(ctx, a, b)
    if alpha != 1:
        out = _op.multiply(out, _scalar_like(ctx, alpha, out))
    if beta != 0:
        c = c if beta == 1 else _op.multiply(c, _scalar_like(ctx, beta, c))
        out = _op.add(out, c)
    return out


# ------------------------------------------------------------------ shapes
def _norm_dim(d, nd):
    return d + nd if d < 0 else d


def _resolve_shape(ctx, x, shape):
    shape = [int(s) for s in shape]
    if -1 in shape:
        total = int(np.prod(ctx.shape(x)))
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = total // known if known else 0
    return shape


@register("view", "reshape", "_unsafe_view", "_reshape_alias")
def _view(ctx, args):
    return _op.reshape(args[0], _resolve_shape(ctx, args[0], args[1]))


@register("view_as", "reshape_as")
def _view_as(ctx, args):
    """``x.view_as(other)``: x in other's shape (Medusa's candidate scores take the tree's)."""
    return _op.reshape(args[0], tuple(int(d) for d in ctx.shape(args[1])))


@register("flatten")
def _flatten(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    nd = len(s)
    start = _norm_dim(args[1] if len(args) > 1 else 0, nd)
    end = _norm_dim(args[2] if len(args) > 2 else -1, nd)
    return _op.reshape(x, s[:start] + (int(np.prod(s[start:end + 1])),) + s[end + 1:])


@register("t")
def _t(ctx, args):
    return args[0] if len(ctx.shape(args[0])) < 2 else _op.transpose(args[0], (1, 0))


@register("transpose", "transpose_")
def _transpose(ctx, args):
    nd = len(ctx.shape(args[0]))
    perm = list(range(nd))
    a, b = _norm_dim(args[1], nd), _norm_dim(args[2], nd)
    perm[a], perm[b] = perm[b], perm[a]
    return _op.transpose(args[0], perm)


@register("permute")
def _permute(ctx, args):
    nd = len(ctx.shape(args[0]))
    return _op.transpose(args[0], [_norm_dim(d, nd) for d in args[1]])


@register("unsqueeze", "unsqueeze_")
def _unsqueeze(ctx, args):
    nd = len(ctx.shape(args[0]))
    return _op.expand_dims(args[0], _norm_dim(args[1], nd + 1))


@register("squeeze", "squeeze_")
def _squeeze(ctx, args):
    s = ctx.shape(args[0])
    if len(args) < 2 or args[1] is None:
        return _op.squeeze(args[0])
    dims = args[1] if isinstance(args[1], list | tuple) else [args[1]]
    dims = [_norm_dim(d, len(s)) for d in dims if s[_norm_dim(d, len(s))] == 1]
    return _op.squeeze(args[0], axis=dims) if dims else args[0]


@register("expand", "expand_as", "broadcast_to")
def _expand(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    target = list(ctx.shape(args[1])) if ctx.op_name == "expand_as" else list(args[1])
    off = len(target) - len(s)
    target = [s[i - off] if d == -1 else int(d) for i, d in enumerate(target)]
    return x if tuple(target) == s else _op.broadcast_to(x, target)


@register("cat", "concat")
def _cat(ctx, args):
    tensors = [t for t in args[0]]
    dim = args[1] if len(args) > 1 else 0
    nd = len(ctx.shape(tensors[0]))
    return _op.concatenate(tensors, _norm_dim(dim, nd))


@register("stack")
def _stack(ctx, args):
    dim = args[1] if len(args) > 1 else 0
    return _op.stack(list(args[0]), dim)


@register("slice")
def _slice(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    dim = _norm_dim(args[1] if len(args) > 1 else 0, len(s))
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else s[dim]
    step = args[4] if len(args) > 4 and args[4] is not None else 1
    lo, hi, st = slice(start, min(end, 2 ** 62), step).indices(s[dim])
    if (lo, hi, st) == (0, s[dim], 1):
        return x
    if (lo, st) == (0, 1) and 0 < hi < s[dim]:
        prefix = _sorted_prefix(x, dim, hi, len(s))
        if prefix is not None:
            return prefix
    return _op.strided_slice(x, [lo], [max(hi, lo)], [st], axes=[dim])


def _sorted_prefix(x, dim: int, k: int, ndim: int):
    """The first ``k`` along ``dim`` of an ascending whole-axis ``sort`` / ``argsort`` as a
    ``topk`` of the ``k`` smallest (the same order, ties by position, NaN last, without
    ordering the rest): PointNet++'s ball
    query takes ``sort(idx)[..., :nsample]`` of 512 candidates, whose full sort cost 6 ms
    against 0.3 ms for the selection of 16. None when ``x`` is not such a sort."""
    if not (isinstance(x, _expr.Call) and getattr(x.op, "name", None) in ("sort", "argsort")):
        return None
    if int(x.attrs.axis) % ndim != dim or not bool(x.attrs.is_ascend):
        return None  # (a descending sort reverses ties and puts NaN first; topk does neither)
    if x.op.name == "sort":
        return _op.topk(x.args[0], k, dim, "values", True, "int64")
    return _op.topk(x.args[0], k, dim, "indices", True, str(x.attrs.dtype))


@register("select")
def _select(ctx, args):
    x, dim, index = args[:3]
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    return _op.take(x, _expr.const(np.array(index % s[dim], "int64")), axis=dim)


@register("split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes")
def _split(ctx, args):
    x, size = args[0], args[1]
    dim = args[2] if len(args) > 2 else 0
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    sizes = list(size) if isinstance(size, list | tuple) else \
        [size] * (s[dim] // size) + ([s[dim] % size] if s[dim] % size else [])
    if len(sizes) == 1:
        return (x,)
    return tuple(_op.split(x, [int(v) for v in np.cumsum(sizes)[:-1]], axis=dim))


@register("chunk", "unsafe_chunk")
def _chunk(ctx, args):
    x, chunks = args[0], args[1]
    dim = args[2] if len(args) > 2 else 0
    s = ctx.shape(x)
    size = -(-s[_norm_dim(dim, len(s))] // chunks)
    return _split(ctx, [x, size, dim])


@register("size")
def _size(ctx, args):
    s = ctx.shape(args[0])
    return list(s) if len(args) < 2 else s[args[1]]


@register("numel")
def _numel(ctx, args):
    return int(np.prod(ctx.shape(args[0])))


@register("dim")
def _dim(ctx, args):
    return len(ctx.shape(args[0]))


@register("to", "_to_copy", "type")
def _to(ctx, args):
    x = args[0]
    dtype = next((str(a) for a in args[1:] if isinstance(a, DType)), None)
    if not _is_expr(x) or dtype is None or dtype == ctx.dtype(x):
        return x
    return _op.cast(x, dtype)


# ------------------------------------------------------------------ reductions / softmax
def _dims(arg, nd):
    if arg is None or (isinstance(arg, list | tuple) and not arg):
        return None
    arg = arg if isinstance(arg, list | tuple) else [arg]
    return [_norm_dim(d, nd) for d in arg]


def _accumulate_dtype(ctx, x, args) -> str | None:
    """The dtype torch sums (sum, cumsum) in: the ``dtype`` argument, else int64 for integer and
    bool inputs (``mask.sum()`` counts in int64, never in bool), else the input's own."""
    given = next((str(a) for a in args[1:] if isinstance(a, DType)), None)
    if given is not None:
        return given
    dt = ctx.dtype(x)
    return "int64" if dt == "bool" or dt.startswith(("int", "uint")) else None


def _reduce(fn, accumulate=False):
    def convert(ctx, args):
        x = args[0]
        if accumulate or any(isinstance(a, DType) for a in args[1:]):
            dt = _accumulate_dtype(ctx, x, args) if accumulate else \
                next(str(a) for a in args[1:] if isinstance(a, DType))
            x = x if dt is None or dt == ctx.dtype(x) else _op.cast(x, dt)
        rest = [a for a in args[1:] if not isinstance(a, DType)]  # (dim, keepdim)
        dims = _dims(rest[0] if rest and not isinstance(rest[0], bool) else None,
                     len(ctx.shape(x)))
        keep = bool(rest[1]) if len(rest) > 1 and rest[1] is not None else False
        return fn(x, dims, keepdims=keep)

    return convert


register("mean")(_reduce(_op.mean))
register("sum")(_reduce(_op.sum, accumulate=True))
register("amax")(_reduce(_op.max))
register("amin")(_reduce(_op.min))


@register("softmax", "_softmax")
def _softmax(ctx, args):
    return _nn.softmax(args[0], axis=args[1])


@register("log_softmax", "_log_softmax")
def _log_softmax(ctx, args):
    return _nn.log_softmax(args[0], axis=args[1])


@register("embedding")
def _embedding(ctx, args):
    w, idx = args[0], args[1]
    return _op.take(w, idx, axis=0)


@register("masked_fill", "masked_fill_")
def _masked_fill(ctx, args):
    x, mask, value = args[:3]
    v = value if _is_expr(value) else _scalar_like(ctx, value, x)
    return _op.where(mask, v, x)


@register("masked_scatter", "masked_scatter_")
def _masked_scatter(ctx, args):
    """``x.masked_scatter(mask, source)``: the positions where ``mask`` (broadcast to ``x``)
    holds take ``source``'s leading elements in row-major order, the rest keep ``x`` (a VLM
    writing its image features over the image-token embeddings). Each masked position's
    source element is the running count of the mask before it: a cumsum, a take, a select."""
    x, mask, source = args[:3]
    shape = [int(d) for d in ctx.shape(x)]
    if [int(d) for d in ctx.shape(mask)] != shape:
        mask = _op.broadcast_to(mask, shape)
    flat_mask = _op.reshape(mask, (-1,))
    rank = _op.cumsum(_op.cast(flat_mask, "int64"), axis=0, exclusive=True)
    src = _op.reshape(source, (-1,))
    if ctx.dtype(source) != ctx.dtype(x):
        src = _op.cast(src, ctx.dtype(x))
    picked = _op.take(src, rank, axis=0, mode="clip")
    return _op.reshape(_op.where(flat_mask, picked, _op.reshape(x, (-1,))), shape)


@register("where")
def _where(ctx, args):
    c, a, b = args[:3]
    if not _is_expr(a):
        a = _scalar_like(ctx, a, b)
    if not _is_expr(b):
        b = _scalar_like(ctx, b, a)
    return _op.where(c, a, b)


@register("Int", "IntImplicit", "ScalarImplicit", "Float", "item")
def _to_python(ctx, args):
    v = args[0]
    if _is_expr(v):
        folded = ctx.fold(v)
        if isinstance(folded, _expr.Constant):
            return folded.data.numpy().item()
        raise ctx.fail("a tensor value is used as a Python number (data-dependent control)")
    return v


@register("upsample_nearest2d")
def _upsample_nearest(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    size = args[1]
    scales = args[2] if len(args) > 2 else None
    if size is not None:
        sh, sw = size[0] / s[2], size[1] / s[3]
    else:
        sh, sw = scales
    return _nn.upsampling(x, sh, sw, method="nearest_neighbor")


# ------------------------------------------------------------------ creation / masks
def _value_dtype(dtype, values) -> str:
    if isinstance(dtype, DType):
        return str(dtype)
    return "int64" if all(isinstance(v, int) for v in values) else "float32"


@register("arange")
def _arange(ctx, args):
    n = len(args)
    if n <= 5:
        start, end, step, dtype = 0, args[0], 1, args[1] if n > 1 else None
    elif n == 6:
        start, end, step, dtype = args[0], args[1], 1, args[2]
    else:
        start, end, step, dtype = args[0], args[1], args[2], args[3]
    vals = [_to_python(ctx, [v]) for v in (start, end, step)]
    dt = _value_dtype(dtype, vals)
    return _expr.const(np.arange(*vals).astype(dt), dt)


def _full(shape, value, dtype):
    dt = _value_dtype(dtype, [value])
    return _expr.const(np.full([int(s) for s in shape], value, dtype=dt), dt)


@register("zeros", "ones", "full", "new_zeros", "new_ones", "new_full", "empty")
def _creation(ctx, args):
    name = ctx.op_name
    if name.startswith("new_"):
        like, args = args[0], args[1:]
        dtype = next((a for a in args[1:] if isinstance(a, DType)), DType(ctx.dtype(like)))
    else:
        dtype = next((a for a in args[1:] if isinstance(a, DType)), None)
        dtype = dtype or DType("float32")
    value = {"zeros": 0, "ones": 1, "empty": 0}.get(name.replace("new_", ""))
    if value is None:
        value = _to_python(ctx, [args[1]])
    return _full(args[0], value, dtype)


@register("linspace")
def _linspace(ctx, args):
    """``torch.linspace(start, end, steps, dtype=...)`` (a KAN's knot grid made in forward):
    a constant, float32 unless a dtype is given, computed as torch does (float arithmetic,
    the second half stepped back from ``end``)."""
    start, end, steps = (_to_python(ctx, [v]) for v in args[:3])
    dtype = args[3] if len(args) > 3 else None
    dt = str(dtype) if isinstance(dtype, DType) else "float32"
    steps = int(steps)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    k = np.arange(steps)
    half = steps // 2
    vals = np.where(k < half, start + step * k, end - step * (steps - 1 - k))
    return _expr.const(vals.astype(dt), dt)


@register("eye")
def _eye(ctx, args):
    """``torch.eye(n[, m])`` (a Glow LU 1x1 conv adds it to the masked lower factor): a
    constant; the sizes may come from input shapes, which the trace fixes."""
    sizes = args[:2] if len(args) == 6 else args[:1]  # eye.m(n, m, dtype, layout, device, pin)
    dims = [int(_to_python(ctx, [v])) for v in sizes]
    dtype = args[len(sizes)]
    dt = str(dtype) if isinstance(dtype, DType) else "float32"
    return _expr.const(np.eye(*dims, dtype=dt), dt)


@register("zeros_like", "ones_like", "full_like")
def _like(ctx, args):
    x = args[0]
    value = {"zeros_like": 0, "ones_like": 1}.get(ctx.op_name)
    if value is None:
        value = _to_python(ctx, [args[1]])
    dtype = next((a for a in args[1:] if isinstance(a, DType)), DType(ctx.dtype(x)))
    return _full(ctx.shape(x), value, dtype)


@register("tril", "triu")
def _tril(ctx, args):
    x = args[0]
    k = args[1] if len(args) > 1 and args[1] is not None else 0
    s = ctx.shape(x)
    ones = np.ones(s[-2:], dtype=bool)
    mask = np.tril(ones, k) if ctx.op_name == "tril" else np.triu(ones, k)
    dt = ctx.dtype(x)
    return _op.where(_expr.const(mask), x, _expr.const(np.zeros((), dt), dt))


@register("argmax", "argmin")
def _argmax(ctx, args):
    x = args[0]
    dim = args[1] if len(args) > 1 else None
    keep = bool(args[2]) if len(args) > 2 else False
    fn = _op.argmax if ctx.op_name == "argmax" else _op.argmin
    out = fn(x, None if dim is None else [dim], keepdims=keep)
    return _op.cast(out, "int64")


@register("index_select")
def _index_select(ctx, args):
    x, dim, idx = args[:3]
    return _op.take(x, idx, axis=_norm_dim(dim, len(ctx.shape(x))))


@register("repeat")
def _repeat(ctx, args):
    x, reps = args[0], [int(r) for r in args[1]]
    s = ctx.shape(x)
    if len(reps) > len(s):
        x = _op.reshape(x, (1,) * (len(reps) - len(s)) + s)
    return _op.tile(x, reps)


@register("flip")
def _flip(ctx, args):
    x = args[0]
    nd = len(ctx.shape(x))
    for d in args[1]:
        x = _op.reverse(x, _norm_dim(d, nd))
    return x


@register("rot90")
def _rot90(ctx, args):
    """``torch.rot90(x, k=1, dims=[0, 1])``: flips and an axis swap
    (``frontend_common.torch_rot90``)."""
    x = args[0]
    k = int(args[1]) if len(args) > 1 and args[1] is not None else 1
    dims = args[2] if len(args) > 2 and args[2] is not None else [0, 1]
    plan = rot90_plan(len(ctx.shape(x)), k, dims, ctx.fail)
    for axis in plan.flips:
        x = _op.reverse(x, axis)
    return x if plan.perm is None else _op.transpose(x, plan.perm)


@register("count_nonzero")
def _count_nonzero(ctx, args):
    """``torch.count_nonzero(x, dim=None)``: the int64 count of non-zero entries over ``dim``
    (an int, a list, or every axis)."""
    x = args[0]
    nd = len(ctx.shape(x))
    dims = _dims(args[1] if len(args) > 1 else None, nd) or list(range(nd))
    dt = ctx.dtype(x)
    zero = _expr.const(np.array(0, "bool" if dt == "bool" else dt), dt)
    return _op.sum(_op.cast(_op.not_equal(x, zero), "int64"), dims)


@register("cumsum", "cumprod")
def _cumsum(ctx, args):
    """(input, dim, dtype): Relay's cumsum or cumprod (one pass per row, ``schedule/scan.py``),
    in torch's accumulation dtype (int64 for integer and bool inputs)."""
    x, dim = args[0], args[1]
    dim = _norm_dim(dim, len(ctx.shape(x)))
    if len(args) > 2 and args[2] is not None and not isinstance(args[2], DType):
        args = [*args[:2], DType(torch_dtype(args[2]))]
    dtype = _accumulate_dtype(ctx, x, args[:1] + list(args[2:]))
    fn = _op.cumprod if ctx.op_name == "cumprod" else _op.cumsum
    return fn(x, axis=dim, dtype=dtype)


@register("einsum")
def _einsum(ctx, args):
    from ..einsum import einsum

    return einsum(args[0], list(args[1]))


# ------------------------------------------------------------------ models beyond the basics
@register("relu6", "relu6_")
def _relu6(ctx, args):
    return _op.clip(args[0], 0.0, 6.0)


@register("elu", "elu_")
def _elu(ctx, args):
    x = args[0]
    alpha = float(args[1]) if len(args) > 1 else 1.0
    scale = float(args[2]) if len(args) > 2 else 1.0
    in_scale = float(args[3]) if len(args) > 3 else 1.0
    neg = _op.multiply(_scalar_like(ctx, alpha, x),
                       _op.subtract(_op.exp(_op.multiply(x, _scalar_like(ctx, in_scale, x))),
                                    _scalar_like(ctx, 1.0, x)))
    out = _op.where(_op.greater(x, _scalar_like(ctx, 0.0, x)), x, neg)
    return out if scale == 1.0 else _op.multiply(out, _scalar_like(ctx, scale, x))


def _affine(ctx, x, w, b):
    c = ctx.shape(x)[1]
    dt = ctx.dtype(x)
    w = w if w is not None else _expr.const(np.ones(c, dt), dt)
    b = b if b is not None else _expr.const(np.zeros(c, dt), dt)
    return w, b


@register("group_norm", "native_group_norm")
def _group_norm(ctx, args):
    x = args[0]
    if ctx.op_name == "group_norm":  # (input, num_groups, weight, bias, eps, cudnn)
        groups, w, b, eps = args[1], args[2], args[3], args[4]
    else:  # (input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd)
        w, b, groups, eps = args[1], args[2], args[6], args[7]
    w, b = _affine(ctx, x, w, b)
    out = _nn.group_norm(x, w, b, int(groups), axis=1, epsilon=float(eps))
    return out if ctx.op_name == "group_norm" else (out, None, None)


@register("instance_norm")
def _instance_norm(ctx, args):
    x, w, b, use_input_stats, eps = args[0], args[1], args[2], args[5], args[7]
    if not use_input_stats:
        raise ctx.fail("instance_norm with running statistics (track_running_stats=True) "
                       "is not supported")
    w, b = _affine(ctx, x, w, b)
    return _nn.instance_norm(x, w, b, axis=1, epsilon=float(eps))


@register("gather")
def _gather(ctx, args):
    x, dim, idx = args[:3]
    return _op.gather(x, _norm_dim(dim, len(ctx.shape(x))), idx)


@register("take_along_dim")
def _take_along_dim(ctx, args):
    """``torch.take_along_dim(x, idx, dim)``: a gather after broadcasting ``x`` and ``idx``
    against each other off ``dim`` (``frontend_common.torch_take_along``); without ``dim``, a
    take from the flattened ``x``. Negative indices count from the end."""
    x, idx = args[0], args[1]
    dim = args[2] if len(args) > 2 else None
    if dim is None:
        size = int(np.prod(ctx.shape(x)))
        return _op.take(_op.reshape(x, (-1,)),
                        _wrap_negative(ctx, _op.reshape(idx, (-1,)), size), axis=0)
    plan = take_along_plan(ctx.shape(x), ctx.shape(idx), int(dim), ctx.fail)
    size = int(ctx.shape(x)[plan.axis])
    x = x if plan.input_to is None else _op.broadcast_to(x, plan.input_to)
    idx = idx if plan.index_to is None else _op.broadcast_to(idx, plan.index_to)
    return _op.gather(x, plan.axis, _wrap_negative(ctx, idx, size))


def _wrap_negative(ctx, idx, size: int):
    """Indices below zero moved up by ``size`` (torch's count from the end)."""
    dt = ctx.dtype(idx)
    return _op.where(_op.less(idx, _expr.const(np.array(0, dt), dt)),
                     _op.add(idx, _expr.const(np.array(size, dt), dt)), idx)


@register("topk")
def _topk(ctx, args):
    x, k = args[0], int(args[1])
    dim = args[2] if len(args) > 2 else -1
    largest = bool(args[3]) if len(args) > 3 else True
    out = _op.topk(x, k, axis=_norm_dim(dim, len(ctx.shape(x))), ret_type="both",
                   is_ascend=not largest, dtype="int64")
    return out[0], out[1]


@register("max", "min")
def _max_min(ctx, args):
    """max(x) reduces all; max(x, dim, keepdim) -> (values, indices); max(x, other) elementwise."""
    x = args[0]
    is_max = ctx.op_name == "max"
    if len(args) == 1:
        return (_op.max if is_max else _op.min)(x)
    if _is_expr(args[1]):
        return (_op.maximum if is_max else _op.minimum)(x, args[1])
    dim = _norm_dim(args[1], len(ctx.shape(x)))
    keep = bool(args[2]) if len(args) > 2 else False
    vals = (_op.max if is_max else _op.min)(x, [dim], keepdims=keep)
    idx = (_op.argmax if is_max else _op.argmin)(x, [dim], keepdims=keep)
    return vals, _op.cast(idx, "int64")


@register("pixel_shuffle")
def _pixel_shuffle(ctx, args):
    return _nn.depth_to_space(args[0], int(args[1]), mode="CRD")


def _upsample_scales(args, first):
    """The scale factors of an ``upsample_*`` call: one list (the ``.vec`` overloads) or one
    float per axis from position ``first`` on."""
    if len(args) <= first:
        return None
    return args[first] if len(args) == first + 1 else list(args[first:])


def _resize_plan(ctx, x, size, scales, align=False):
    """The output size of a torch ``upsample_*`` call, checked against Relay's coordinates.

    Without aligned corners torch maps coordinates with the scale factor it is given, where
    Relay's resize uses in/out; the two agree only when out == in * scale exactly, and any
    other scale is refused rather than resized differently.
    """
    spatial = ctx.shape(x)[2:]
    if scales is not None and not isinstance(scales, list | tuple):
        scales = [scales] * len(spatial)
    if scales is not None and all(f is None for f in scales):
        scales = None
    if size is None:
        if scales is None:
            raise ctx.fail("needs an output size or scale factors")
        size = [int(math.floor(n * float(f))) for n, f in zip(spatial, scales, strict=True)]
    size = [int(v) for v in size]
    if not align and scales is not None:
        for n, m, f in zip(spatial, size, scales, strict=True):
            if f is not None and float(f) > 0 and not math.isclose(m, n * float(f)):
                raise ctx.fail(
                    f"scale_factor={float(f)} maps {n} -> {m} pixels with a scale of "
                    f"1/{float(f)}, which Relay's resize cannot express (it uses {n}/{m}); "
                    "pass size=(...) or recompute_scale_factor=True")
    return size


@register("upsample_bilinear2d")
def _upsample_bilinear(ctx, args):
    """(input, output_size, align_corners, scale_factors) or (..., scales_h, scales_w)."""
    x, align = args[0], bool(args[2])
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 3), align)
    mode = "align_corners" if align else "half_pixel"
    return _op.image.resize2d(x, size, method="linear", coordinate_transformation_mode=mode)


def _sdpa(ctx, q, k, v, mask, causal, scale):
    qs, ks = ctx.shape(q), ctx.shape(k)
    dt = ctx.dtype(q)
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(qs[-1])
    kt = _op.transpose(k, list(range(len(ks) - 2)) + [len(ks) - 1, len(ks) - 2])
    scores = _op.multiply(_matmul(ctx, q, kt), _scalar_like(ctx, scale, q))
    if causal:
        keep = np.tril(np.ones((qs[-2], ks[-2]), dtype=bool))
        scores = _op.where(_expr.const(keep), scores,
                           _expr.const(np.array(-np.inf, dt), dt))
    if mask is not None:
        if ctx.dtype(mask) == "bool":
            scores = _op.where(mask, scores, _expr.const(np.array(-np.inf, dt), dt))
        else:
            scores = _op.add(scores, mask)
    return _matmul(ctx, _nn.softmax(scores, axis=-1), v), scores


@register("scaled_dot_product_attention")
def _scaled_dot_product_attention(ctx, args):
    q, k, v = args[:3]
    mask = args[3] if len(args) > 3 else None
    causal = bool(args[5]) if len(args) > 5 else False
    scale = args[6] if len(args) > 6 else None
    if len(args) > 4 and args[4]:
        raise ctx.fail("dropout_p > 0 is a training-only setting")
    return _sdpa(ctx, q, k, v, mask, causal, scale)[0]


@register("_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash_cpu(ctx, args):
    """(q, k, v, dropout_p, is_causal, attn_mask, scale) -> (output, logsumexp)."""
    q, k, v = args[:3]
    causal = bool(args[4]) if len(args) > 4 else False
    mask = args[5] if len(args) > 5 else None
    scale = args[6] if len(args) > 6 else None
    out, scores = _sdpa(ctx, q, k, v, mask, causal, scale)
    mx = _op.max(scores, [-1], keepdims=True)
    lse = _op.add(_op.log(_op.sum(_op.exp(_op.subtract(scores, mx)), [-1])),
                  _op.squeeze(mx, [-1]))
    return out, lse


@register("diagonal")
def _diagonal(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    nd = len(s)
    off = int(args[1]) if len(args) > 1 else 0
    d1 = _norm_dim(args[2] if len(args) > 2 else 0, nd)
    d2 = _norm_dim(args[3] if len(args) > 3 else 1, nd)
    rest = [d for d in range(nd) if d not in (d1, d2)]
    moved = _op.transpose(x, rest + [d1, d2])
    n1, n2 = s[d1], s[d2]
    rows = np.arange(max(0, -off), min(n1, n2 - off))
    flat_idx = (rows * n2 + rows + off).astype("int64")
    flat = _op.reshape(moved, tuple(s[d] for d in rest) + (n1 * n2,))
    return _op.take(flat, _expr.const(flat_idx), axis=len(rest))


@register("unflatten")
def _unflatten(ctx, args):
    x, dim, sizes = args[0], args[1], [int(v) for v in args[2]]
    s = list(ctx.shape(x))
    dim = _norm_dim(dim, len(s))
    return _op.reshape(x, tuple(s[:dim] + sizes + s[dim + 1:]))


@register("_native_multi_head_attention")
def _native_mha(ctx, args):
    """nn.MultiheadAttention's inference fast path (batch-first, packed in-projection)."""
    q, k, v, embed, heads, w_qkv, b_qkv, w_out, b_out = args[:9]
    mask = args[9] if len(args) > 9 else None
    need_weights = bool(args[10]) if len(args) > 10 else True
    average = bool(args[11]) if len(args) > 11 else True
    mask_type = args[12] if len(args) > 12 else None
    keep = None
    if mask is not None:  # bool masks are True where a key is ignored; float ones are added
        keep = _op.logical_not(mask) if ctx.dtype(mask) == "bool" else mask
        if mask_type == 1 and len(ctx.shape(mask)) == 2:  # key padding: (batch, keys)
            b, s = ctx.shape(mask)
            keep = _op.reshape(keep, (b, 1, 1, s))
    embed, heads = int(embed), int(heads)
    ws, bs = _op.split(w_qkv, 3, axis=0), _op.split(b_qkv, 3, axis=0)

    def heads_first(x, i):
        b, n = ctx.shape(x)[:2]
        y = _op.add(_nn.dense(x, ws[i]), bs[i])
        return _op.transpose(_op.reshape(y, (b, n, heads, embed // heads)), [0, 2, 1, 3])

    qh, kh, vh = heads_first(q, 0), heads_first(k, 1), heads_first(v, 2)
    out, scores = _sdpa(ctx, qh, kh, vh, keep, False, None)
    b, n = ctx.shape(q)[:2]
    out = _op.reshape(_op.transpose(out, [0, 2, 1, 3]), (b, n, embed))
    out = _op.add(_nn.dense(out, w_out), b_out)
    if not need_weights:
        return out, None
    probs = _nn.softmax(scores, axis=-1)
    return out, (_op.mean(probs, [1]) if average else probs)


@register("scalar_tensor")
def _scalar_tensor(ctx, args):
    value = _to_python(ctx, [args[0]])
    dtype = next((a for a in args[1:] if isinstance(a, DType)), DType("float32"))
    return _expr.const(np.array(value, dtype=str(dtype)), str(dtype))


# ------------------------------------------------------------------ more models' ops
@register("reciprocal")
def _reciprocal(ctx, args):
    if not _is_expr(args[0]):
        return 1.0 / args[0]
    return _op.divide(_scalar_like(ctx, 1.0, args[0]), args[0])


@register("isnan")
def _isnan(ctx, args):
    return _op.isnan(args[0])


register("remainder")(_binary(_op.floor_mod, operator.mod))
register("fmod")(_binary(_op.mod, math.fmod))


@register("clamp_min", "clamp_min_")
def _clamp_min(ctx, args):
    return _clamp(ctx, [args[0], args[1], None])


@register("clamp_max", "clamp_max_")
def _clamp_max(ctx, args):
    return _clamp(ctx, [args[0], None, args[1]])


def _softplus_expr(ctx, x, beta=1.0, threshold=20.0):
    bx = x if beta == 1 else _op.multiply(x, _scalar_like(ctx, beta, x))
    soft = _op.log(_op.add(_scalar_like(ctx, 1.0, x), _op.exp(bx)))
    soft = soft if beta == 1 else _op.divide(soft, _scalar_like(ctx, beta, x))
    return _op.where(_op.greater(bx, _scalar_like(ctx, threshold, x)), x, soft)


@register("softplus")
def _softplus(ctx, args):
    beta = float(args[1]) if len(args) > 1 and args[1] is not None else 1.0
    threshold = float(args[2]) if len(args) > 2 and args[2] is not None else 20.0
    return _softplus_expr(ctx, args[0], beta, threshold)


@register("mish", "mish_")
def _mish(ctx, args):
    return _op.multiply(args[0], _op.tanh(_softplus_expr(ctx, args[0])))


@register("prelu", "_prelu_kernel")
def _prelu(ctx, args):
    x, w = args[0], args[1]
    s = ctx.shape(x)
    if len(s) > 1 and int(np.prod(ctx.shape(w))) > 1:  # one slope per channel (dim 1)
        w = _op.reshape(w, (-1,) + (1,) * (len(s) - 2))
    return _op.where(_op.greater(x, _scalar_like(ctx, 0.0, x)), x, _op.multiply(x, w))


@register("std", "var")
def _std_var(ctx, args):
    return _spread_and_mean(ctx, args, ctx.op_name == "std")[0]


@register("std_mean", "var_mean")
def _std_var_mean(ctx, args):
    """``torch.var_mean`` / ``std_mean`` (the spread as ``var`` / ``std`` take it, then the
    mean over the same axes): one centring shared by both results."""
    return _spread_and_mean(ctx, args, ctx.op_name == "std_mean")


def _spread_and_mean(ctx, args, std: bool):
    """(standard deviation if ``std`` else variance, mean) over the axes of a std / var /
    std_mean / var_mean call, in any of their schemas: (x, unbiased), (x, dim, unbiased,
    keepdim), (x, dim, correction, keepdim)."""
    x = args[0]
    nd = len(ctx.shape(x))
    if len(args) == 2 and isinstance(args[1], bool):  # std(x, unbiased)
        dim, correction, keep = None, int(args[1]), False
    else:
        dim = args[1] if len(args) > 1 else None
        corr = args[2] if len(args) > 2 else None
        keep = bool(args[3]) if len(args) > 3 and args[3] is not None else False
        correction = 1 if corr is None else (int(corr) if isinstance(corr, bool) else corr)
    dims = _dims(dim, nd) or list(range(nd))
    n = int(np.prod([ctx.shape(x)[d] for d in dims]))
    mean = _op.mean(x, dims, keepdims=True)
    cen = _op.subtract(x, mean)
    out = _op.divide(_op.sum(_op.multiply(cen, cen), dims, keepdims=keep),
                     _scalar_like(ctx, max(n - correction, 0), x))
    return (_op.sqrt(out) if std else out), (mean if keep else _op.squeeze(mean, dims))


def _vector_norm(ctx, x, p, dim, keep):
    dims = _dims(dim, len(ctx.shape(x)))
    p = 2.0 if p is None else float(p)
    if p == 2:
        return _op.sqrt(_op.sum(_op.multiply(x, x), dims, keepdims=keep))
    a = _op.abs(x)
    if p == 1:
        return _op.sum(a, dims, keepdims=keep)
    if p == math.inf:
        return _op.max(a, dims, keepdims=keep)
    if p == -math.inf:
        return _op.min(a, dims, keepdims=keep)
    if p == 0:
        return _op.sum(_op.cast(_op.not_equal(x, _scalar_like(ctx, 0, x)), ctx.dtype(x)), dims,
                       keepdims=keep)
    s = _op.sum(_op.power(a, _scalar_like(ctx, p, x)), dims, keepdims=keep)
    return _op.power(s, _scalar_like(ctx, 1.0 / p, x))


@register("linalg_vector_norm")
def _linalg_vector_norm(ctx, args):
    x, p, dim, keep = (list(args) + [None] * 4)[:4]
    if len(args) > 4 and args[4] is not None:
        x = _op.cast(x, torch_dtype(args[4]))
    return _vector_norm(ctx, x, p, dim, bool(keep))


@register("norm")
def _norm(ctx, args):
    x, p, dim, keep = (list(args) + [None] * 4)[:4]
    if isinstance(p, str):
        if p != "fro":
            raise ctx.fail(f"norm with p={p!r} is not supported")
        p = 2.0
    return _vector_norm(ctx, x, p, dim, bool(keep))


@register("narrow")
def _narrow(ctx, args):
    x, dim, start, length = args[:4]
    if _is_expr(start):
        raise ctx.fail("narrow with a tensor start is not supported")
    n = ctx.shape(x)[_norm_dim(dim, len(ctx.shape(x)))]
    start = start % n if start < 0 else start
    return _slice(ctx, [x, dim, start, start + length, 1])


@register("unbind")
def _unbind(ctx, args):
    x = args[0]
    dim = args[1] if len(args) > 1 and args[1] is not None else 0
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    if s[dim] == 1:
        return (_op.squeeze(x, [dim]),)
    return tuple(_op.squeeze(p, [dim]) for p in _op.split(x, s[dim], axis=dim))


@register("roll")
def _roll(ctx, args):
    x = args[0]
    shifts = args[1] if isinstance(args[1], list | tuple) else [args[1]]
    dims = args[2] if len(args) > 2 and args[2] is not None else []
    dims = dims if isinstance(dims, list | tuple) else [dims]
    s = ctx.shape(x)
    if not dims:  # roll the flattened tensor, then restore the shape
        return _op.reshape(_roll(ctx, [_op.reshape(x, (-1,)), shifts, [0]]), s)
    if len(shifts) != len(dims):
        raise ctx.fail(f"roll got {len(shifts)} shifts for {len(dims)} dims")
    for shift, d in zip(shifts, dims, strict=True):
        d = _norm_dim(d, len(s))
        k = int(shift) % s[d]
        if k:
            tail = _op.strided_slice(x, [s[d] - k], [s[d]], [1], axes=[d])
            head = _op.strided_slice(x, [0], [s[d] - k], [1], axes=[d])
            x = _op.concatenate([tail, head], axis=d)
    return x


def _pad_pairs(ctx, x, pad):
    """torch's last-dim-first (before, after) list -> Relay's per-axis pad_width."""
    nd = len(ctx.shape(x))
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > nd:
        raise ctx.fail(f"pad {pad} does not fit a {nd}-D tensor")
    width = [[0, 0] for _ in range(nd)]
    for i in range(len(pad) // 2):
        width[nd - 1 - i] = [pad[2 * i], pad[2 * i + 1]]
    return width


def _crop(ctx, x, width):
    """The negative entries of ``width`` as a crop (torch's constant pad with a negative width
    removes that many elements); ``width`` with them zeroed."""
    s = ctx.shape(x)
    for d, (a, b) in enumerate(width):
        if a < 0 or b < 0:
            x = _op.strided_slice(x, [max(-a, 0)], [s[d] - max(-b, 0)], [1], axes=[d])
    return x, [[max(a, 0), max(b, 0)] for a, b in width]


def _pad_expr(ctx, x, pad, mode, value):
    width = _pad_pairs(ctx, x, pad)
    if any(a < 0 or b < 0 for a, b in width):
        if mode != "constant":
            raise ctx.fail(f"negative padding (cropping) in {mode!r} mode")
        x, width = _crop(ctx, x, width)
        if not any(a or b for a, b in width):
            return x
    if mode == "constant":
        return _nn.pad(x, width, _scalar_like(ctx, 0.0 if value is None else value, x))
    if mode == "reflect":
        return _nn.mirror_pad(x, width, mode="REFLECT")
    if mode == "replicate":
        return _nn.pad(x, width, pad_mode="edge")
    if mode == "circular":
        for d, (a, b) in enumerate(width):
            if a or b:
                n = ctx.shape(x)[d]
                parts = [_op.strided_slice(x, [n - a], [n], [1], axes=[d])] if a else []
                parts.append(x)
                if b:
                    parts.append(_op.strided_slice(x, [0], [b], [1], axes=[d]))
                x = _op.concatenate(parts, axis=d)
        return x
    raise ctx.fail(f"padding mode {mode!r} is not supported")


@register("pad")
def _pad(ctx, args):
    x, pad = args[0], args[1]
    mode = args[2] if len(args) > 2 and args[2] is not None else "constant"
    return _pad_expr(ctx, x, pad, mode, args[3] if len(args) > 3 else None)


@register("constant_pad_nd")
def _constant_pad_nd(ctx, args):
    return _pad_expr(ctx, args[0], args[1], "constant", args[2] if len(args) > 2 else 0)


@register("reflection_pad1d", "reflection_pad2d", "reflection_pad3d")
def _reflection_pad(ctx, args):
    return _pad_expr(ctx, args[0], args[1], "reflect", None)


@register("replication_pad1d", "replication_pad2d", "replication_pad3d")
def _replication_pad(ctx, args):
    return _pad_expr(ctx, args[0], args[1], "replicate", None)


@register("baddbmm")
def _baddbmm(ctx, args):
    return _addmm(ctx, list(args))


@register("nan_to_num", "nan_to_num_")
def _nan_to_num(ctx, args):
    x = args[0]
    dt = ctx.dtype(x)
    if not dt.startswith("float"):
        return x
    info = np.finfo(dt)
    nan = 0.0 if len(args) < 2 or args[1] is None else float(args[1])
    pos = float(info.max) if len(args) < 3 or args[2] is None else float(args[2])
    neg = float(info.min) if len(args) < 4 or args[3] is None else float(args[3])
    inf = _scalar_like(ctx, np.inf, x)
    out = _op.where(_op.equal(x, inf), _scalar_like(ctx, pos, x), x)
    out = _op.where(_op.equal(x, _op.negative(inf)), _scalar_like(ctx, neg, x), out)
    return _op.where(_op.isnan(x), _scalar_like(ctx, nan, x), out)


def _take_rows(ctx, x, idx, lead, rest):
    """``x[idx0, idx1, ...]`` over x's leading axes (sizes ``lead``): one ``take`` of the row
    ``sum(idx_j * stride_j)`` from x with those axes flattened, when the sizes are static
    (adv_index has no compute: it ran through numpy, and took the fused ops before it along,
    e.g. CLIP's final layer norm ahead of its ``x[arange(b), ids.argmax(-1)]``)."""
    if not all(isinstance(d, int) for d in list(lead) + list(rest)):
        return _op.adv_index([x] + idx)
    stride, terms = 1, []
    for t, d in zip(idx[::-1], lead[::-1], strict=True):
        terms.append(t if stride == 1 else
                     _op.multiply(t, _expr.const(np.array(stride, "int64"), "int64")))
        stride *= d
    flat = terms[0]
    for t in terms[1:]:
        flat = _op.add(flat, t)
    rows = _op.reshape(x, [stride] + list(rest)) if len(lead) > 1 else x
    return _op.take(rows, flat, axis=0)


@register("index", "_unsafe_index")
def _index(ctx, args):
    """x[i0, i1, ...] with integer index tensors (None = a whole axis), numpy placement."""
    x, indices = args[0], list(args[1])
    s = ctx.shape(x)
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos:
        return x
    for i in pos:
        if ctx.dtype(indices[i]) == "bool":
            raise ctx.fail("indexing with a boolean mask gives a data-dependent shape; it is "
                           "not supported (use torch.where or masked_fill)")
    bshape = tuple(np.broadcast_shapes(*[ctx.shape(indices[i]) for i in pos]))
    idx = []
    for i in pos:
        t = indices[i]
        t = t if ctx.dtype(t) == "int64" else _op.cast(t, "int64")
        n = _expr.const(np.array(s[i], "int64"), "int64")
        t = _op.where(_op.less(t, _expr.const(np.array(0, "int64"), "int64")), _op.add(t, n), t)
        idx.append(t if ctx.shape(t) == bshape else _op.broadcast_to(t, bshape))
    rest = [d for d in range(len(s)) if d not in pos]
    moved = x if pos == list(range(len(pos))) else _op.transpose(x, pos + rest)
    out = _take_rows(ctx, moved, idx, [s[i] for i in pos], [s[d] for d in rest])
    adjacent = pos == list(range(pos[0], pos[0] + len(pos)))
    if adjacent and pos[0] > 0:  # the indexed block stays where the indexed axes were
        k, lead = len(bshape), pos[0]
        order = list(range(k, k + lead)) + list(range(k)) + list(range(k + lead, k + len(rest)))
        out = _op.transpose(out, order)
    return out


@register("logsumexp")
def _logsumexp(ctx, args):
    x = args[0]
    dims = _dims(args[1] if len(args) > 1 else None, len(ctx.shape(x)))
    keep = bool(args[2]) if len(args) > 2 and args[2] is not None else False
    mx = _op.max(x, dims, keepdims=True)
    out = _op.log(_op.sum(_op.exp(_op.subtract(x, mx)), dims, keepdims=True))
    out = _op.add(out, mx)
    return out if keep else _op.squeeze(out, dims if dims is not None else None)


@register("_convolution_mode", "conv1d.padding", "conv2d.padding")
def _convolution_mode(ctx, args):
    """A convolution with padding="same" / "valid" (TorchScript's string-padding overload)."""
    x, w, b, stride, padding, dilation, groups = (list(args) + [None] * 7)[:7]
    nd = len(ctx.shape(x)) - 2
    kernel = ctx.shape(w)[2:]
    dilation = list(dilation) if isinstance(dilation, list | tuple) else [dilation or 1]
    dilation = dilation * nd if len(dilation) == 1 else dilation
    if padding == "valid":
        pads = [0] * nd
    elif padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        pads = [t // 2 for t in totals] + [t - t // 2 for t in totals]  # extra goes after
    else:
        raise ctx.fail(f"padding={padding!r} is not supported")
    return _conv(ctx, x, w, b, stride or 1, pads, dilation, False, 0, groups or 1)


@register("upsample_linear1d")
def _upsample_linear1d(ctx, args):
    """(input, output_size, align_corners, scale_factors): a 1-row bilinear resize."""
    x, align = args[0], bool(args[2])
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 3), align)
    mode = "align_corners" if align else "half_pixel"
    y = _op.image.resize2d(_op.expand_dims(x, 2), [1, size[0]], method="linear",
                           coordinate_transformation_mode=mode)
    return _op.squeeze(y, [2])
