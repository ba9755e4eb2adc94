"""More neural-network ops of TVM's ``relax.op.nn``: prelu, softplus, selu, pixel_shuffle,
batch_flatten and instance_norm, each with its struct-info rule."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ....ir.prim_expr import IntImm
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._common import (
    UNKNOWN_NDIM,
    fail,
    fmt_dim,
    fmt_sinfo,
    is_float,
    is_void,
    make_tensor,
    normalize_axes,
    normalize_axis,
    prove_not_equal,
    shape_expr_values,
    shape_product,
    tensor_args,
)
from ..base import register_op_rule
from ..op_attrs import _attrs
from ..unary import infer_unary

__all__ = ["prelu", "softplus", "selu", "pixel_shuffle", "batch_flatten", "instance_norm",
           "conv3d_transpose", "attention_bias", "cross_entropy_with_logits", "nll_loss"]

PReluAttrs = _attrs("PReluAttrs", [("axis", 1)], "Attributes of nn.prelu.")
SoftplusAttrs = _attrs("SoftplusAttrs", [("beta", 1.0), ("threshold", 20.0)],
                       "Attributes of nn.softplus.")
PixelShuffleAttrs = _attrs("PixelShuffleAttrs", [("upscale_factor", 1)],
                           "Attributes of nn.pixel_shuffle.")
InstanceNormAttrs = _attrs(
    "InstanceNormAttrs",
    [("channel_axis", 1), ("axes", ()), ("epsilon", 1e-5), ("center", True), ("scale", True)],
    "Attributes of nn.instance_norm.")


def _float_input(call: Call, x) -> None:
    if not is_void(x.dtype) and not is_float(x.dtype):
        fail(call, f"requires a float input, got {fmt_sinfo(x)}")


# --------------------------------------------------------------------------- prelu
def _infer_prelu(call: Call, ctx) -> StructInfo:
    x, alpha = tensor_args(call, ["data", "alpha"])
    _float_input(call, x)
    if alpha.dtype != x.dtype and not is_void(alpha.dtype):
        fail(call, f"requires alpha of the data's dtype, got {fmt_sinfo(alpha)} for "
                   f"{fmt_sinfo(x)}")
    if alpha.ndim not in (1, UNKNOWN_NDIM):
        fail(call, f"requires a 1-D alpha, got {fmt_sinfo(alpha)}")
    if x.ndim != UNKNOWN_NDIM:
        axis = normalize_axis(call, x.ndim, call.attrs.axis)
        xd, ad = shape_expr_values(x), shape_expr_values(alpha)
        if xd is not None and ad is not None and not (
                isinstance(ad[0], IntImm) and ad[0].value == 1) \
                and prove_not_equal(ad[0], xd[axis], ctx):
            fail(call, f"requires alpha to have one value per channel ({fmt_dim(xd[axis])}) or "
                       f"one value, got {fmt_sinfo(alpha)}")
    return x


register_op_rule("relax.nn.prelu", _infer_prelu, pattern=OpPattern.BROADCAST, num_inputs=2,
                 arguments=("data", "alpha"), attrs_type=PReluAttrs)


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """``x`` where positive, ``alpha[c] * x`` elsewhere (``c`` the index along ``axis``)."""
    return Call(Op.get("relax.nn.prelu"), [data, alpha], PReluAttrs(axis=int(axis)))


# --------------------------------------------------------------------------- softplus, selu
def _infer_float_unary(call: Call, ctx) -> StructInfo:
    return infer_unary(call, ctx, True)


register_op_rule("relax.nn.softplus", _infer_float_unary, pattern=OpPattern.ELEMWISE,
                 num_inputs=1, arguments=("data",), attrs_type=SoftplusAttrs)
register_op_rule("relax.nn.selu", _infer_float_unary, pattern=OpPattern.ELEMWISE, num_inputs=1,
                 arguments=("data",))


def softplus(data: Expr, beta: float = 1.0, threshold: float = 20.0) -> Call:
    """``log(1 + exp(beta * x)) / beta``; ``x`` itself where ``beta * x > threshold``."""
    return Call(Op.get("relax.nn.softplus"), [data],
                SoftplusAttrs(beta=float(beta), threshold=float(threshold)))


def selu(data: Expr) -> Call:
    """Scaled ELU with the self-normalizing constants (``scale * (x > 0 ? x : a*(e^x-1))``)."""
    return Call(Op.get("relax.nn.selu"), [data])


# --------------------------------------------------------------------------- pixel_shuffle
def _infer_pixel_shuffle(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    r = int(call.attrs.upscale_factor)
    if r < 1:
        fail(call, f"upscale_factor must be positive, got {r}")
    if x.ndim != UNKNOWN_NDIM and x.ndim < 3:
        fail(call, f"expects a tensor of rank at least 3 (.., C, H, W), got {fmt_sinfo(x)}")
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, x.ndim, x.vdevice)
    c, h, w = dims[-3:]
    if isinstance(c, IntImm):
        if c.value % (r * r):
            fail(call, f"the channel dim {c.value} must be divisible by upscale_factor^2 = "
                       f"{r * r}")
        c2 = IntImm(c.dtype, c.value // (r * r))
    else:
        from ....tir import expr as T

        c2 = T.FloorDiv(c, IntImm(c.dtype, r * r))
    from .._common import mul

    out = list(dims[:-3]) + [c2, mul(h, IntImm(h.dtype, r)), mul(w, IntImm(w.dtype, r))]
    return make_tensor(out, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.nn.pixel_shuffle", _infer_pixel_shuffle, pattern=OpPattern.INJECTIVE,
                 num_inputs=1, arguments=("data",), attrs_type=PixelShuffleAttrs)


def pixel_shuffle(data: Expr, upscale_factor: int) -> Call:
    """Depth to space: ``(.., C*r*r, H, W)`` to ``(.., C, H*r, W*r)``."""
    return Call(Op.get("relax.nn.pixel_shuffle"), [data],
                PixelShuffleAttrs(upscale_factor=int(upscale_factor)))


# --------------------------------------------------------------------------- batch_flatten
def _infer_batch_flatten(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    if x.ndim != UNKNOWN_NDIM and x.ndim < 1:
        fail(call, f"expects a tensor of rank at least 1, got {fmt_sinfo(x)}")
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, 2, x.vdevice)
    return make_tensor([dims[0], shape_product(dims[1:])], x.dtype, vdevice=x.vdevice)


register_op_rule("relax.nn.batch_flatten", _infer_batch_flatten, pattern=OpPattern.INJECTIVE,
                 num_inputs=1, arguments=("data",))


def batch_flatten(data: Expr) -> Call:
    """``data`` reshaped to ``(N, everything else)``."""
    return Call(Op.get("relax.nn.batch_flatten"), [data])


# --------------------------------------------------------------------------- instance_norm
def _infer_instance_norm(call: Call, ctx) -> StructInfo:
    data, gamma, beta = tensor_args(call, ["data", "gamma", "beta"])
    _float_input(call, data)
    a = call.attrs
    if data.ndim == UNKNOWN_NDIM:
        return data
    ch = normalize_axis(call, data.ndim, a.channel_axis)
    if ch in normalize_axes(call, data.ndim, a.axes):
        fail(call, f"channel_axis {a.channel_axis} must not be one of the normalized axes "
                   f"{list(a.axes)}")
    dd = shape_expr_values(data)
    for s, name in ((gamma, "gamma"), (beta, "beta")):
        if s.dtype != data.dtype:
            fail(call, f"requires {name} of the data's dtype, got {fmt_sinfo(s)}")
        if s.ndim not in (1, UNKNOWN_NDIM):
            fail(call, f"requires {name} to be 1-dimensional, got {fmt_sinfo(s)}")
        d = shape_expr_values(s)
        if dd is not None and d is not None and prove_not_equal(d[0], dd[ch], ctx):
            fail(call, f"requires {name} to have one value per channel ({fmt_dim(dd[ch])}), "
                       f"got {fmt_sinfo(s)}")
    return data


register_op_rule("relax.nn.instance_norm", _infer_instance_norm, num_inputs=3,
                 arguments=("data", "gamma", "beta"), attrs_type=InstanceNormAttrs)


def instance_norm(data: Expr, gamma: Expr, beta: Expr, channel_axis: int,
                  axes: int | Sequence[int], epsilon: float = 1e-5, center: bool = True,
                  scale: bool = True) -> Call:
    """Normalization of each channel of each sample over ``axes``, then ``gamma``/``beta``."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(v) for v in axes)
    return Call(Op.get("relax.nn.instance_norm"), [data, gamma, beta],
                InstanceNormAttrs(channel_axis=int(channel_axis), axes=axes,
                                  epsilon=float(epsilon), center=bool(center),
                                  scale=bool(scale)))


