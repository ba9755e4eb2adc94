"""Neural-network ops: activations, softmax, normalizations, dropout, pad and attention."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ....ir.prim_expr import IntImm
from ....tir import expr as T
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from .._common import (
    UNKNOWN_NDIM,
    add,
    fail,
    fmt_dim,
    fmt_shape,
    fmt_sinfo,
    int_attr,
    is_float,
    is_void,
    make_tensor,
    normalize_axes,
    normalize_axis,
    prove,
    prove_equal,
    prove_not_equal,
    shape_expr_values,
    tensor_args,
)
from ..base import register_op_rule
from ..op_attrs import (
    AttentionAttrs,
    BatchNormAttrs,
    DropoutAttrs,
    GroupNormAttrs,
    LayerNormAttrs,
    LeakyReluAttrs,
    PadAttrs,
    RMSNormAttrs,
    SoftmaxAttrs,
)
from ..unary import infer_unary

__all__ = [
    "relu", "relu6", "gelu", "gelu_tanh", "silu", "leakyrelu", "softmax", "log_softmax", "layer_norm",
    "group_norm", "rms_norm", "batch_norm", "dropout", "pad", "attention",
]


def _axes(axes) -> tuple:
    if isinstance(axes, int | IntImm):
        return (int(axes),)
    return tuple(int(a) for a in axes)


# --------------------------------------------------------------------------- activations
def _float_act(call: Call, ctx) -> StructInfo:
    return infer_unary(call, ctx, True)


def _any_act(call: Call, ctx) -> StructInfo:
    return infer_unary(call, ctx, False)


def _make_act(name: str, rule):
    op_name = "relax.nn." + name
    register_op_rule(op_name, rule, pattern=OpPattern.ELEMWISE, num_inputs=1,
                     arguments=("data",))

    def f(data: Expr) -> Call:
        return Call(Op.get(op_name), [data])

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` activation."
    return f


relu = _make_act("relu", _any_act)
relu6 = _make_act("relu6", _any_act)
gelu = _make_act("gelu", _float_act)
gelu_tanh = _make_act("gelu_tanh", _float_act)
silu = _make_act("silu", _float_act)

register_op_rule("relax.nn.leakyrelu", _float_act, pattern=OpPattern.ELEMWISE, num_inputs=1,
                 arguments=("data",), attrs_type=LeakyReluAttrs)


def leakyrelu(data: Expr, alpha: float = 0.01) -> Call:
    """``x if x > 0 else alpha * x``."""
    return Call(Op.get("relax.nn.leakyrelu"), [data], LeakyReluAttrs(alpha=float(alpha)))


# --------------------------------------------------------------------------- softmax
def _infer_softmax(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    if x.ndim == UNKNOWN_NDIM:
        return x
    if not is_void(x.dtype) and not is_float(x.dtype):
        fail(call, f"requires a float input, got {fmt_sinfo(x)}")
    normalize_axis(call, x.ndim, call.attrs.axis)
    return x


for _name in ("softmax", "log_softmax"):
    register_op_rule("relax.nn." + _name, _infer_softmax, num_inputs=1, arguments=("data",),
                     attrs_type=SoftmaxAttrs)
del _name


def softmax(data: Expr, axis: int = -1) -> Call:
    """Softmax along ``axis``."""
    return Call(Op.get("relax.nn.softmax"), [data],
                SoftmaxAttrs(axis=int_attr(axis, "relax.nn.softmax's axis")))


def log_softmax(data: Expr, axis: int = -1) -> Call:
    """Log of softmax along ``axis``."""
    return Call(Op.get("relax.nn.log_softmax"), [data],
                SoftmaxAttrs(axis=int_attr(axis, "relax.nn.log_softmax's axis")))


# --------------------------------------------------------------------------- normalizations
def _norm_check(call: Call, ctx, inputs: list[TensorStructInfo], names: Sequence[str],
                axes) -> bool:
    """Check dtypes and per-axis sizes of a norm's parameters; True when a size is unknown."""
    data = inputs[0]
    norm = normalize_axes(call, data.ndim, axes) if data.ndim != UNKNOWN_NDIM else []
    if not is_void(data.dtype) and not is_float(data.dtype):
        fail(call, f"requires a float input, got {fmt_sinfo(data)}")
    for s, name in zip(inputs[1:], names[1:]):
        if s.dtype != data.dtype:
            fail(call, f"requires all inputs to have the same dtype, but {name} is "
                       f"{fmt_sinfo(s)} while the data is {fmt_sinfo(data)}")
        if s.ndim != len(axes):
            fail(call, f"requires {name} to have as many dimensions as the normalized axes "
                       f"({len(axes)}), got {fmt_sinfo(s)}")
    lengths = []
    dd = shape_expr_values(data)
    if dd is not None:
        lengths.append([dd[a] for a in norm])
    for s in inputs[1:]:
        d = shape_expr_values(s)
        if d is not None:
            lengths.append(list(d))
    for other in lengths[1:]:
        for j in range(len(axes)):
            if prove_not_equal(lengths[0][j], other[j], ctx):
                fail(call, f"requires the parameters to match the data's size on the "
                           f"normalized axes, but got {fmt_shape(lengths[0])} and "
                           f"{fmt_shape(other)}")
            if not prove_equal(lengths[0][j], other[j], ctx):
                return True
    return False


