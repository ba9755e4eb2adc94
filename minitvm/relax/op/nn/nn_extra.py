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

__all__ = ["prelu", "softplus", "selu", "pixel_shuffle", "batch_flatten", "instance_norm"]

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