# --------------------------------------------------------------------------- conv3d_transpose
Conv3DTransposeAttrs = _attrs(
    "Conv3DTransposeAttrs",
    [("strides", (1, 1, 1)), ("padding", (0, 0, 0, 0, 0, 0)), ("output_padding", (0, 0, 0)),
     ("dilation", (1, 1, 1)), ("groups", 1), ("data_layout", "NCDHW"),
     ("kernel_layout", "IODHW"), ("out_layout", "NCDHW"), ("out_dtype", "void")],
    "Attributes of nn.conv3d_transpose.")


def _infer_conv3d_transpose(call: Call, ctx) -> StructInfo:
    from .convolution import _infer_conv

    return _infer_conv(call, ctx, "DHW", True)


register_op_rule("relax.nn.conv3d_transpose", _infer_conv3d_transpose,
                 pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2,
                 arguments=("data", "weight"), attrs_type=Conv3DTransposeAttrs)


def conv3d_transpose(data: Expr, weight: Expr, strides: int | Sequence[int] = (1, 1, 1),
                     padding: int | Sequence[int] = (0, 0, 0),
                     output_padding: int | Sequence[int] = (0, 0, 0),
                     dilation: int | Sequence[int] = (1, 1, 1), groups: int = 1,
                     data_layout: str = "NCDHW", kernel_layout: str = "IODHW",
                     out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """3-D transposed convolution (the gradient of conv3d with respect to its input)."""
    from .._common import int_tuple
    from .conv3d import padding_nd

    strides = int_tuple(strides, 3, "strides")
    dilation = int_tuple(dilation, 3, "dilation")
    output_padding = int_tuple(output_padding, 3, "output_padding")
    for k in range(3):
        if output_padding[k] >= strides[k] and output_padding[k] >= dilation[k]:
            raise ValueError(f"conv3d_transpose: output_padding {output_padding} must be "
                             f"smaller than the strides {strides} or the dilation {dilation}")
    if int(groups) < 1:
        raise ValueError(f"conv3d_transpose: groups must be positive, got {groups}")
    return Call(Op.get("relax.nn.conv3d_transpose"), [data, weight], Conv3DTransposeAttrs(
        strides=strides, padding=padding_nd(padding, 3), output_padding=output_padding,
        dilation=dilation, groups=int(groups), data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=data_layout if out_layout is None else out_layout,
        out_dtype="void" if out_dtype is None else str(out_dtype)))


# --------------------------------------------------------------------------- attention_bias
def _infer_attention_bias(call: Call, ctx) -> StructInfo:
    from .nn import _infer_attention

    if len(call.args) != 4:
        fail(call, f"expects 4 arguments (query, key, value, bias), got {len(call.args)}")
    return _infer_attention(call, ctx)


def _attention_attrs_type():
    from ..op_attrs import AttentionAttrs

    return AttentionAttrs


register_op_rule("relax.nn.attention_bias", _infer_attention_bias, num_inputs=4,
                 arguments=("query", "key", "value", "bias"),
                 attrs_type=_attention_attrs_type())


def attention_bias(query: Expr, key: Expr, value: Expr, bias: Expr, scale: float | None = None,
                   causal_mask: str | None = None, window_size: int | None = None) -> Call:
    """Multi-head attention with an additive ``bias`` on the scores (TVM's separate op name
    for ``attention`` with a bias)."""
    from .nn import attention

    call = attention(query, key, value, bias, scale, causal_mask, window_size)
    return Call(Op.get("relax.nn.attention_bias"), list(call.args), call.attrs)


# --------------------------------------------------------------------------- losses
NLLLossAttrs = _attrs("NLLLossAttrs", [("reduction", "mean"), ("ignore_index", -100)],
                      "Attributes of nn.nll_loss.")


def _infer_cross_entropy(call: Call, ctx) -> StructInfo:
    p, lab = tensor_args(call, ["predictions", "labels"])
    _float_input(call, p)
    if p.dtype != lab.dtype and not is_void(lab.dtype):
        fail(call, f"requires labels of the predictions' dtype, got {fmt_sinfo(lab)} for "
                   f"{fmt_sinfo(p)}")
    if p.ndim not in (1, 2, UNKNOWN_NDIM):
        fail(call, f"expects 1-D or 2-D predictions, got {fmt_sinfo(p)}")
    pd, ld = shape_expr_values(p), shape_expr_values(lab)
    if pd is not None and ld is not None:
        if len(pd) != len(ld) or any(prove_not_equal(a, b, ctx) for a, b in zip(pd, ld)):
            fail(call, f"requires predictions and labels of one shape, got {fmt_sinfo(p)} and "
                       f"{fmt_sinfo(lab)}")
    return make_tensor([], p.dtype, vdevice=p.vdevice)


register_op_rule("relax.nn.cross_entropy_with_logits", _infer_cross_entropy, num_inputs=2,
                 arguments=("predictions", "labels"))


def cross_entropy_with_logits(predictions: Expr, labels: Expr) -> Call:
    """``-sum(predictions * labels) / batch`` (the batch is 1 for 1-D predictions)."""
    return Call(Op.get("relax.nn.cross_entropy_with_logits"), [predictions, labels])


def _infer_nll_loss(call: Call, ctx) -> StructInfo:
    if len(call.args) not in (2, 3):
        fail(call, f"expects 2 or 3 arguments (predictions, targets[, weights]), got "
                   f"{len(call.args)}")
    names = ["predictions", "targets", "weights"][:len(call.args)]
    p, t, *w = tensor_args(call, names)
    _float_input(call, p)
    if not is_void(t.dtype) and not t.dtype.startswith(("int", "uint")):
        fail(call, f"requires integer targets, got {fmt_sinfo(t)}")
    red = call.attrs.reduction
    if red not in ("mean", "sum", "none"):
        fail(call, f"reduction must be 'mean', 'sum' or 'none', got {red!r}")
    if p.ndim != UNKNOWN_NDIM and t.ndim != UNKNOWN_NDIM:
        want = 0 if p.ndim == 1 else p.ndim - 1
        if t.ndim != want:
            fail(call, f"expects targets of rank {want} for predictions {fmt_sinfo(p)}, got "
                       f"{fmt_sinfo(t)}")
    pd, td = shape_expr_values(p), shape_expr_values(t)
    if pd is not None and td is not None and len(pd) > 1:
        rest = [pd[0]] + list(pd[2:])
        for k, (a, b) in enumerate(zip(rest, td)):
            if prove_not_equal(a, b, ctx):
                fail(call, f"dim {k} of targets {fmt_dim(b)} does not match the predictions "
                           f"{fmt_sinfo(p)}")
    if w:
        if w[0].ndim not in (1, UNKNOWN_NDIM):
            fail(call, f"requires 1-D weights, got {fmt_sinfo(w[0])}")
        wd = shape_expr_values(w[0])
        c = None if pd is None else (pd[0] if len(pd) == 1 else pd[1])
        if wd is not None and c is not None and prove_not_equal(wd[0], c, ctx):
            fail(call, f"requires one weight per class ({fmt_dim(c)}), got {fmt_sinfo(w[0])}")
    if red != "none":
        return make_tensor([], p.dtype, vdevice=p.vdevice)
    if t.shape is not None:
        from ...struct_info import TensorStructInfo

        return TensorStructInfo(t.shape, p.dtype, p.vdevice)
    return make_tensor(None, p.dtype, t.ndim, p.vdevice)


register_op_rule("relax.nn.nll_loss", _infer_nll_loss,
                 arguments=("predictions", "targets", "weights"), attrs_type=NLLLossAttrs)


def nll_loss(predictions: Expr, targets: Expr, weights: Expr | None = None,
             reduction: str = "mean", ignore_index: int = -100) -> Call:
    """Negative log likelihood: ``-weights[t] * predictions[.., t, ..]``, summed or averaged
    (by the total weight) unless ``reduction="none"``; ``ignore_index`` targets count 0."""
    args = [predictions, targets] + ([weights] if weights is not None else [])
    return Call(Op.get("relax.nn.nll_loss"), args,
                NLLLossAttrs(reduction=str(reduction), ignore_index=int(ignore_index)))
