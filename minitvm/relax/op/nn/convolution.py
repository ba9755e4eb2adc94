"""1-D/2-D convolution and transposed convolution (any permutation of NCW/NCHW layouts)."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.op import Op, OpPattern
from ....ir.prim_expr import IntImm
from ....tir import expr as T
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._common import (
    add,
    binary_out_dtype,
    fail,
    floordiv,
    fmt_dim,
    fmt_sinfo,
    int_tuple,
    is_void,
    make_tensor,
    mul,
    out_vdevice,
    prove,
    prove_not_equal,
    simplify,
    sub,
    tensor_args,
)
from ..base import register_op_rule
from ..op_attrs import Conv1DAttrs, Conv1DTransposeAttrs, Conv2DAttrs, Conv2DTransposeAttrs
from ._layout import dims_per_layout, from_canonical, layout_perm, to_canonical

__all__ = ["conv1d", "conv1d_transpose", "conv2d", "conv2d_transpose", "padding_2d"]


def padding_2d(padding) -> tuple:
    """Padding as (top, left, bottom, right) from 1, 2 or 4 values (TVM's convention)."""
    if isinstance(padding, int | IntImm):
        p = int(padding)
        return (p, p, p, p)
    t = tuple(int(v) for v in padding)
    if len(t) == 1:
        return t * 4
    if len(t) == 2:
        return (t[0], t[1], t[0], t[1])
    if len(t) == 4:
        return t
    raise ValueError(f"padding must have 1, 2 or 4 values, got {t}")


def conv_out_dim(length, pad_total: int, dilation: int, kernel, stride: int, ctx,
                 ceil_mode: bool = False):
    """``(length + pad - dilation * (kernel - 1) - 1) // stride + 1`` (ceil'd if asked)."""
    num = sub(sub(add(length, pad_total), mul(dilation, sub(kernel, 1))), 1)
    if ceil_mode:
        num = add(num, stride - 1)
    return simplify(add(floordiv(num, stride), 1), ctx)


def check_windows(call: Call, what: str, sizes, windows, outs, strides, dilation) -> None:
    """Refuse a window that cannot slide over the input: a stride, dilation or window size
    below 1, or (all known) an output size below 1 (the window does not fit the padded
    input; ``conv_out_dim`` would give 0 or a negative size)."""
    for q, (size, k, o) in enumerate(zip(sizes, windows, outs, strict=True)):
        k = k.value if isinstance(k, IntImm) else k
        o = o.value if isinstance(o, IntImm) else o
        if int(strides[q]) < 1 or int(dilation[q]) < 1:
            fail(call, f"strides and dilation must be at least 1, got strides "
                       f"{tuple(strides)}, dilation {tuple(dilation)}")
        if isinstance(k, int) and k < 1:
            fail(call, f"the {what} has size {k} along spatial axis {q}; it must be at least 1")
        if isinstance(o, int) and o < 1:
            fail(call, f"the {what} (size {k}, dilation {dilation[q]}) does not fit spatial "
                       f"axis {q} of size {fmt_dim(size)} with its padding: the output would "
                       f"have {o} elements")


def _infer_conv(call: Call, ctx, spatial: str, transpose: bool) -> StructInfo:
    """Conv / transposed conv over ``spatial`` axes ("W" or "HW") in any layout permutation."""
    data, weight = tensor_args(call, ["data", "weight"])
    a = call.attrs
    nsp = len(spatial)
    kcanon = ("IO" if transpose else "OI") + spatial
    dperm = layout_perm(call, a.data_layout, "NC" + spatial, "data")
    wperm = layout_perm(call, a.kernel_layout, kcanon, "kernel")
    operm = layout_perm(call, a.out_layout, "NC" + spatial, "output")
    dd = dims_per_layout(call, data, a.data_layout, "data")
    wd = dims_per_layout(call, weight, a.kernel_layout, "weight")
    dtype = binary_out_dtype(call, data, weight) if is_void(a.out_dtype) else a.out_dtype
    vdevice = out_vdevice(data, weight)
    if dd is None or wd is None:
        return make_tensor(None, dtype, nsp + 2, vdevice)
    n, c, *sizes = to_canonical(dd, dperm)
    k0, k1, *ksizes = to_canonical(wd, wperm)
    groups = a.groups
    if transpose:
        i, o = k0, k1
        if prove_not_equal(c, i, ctx):
            fail(call, f"the data has {fmt_dim(c)} channels but the weight expects "
                       f"{fmt_dim(i)} input channels (data {fmt_sinfo(data)}, weight "
                       f"{fmt_sinfo(weight)})")
        divided, what = i, "input"
        out_c = mul(o, groups)
    else:
        o, i = k0, k1
        if prove_not_equal(c, mul(i, groups), ctx):
            fail(call, f"the data has {fmt_dim(c)} channels but the weight expects "
                       f"{fmt_dim(i)} input channels x {groups} groups (data "
                       f"{fmt_sinfo(data)}, weight {fmt_sinfo(weight)})")
        divided, what = o, "output"
        out_c = o
    if prove(T.NE(T.FloorMod(divided, IntImm(divided.dtype, groups)),
                  IntImm(divided.dtype, 0)), ctx):
        fail(call, f"the number of {what} channels {fmt_dim(divided)} must be divisible by "
                   f"the number of groups {groups} (weight {fmt_sinfo(weight)})")
    out_sizes = []
    for d in range(nsp):
        pad = a.padding[d] + a.padding[d + nsp]
        if transpose:
            v = sub(mul(sub(sizes[d], 1), a.strides[d]), pad)
            v = add(add(add(v, mul(a.dilation[d], sub(ksizes[d], 1))), a.output_padding[d]), 1)
            out_sizes.append(simplify(v, ctx))
        else:
            out_sizes.append(conv_out_dim(sizes[d], pad, a.dilation[d], ksizes[d],
                                          a.strides[d], ctx))
    if not transpose:
        check_windows(call, "kernel", sizes, ksizes, out_sizes, a.strides, a.dilation)
    return make_tensor(from_canonical([n, out_c, *out_sizes], operm), dtype, vdevice=vdevice)


def _infer_conv1d(call: Call, ctx) -> StructInfo:
    return _infer_conv(call, ctx, "W", False)


def _infer_conv2d(call: Call, ctx) -> StructInfo:
    return _infer_conv(call, ctx, "HW", False)


def _infer_conv1d_transpose(call: Call, ctx) -> StructInfo:
    return _infer_conv(call, ctx, "W", True)


def _infer_conv2d_transpose(call: Call, ctx) -> StructInfo:
    return _infer_conv(call, ctx, "HW", True)


register_op_rule("relax.nn.conv1d", _infer_conv1d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                 num_inputs=2, arguments=("data", "weight"), attrs_type=Conv1DAttrs)
register_op_rule("relax.nn.conv2d", _infer_conv2d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                 num_inputs=2, arguments=("data", "weight"), attrs_type=Conv2DAttrs)
register_op_rule("relax.nn.conv1d_transpose", _infer_conv1d_transpose,
                 pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2,
                 arguments=("data", "weight"), attrs_type=Conv1DTransposeAttrs)
register_op_rule("relax.nn.conv2d_transpose", _infer_conv2d_transpose,
                 pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2,
                 arguments=("data", "weight"), attrs_type=Conv2DTransposeAttrs)


def _conv_attrs(strides, padding, dilation):
    return (int_tuple(strides, 2, "strides"), padding_2d(padding),
            int_tuple(dilation, 2, "dilation"))


def conv2d(data: Expr, weight: Expr, strides: int | Sequence[int] = (1, 1),
           padding: int | Sequence[int] = (0, 0), dilation: int | Sequence[int] = (1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """2-D convolution of ``data`` with ``weight``."""
    strides, padding, dilation = _conv_attrs(strides, padding, dilation)
    if int(groups) < 1:
        raise ValueError(f"conv2d: groups must be positive, got {groups}")
    attrs = Conv2DAttrs(strides=strides, padding=padding, dilation=dilation, groups=int(groups),
                        data_layout=data_layout, kernel_layout=kernel_layout,
                        out_layout=data_layout if out_layout is None else out_layout,
                        out_dtype="void" if out_dtype is None else str(out_dtype))
    return Call(Op.get("relax.nn.conv2d"), [data, weight], attrs)


def conv2d_transpose(data: Expr, weight: Expr, strides: int | Sequence[int] = (1, 1),
                     padding: int | Sequence[int] = (0, 0),
                     output_padding: int | Sequence[int] = (0, 0),
                     dilation: int | Sequence[int] = (1, 1), groups: int = 1,
                     data_layout: str = "NCHW", kernel_layout: str = "IOHW",
                     out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """2-D transposed convolution (the gradient of conv2d with respect to its input)."""
    strides, padding, dilation = _conv_attrs(strides, padding, dilation)
    output_padding = int_tuple(output_padding, 2, "output_padding")
    for k in range(2):
        if output_padding[k] >= strides[k] and output_padding[k] >= dilation[k]:
            raise ValueError(f"conv2d_transpose: output_padding {output_padding} must be "
                             f"smaller than the strides {strides} or the dilation {dilation}")
    attrs = Conv2DTransposeAttrs(
        strides=strides, padding=padding, output_padding=output_padding, dilation=dilation,
        groups=int(groups), data_layout=data_layout, kernel_layout=kernel_layout,
        out_layout=data_layout if out_layout is None else out_layout,
        out_dtype="void" if out_dtype is None else str(out_dtype))
    return Call(Op.get("relax.nn.conv2d_transpose"), [data, weight], attrs)


def _padding_1d(padding) -> tuple:
    if isinstance(padding, int | IntImm):
        return (int(padding), int(padding))
    t = tuple(int(v) for v in padding)
    if len(t) == 1:
        return t * 2
    if len(t) == 2:
        return t
    raise ValueError(f"padding must have 1 or 2 values, got {t}")


def conv1d(data: Expr, weight: Expr, strides: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
           groups: int = 1, data_layout: str = "NCW", kernel_layout: str = "OIW",
           out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """1-D convolution of ``data`` with ``weight``."""
    attrs = Conv1DAttrs(strides=int_tuple(strides, 1, "strides"), padding=_padding_1d(padding),
                        dilation=int_tuple(dilation, 1, "dilation"), groups=int(groups),
                        data_layout=data_layout, kernel_layout=kernel_layout,
                        out_layout=data_layout if out_layout is None else out_layout,
                        out_dtype="void" if out_dtype is None else str(out_dtype))
    return Call(Op.get("relax.nn.conv1d"), [data, weight], attrs)


def conv1d_transpose(data: Expr, weight: Expr, strides: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0,
                     dilation: int | Sequence[int] = 1, groups: int = 1,
                     data_layout: str = "NCW", kernel_layout: str = "IOW",
                     out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """1-D transposed convolution."""
    strides = int_tuple(strides, 1, "strides")
    dilation = int_tuple(dilation, 1, "dilation")
    output_padding = int_tuple(output_padding, 1, "output_padding")
    if output_padding[0] >= strides[0] and output_padding[0] >= dilation[0]:
        raise ValueError(f"conv1d_transpose: output_padding {output_padding} must be smaller "
                         f"than the strides {strides} or the dilation {dilation}")
    attrs = Conv1DTransposeAttrs(
        strides=strides, padding=_padding_1d(padding), output_padding=output_padding,
        dilation=dilation, groups=int(groups), data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=data_layout if out_layout is None else out_layout,
        out_dtype="void" if out_dtype is None else str(out_dtype))
    return Call(Op.get("relax.nn.conv1d_transpose"), [data, weight], attrs)
