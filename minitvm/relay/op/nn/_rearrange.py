"""Rearranging nn ops: ``depth_to_space``, ``space_to_depth``, ``mirror_pad``, ``dilate``.
References: ``minitvm.topi.reference.algorithm``."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....topi.shape_conditions import assume_positive, at_most, divides
from ....topi.utils import arith, is_static_dim
from ...expr import Call
from ..op import define_op
from ..type_relations import check_num_args, tensor_arg, type_str

__all__ = ["depth_to_space", "space_to_depth", "mirror_pad", "dilate"]


class SubPixelAttrs(Attrs):
    __slots__ = ()
    _fields = (("block_size", 1), ("layout", "NCHW"), ("mode", "DCR"))


class MirrorPadAttrs(Attrs):
    __slots__ = ()
    _fields = (("mode", "SYMMETRIC"), ("pad_width", ()))


class DilateAttrs(Attrs):
    __slots__ = ()
    _fields = (("strides", ()), ("dilation_value", 0.0))


def _nchw(x, layout, name):
    if layout not in ("NCHW", "NHWC") or len(x.shape) != 4:
        raise TypeError(f"{name}: expects 4-D NCHW or NHWC data, got {type_str(x)}")
    # (each dim an int, a symbolic size or ``Any``: a dynamic one passes through ``arith``)
    return x.shape if layout == "NCHW" else (x.shape[0], x.shape[3], x.shape[1], x.shape[2])


def _out(layout, n, c, h, w):
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def _depth_to_space_rel(arg_types, attrs):
    check_num_args("nn.depth_to_space", arg_types, 1)
    x = tensor_arg(arg_types, 0, "nn.depth_to_space")
    n, c, h, w = _nchw(x, attrs.layout, "nn.depth_to_space")
    b = int(attrs.block_size)
    if b < 1 or not divides(c, b * b):  # (symbolic channels: checked at each call)
        raise TypeError(f"nn.depth_to_space: channels {c} are not divisible by "
                        f"block_size^2 = {b * b}")
    if attrs.mode not in ("DCR", "CRD"):
        raise TypeError(f"nn.depth_to_space: mode must be DCR or CRD, got {attrs.mode!r}")
    if b == 1:
        return TensorType(x.shape, x.dtype)
    return TensorType(_out(attrs.layout, n, arith(lambda d: d // (b * b), c),
                           arith(lambda d: d * b, h), arith(lambda d: d * b, w)), x.dtype)


def _space_to_depth_rel(arg_types, attrs):
    check_num_args("nn.space_to_depth", arg_types, 1)
    x = tensor_arg(arg_types, 0, "nn.space_to_depth")
    n, c, h, w = _nchw(x, attrs.layout, "nn.space_to_depth")
    b = int(attrs.block_size)
    if b < 1 or not (divides(h, b) and divides(w, b)):
        raise TypeError(f"nn.space_to_depth: height {h} and width {w} must be divisible by "
                        f"block_size {b}")
    if b == 1:
        return TensorType(x.shape, x.dtype)
    return TensorType(_out(attrs.layout, n, arith(lambda d: d * (b * b), c),
                           arith(lambda d: d // b, h), arith(lambda d: d // b, w)), x.dtype)


def _mirror_pad_rel(arg_types, attrs):
    check_num_args("nn.mirror_pad", arg_types, 1)
    x = tensor_arg(arg_types, 0, "nn.mirror_pad")
    pw = [tuple(int(v) for v in p) for p in attrs.pad_width]
    if len(pw) != len(x.shape) or any(len(p) != 2 for p in pw):
        raise TypeError(f"nn.mirror_pad: pad_width needs one (before, after) pair per axis of "
                        f"{type_str(x)}, got {pw}")
    if attrs.mode not in ("SYMMETRIC", "REFLECT"):
        raise TypeError(f"nn.mirror_pad: mode must be SYMMETRIC or REFLECT, got {attrs.mode!r}")
    limit = 0 if attrs.mode == "SYMMETRIC" else 1
    out = []
    for d, (a, b) in zip(x.shape, pw, strict=True):
        # (a symbolic size must hold the widest pad plus the edge REFLECT skips: stated)
        if a < 0 or b < 0 or (max(a, b) and not at_most(max(a, b) + limit, d)):
            raise TypeError(f"nn.mirror_pad: padding {(a, b)} is too large for a dimension "
                            f"of size {d} in {attrs.mode} mode")
        out.append(arith(lambda v, p=a + b: v + p, d) if a + b else d)
    return TensorType(tuple(out), x.dtype)


def _dilate_rel(arg_types, attrs):
    check_num_args("nn.dilate", arg_types, 1)
    x = tensor_arg(arg_types, 0, "nn.dilate")
    strides = [int(s) for s in attrs.strides]
    if len(strides) != len(x.shape) or min(strides, default=1) < 1:
        raise TypeError(f"nn.dilate: needs one positive stride per axis of {type_str(x)}, got "
                        f"{strides}")
    for d, s in zip(x.shape, strides, strict=True):
        # ((d - 1) * s + 1 of an empty axis is negative: refused, or stated of a symbolic size)
        if s != 1 and is_static_dim(d) and d < 1:
            raise TypeError(f"nn.dilate: cannot dilate an empty axis by stride {s} "
                            f"({type_str(x)})")
        if s != 1:
            assume_positive(d)
    return TensorType(tuple(arith(lambda v, s=s: (v - 1) * s + 1, d) if s != 1 else d
                            for d, s in zip(x.shape, strides, strict=True)), x.dtype)


define_op("nn.depth_to_space", _depth_to_space_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=SubPixelAttrs, num_inputs=1, describe="Move channel blocks into space.")
define_op("nn.space_to_depth", _space_to_depth_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=SubPixelAttrs, num_inputs=1, describe="Move spatial blocks into channels.")
define_op("nn.mirror_pad", _mirror_pad_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=MirrorPadAttrs, num_inputs=1, describe="Pad by mirroring the edges.")
define_op("nn.dilate", _dilate_rel, pattern=OpPattern.INJECTIVE, attrs_type=DilateAttrs,
          num_inputs=1, describe="Insert dilation_value between elements.")


def depth_to_space(data, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> Call:
    return Call(Op.get("nn.depth_to_space"), [data],
                SubPixelAttrs(block_size=int(block_size), layout=layout, mode=mode))


def space_to_depth(data, block_size: int, layout: str = "NCHW") -> Call:
    return Call(Op.get("nn.space_to_depth"), [data],
                SubPixelAttrs(block_size=int(block_size), layout=layout))


def mirror_pad(data, pad_width, mode: str = "SYMMETRIC") -> Call:
    return Call(Op.get("nn.mirror_pad"), [data], MirrorPadAttrs(
        mode=mode, pad_width=tuple(tuple(int(v) for v in p) for p in pad_width)))


def dilate(data, strides, dilation_value: float = 0.0) -> Call:
    return Call(Op.get("nn.dilate"), [data], DilateAttrs(
        strides=tuple(int(s) for s in strides), dilation_value=float(dilation_value)))