def _infer_layer_norm(call: Call, ctx) -> StructInfo:
    names = ["data", "gamma", "beta"]
    inputs = tensor_args(call, names)
    unknown = _norm_check(call, ctx, inputs, names, call.attrs.axes)
    x = inputs[0]
    return make_tensor(None, x.dtype, x.ndim, x.vdevice) if unknown else x


register_op_rule("relax.nn.layer_norm", _infer_layer_norm, num_inputs=3,
                 arguments=("data", "gamma", "beta"), attrs_type=LayerNormAttrs)


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axes: int | Sequence[int],
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> Call:
    """Layer normalization over ``axes`` with scale ``gamma`` and offset ``beta``."""
    return Call(Op.get("relax.nn.layer_norm"), [data, gamma, beta],
                LayerNormAttrs(axes=_axes(axes), epsilon=float(epsilon), center=bool(center),
                               scale=bool(scale)))


def _infer_rms_norm(call: Call, ctx) -> StructInfo:
    names = ["data", "weight"]
    inputs = tensor_args(call, names)
    unknown = _norm_check(call, ctx, inputs, names, call.attrs.axes)
    x = inputs[0]
    return make_tensor(None, x.dtype, x.ndim, x.vdevice) if unknown else x


register_op_rule("relax.nn.rms_norm", _infer_rms_norm, num_inputs=2,
                 arguments=("data", "weight"), attrs_type=RMSNormAttrs)


def rms_norm(data: Expr, weight: Expr, axes: int | Sequence[int] = -1,
             epsilon: float = 1e-5) -> Call:
    """Root-mean-square normalization over ``axes``, scaled by ``weight``."""
    return Call(Op.get("relax.nn.rms_norm"), [data, weight],
                RMSNormAttrs(axes=_axes(axes), epsilon=float(epsilon)))


def _infer_batch_norm(call: Call, ctx) -> StructInfo:
    names = ["data", "gamma", "beta", "moving_mean", "moving_var"]
    inputs = tensor_args(call, names)
    unknown = _norm_check(call, ctx, inputs, names, [call.attrs.axis])
    x = inputs[0]
    if unknown:
        return TupleStructInfo([make_tensor(None, x.dtype, x.ndim, x.vdevice),
                                make_tensor(None, x.dtype, 1, x.vdevice),
                                make_tensor(None, x.dtype, 1, x.vdevice)])
    return TupleStructInfo([x, inputs[3], inputs[4]])


register_op_rule("relax.nn.batch_norm", _infer_batch_norm, num_inputs=5,
                 arguments=("data", "gamma", "beta", "moving_mean", "moving_var"),
                 attrs_type=BatchNormAttrs)


def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr,
               axis: int, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
               momentum: float = 0.1) -> Call:
    """Batch normalization along channel ``axis``; a tuple (output, new mean, new var)."""
    return Call(Op.get("relax.nn.batch_norm"), [data, gamma, beta, moving_mean, moving_var],
                BatchNormAttrs(axis=int(axis), epsilon=float(epsilon), center=bool(center),
                               scale=bool(scale), momentum=float(momentum)))


def _infer_group_norm(call: Call, ctx) -> StructInfo:
    names = ["data", "gamma", "beta"]
    data, gamma, beta = tensor_args(call, names)
    a = call.attrs
    ch = -1
    if data.ndim != UNKNOWN_NDIM:
        ch = normalize_axis(call, data.ndim, a.channel_axis)
        if ch in normalize_axes(call, data.ndim, a.axes):
            fail(call, f"channel_axis {a.channel_axis} must not be one of the normalized axes "
                       f"{list(a.axes)}")
    if not is_void(data.dtype) and not is_float(data.dtype):
        fail(call, f"requires a float input, got {fmt_sinfo(data)}")
    for s, name in ((gamma, "gamma"), (beta, "beta")):
        if s.dtype != data.dtype:
            fail(call, f"requires all inputs to have the same dtype, but {name} is "
                       f"{fmt_sinfo(s)} while the data is {fmt_sinfo(data)}")
        if s.ndim != 1:
            fail(call, f"requires {name} to be 1-dimensional, got {fmt_sinfo(s)}")
    dd = shape_expr_values(data)
    if dd is not None:
        channels = dd[ch]
        g = IntImm(channels.dtype, a.num_groups)
        if prove(T.NE(T.FloorMod(channels, g), IntImm(channels.dtype, 0)), ctx):
            fail(call, f"the number of channels {fmt_dim(channels)} must be divisible by "
                       f"num_groups {a.num_groups}")
        for s, name in ((gamma, "gamma"), (beta, "beta")):
            d = shape_expr_values(s)
            if d is not None and prove_not_equal(d[0], channels, ctx):
                fail(call, f"requires {name} to have one value per channel "
                           f"({fmt_dim(channels)}), got {fmt_sinfo(s)}")
    return data


register_op_rule("relax.nn.group_norm", _infer_group_norm, num_inputs=3,
                 arguments=("data", "gamma", "beta"), attrs_type=GroupNormAttrs)


def group_norm(data: Expr, gamma: Expr, beta: Expr, num_groups: int, channel_axis: int,
               axes: int | Sequence[int], epsilon: float = 1e-5, center: bool = True,
               scale: bool = True) -> Call:
    """Group normalization: channels split into ``num_groups``, normalized over ``axes``."""
    return Call(Op.get("relax.nn.group_norm"), [data, gamma, beta],
                GroupNormAttrs(num_groups=int(num_groups), channel_axis=int(channel_axis),
                               axes=_axes(axes), epsilon=float(epsilon), center=bool(center),
                               scale=bool(scale)))


# --------------------------------------------------------------------------- dropout, pad
def _infer_dropout(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    return TupleStructInfo([x, x])


register_op_rule("relax.nn.dropout", _infer_dropout, num_inputs=1, arguments=("data",),
                 attrs_type=DropoutAttrs)


def dropout(data: Expr, rate: float = 0.5) -> Call:
    """Dropout (identity at inference); a tuple (output, mask)."""
    return Call(Op.get("relax.nn.dropout"), [data], DropoutAttrs(rate=float(rate)))


def _infer_pad(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    pw = call.attrs.pad_width
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    if len(pw) != 2 * x.ndim:
        fail(call, f"expects two pad widths (before, after) per dimension of {fmt_sinfo(x)}, "
                   f"got {list(pw)}")
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, x.ndim, x.vdevice)
    mode = call.attrs.pad_mode or "constant"
    for i, d in enumerate(dims):
        if mode != "constant" and (pw[2 * i] or pw[2 * i + 1]) and \
                isinstance(d, IntImm) and d.value == 0:
            fail(call, f"cannot {mode}-pad axis {i} of {fmt_sinfo(x)} by "
                       f"({pw[2 * i]}, {pw[2 * i + 1]}): the axis is empty, and {mode} padding "
                       "copies its values (numpy raises too); pad it with pad_mode='constant'")
    out = [add(add(d, pw[2 * i]), pw[2 * i + 1]) for i, d in enumerate(dims)]
    return make_tensor(out, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.nn.pad", _infer_pad, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("data",), attrs_type=PadAttrs)


def pad(data: Expr, pad_width: Sequence[int], pad_value: float = 0.0,
        pad_mode: str = "constant") -> Call:
    """Pad every dimension by (before, after) from the flat list ``pad_width``."""
    flat: list[int] = []
    for p in pad_width:
        if isinstance(p, list | tuple):
            flat.extend(int(v) for v in p)
        else:
            flat.append(int(p))
    if pad_mode not in ("constant", "edge", "reflect"):
        raise ValueError(f"pad: pad_mode must be constant, edge or reflect, got {pad_mode!r}")
    return Call(Op.get("relax.nn.pad"), [data],
                PadAttrs(pad_width=tuple(flat), pad_value=float(pad_value), pad_mode=pad_mode))


# --------------------------------------------------------------------------- attention
def _infer_attention(call: Call, ctx) -> StructInfo:
    n = len(call.args)
    names = ["query", "key", "value", "bias"][:n]
    if n not in (3, 4):
        fail(call, f"expects 3 or 4 arguments (query, key, value[, bias]), got {n}")
    q, k, v, *rest = tensor_args(call, names)
    for s, name in ((q, "query"), (k, "key"), (v, "value")):
        if s.ndim not in (4, UNKNOWN_NDIM):
            fail(call, f"expects {name} to be 4-dimensional (batch, seq, heads, head_dim), "
                       f"got {fmt_sinfo(s)}")
    qd, kd, vd = shape_expr_values(q), shape_expr_values(k), shape_expr_values(v)
    if qd is None or kd is None or vd is None:
        return make_tensor(None, q.dtype, 4, q.vdevice)

    def same(a, b, what):
        if prove_not_equal(a, b, ctx):
            fail(call, f"{what} mismatch: {fmt_dim(a)} vs {fmt_dim(b)} (query {fmt_sinfo(q)}, "
                       f"key {fmt_sinfo(k)}, value {fmt_sinfo(v)})")

    same(qd[0], kd[0], "batch size of query and key")
    same(qd[0], vd[0], "batch size of query and value")
    same(qd[2], kd[2], "number of heads of query and key")
    same(kd[2], vd[2], "number of heads of key and value")
    same(qd[3], kd[3], "head dim of query and key")
    same(kd[1], vd[1], "sequence length of key and value")
    return make_tensor([qd[0], qd[1], qd[2], vd[3]], q.dtype, vdevice=q.vdevice)


register_op_rule("relax.nn.attention", _infer_attention, arguments=("query", "key", "value"),
                 attrs_type=AttentionAttrs)


def attention(query: Expr, key: Expr, value: Expr, bias: Expr | None = None,
              scale: float | None = None, causal_mask: str | None = None,
              window_size: int | None = None) -> Call:
    """Fused multi-head attention over (batch, seq, heads, head_dim) tensors."""
    if causal_mask not in (None, "TopLeft", "BottomRight"):
        raise ValueError(f"attention: causal_mask must be None, TopLeft or BottomRight, got "
                         f"{causal_mask!r}")
    args = [query, key, value] + ([bias] if bias is not None else [])
    return Call(Op.get("relax.nn.attention"), args,
                AttentionAttrs(scale=None if scale is None else float(scale),
                               causal_mask=causal_mask,
                               window_size=None if window_size is None else int(window_size)))
