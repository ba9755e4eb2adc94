"""Core-ATen selection, logical and bit operators onto ``relax.op``: ``where``, ``~`` / ``&`` /
``|`` / ``^`` (logical on bool tensors, bitwise on integers), the shifts ``>>`` / ``<<``, and
``logical_and`` / ``logical_or`` / ``logical_xor`` / ``logical_not`` of any dtype (a NaN-safe
mask's ``|``: torch decomposes ``heaviside`` into one), always bool."""

from __future__ import annotations

import numpy as np

from ....frontend_common.bit_shift import shift
from ....frontend_common.torch_promote import tensors_dtype, with_number_dtype
from ... import op as _op
from ...expr import Constant, Expr, const
from .context import AtenContext, register


@register("where.self")
def _where(ctx: AtenContext, args):
    c, a, b = args
    like = a if isinstance(a, Expr) else b
    x, y = ctx.tensor(a, like), ctx.tensor(b, like)
    dx, dy = ctx.dtype(x), ctx.dtype(y)
    if dx != dy:  # (torch promotes the two branches: heaviside's float32 / int64 pair)
        target = tensors_dtype(dx, dy, ctx.ndim(x) == 0, ctx.ndim(y) == 0)
        x = x if dx == target else ctx.emit(_op.astype(x, target))
        y = y if dy == target else ctx.emit(_op.astype(y, target))
    return ctx.emit(_op.where(c, x, y))


@register("bitwise_not.default")
def _bitwise_not(ctx: AtenContext, args):
    """``~mask`` of a bool tensor is a logical not; of an integer one, the bitwise not."""
    x = args[0]
    fn = _op.logical_not if ctx.dtype(x) == "bool" else _op.bitwise_not
    return ctx.emit(fn(x))


def _bitwise(logical, bitwise):
    """``a & b`` (``|``, ``^``): of two bool tensors (a mask and a mask: a KAN's knot-interval
    indicator) the logical op, of integers the bitwise one; a Python operand takes the other's
    dtype."""

    def convert(ctx: AtenContext, args):
        a, b = args[0], args[1]
        like = a if isinstance(a, Expr) else b
        number = b if like is a else a
        if not isinstance(number, Expr):  # a Python int lifts a bool tensor to int64
            dt = with_number_dtype(ctx.dtype(like), number)
            like = like if dt == ctx.dtype(like) else ctx.emit(_op.astype(like, dt))
            a, b = (like, b) if isinstance(a, Expr) else (a, like)
        x, y = ctx.tensor(a, like), ctx.tensor(b, like)
        if ctx.dtype(x) != ctx.dtype(y):  # (two tensors: torch's promotion, a 0-d one weak)
            dt = tensors_dtype(ctx.dtype(x), ctx.dtype(y), ctx.ndim(x) == 0, ctx.ndim(y) == 0)
            x, y = (v if ctx.dtype(v) == dt else ctx.emit(_op.astype(v, dt)) for v in (x, y))
        both_bool = ctx.dtype(x) == "bool" and ctx.dtype(y) == "bool"
        return ctx.emit((logical if both_bool else bitwise)(x, y))

    return convert


for _kind in ("and", "or", "xor"):
    register(f"bitwise_{_kind}.Tensor", f"bitwise_{_kind}.Scalar")(
        _bitwise(getattr(_op, f"logical_{_kind}"), getattr(_op, f"bitwise_{_kind}")))


def _shift(left: bool):
    """``x >> y`` / ``x << y`` of integer tensors: the 4-bit unpacking of AWQ / GPTQ weights,
    ``(q >> 4) & 0xF``. Amounts outside [0, bits) shift every bit out, as torch does
    (``frontend_common.bit_shift``)."""

    def convert(ctx: AtenContext, args):
        a, b = args[0], args[1]
        like = a if isinstance(a, Expr) else b
        if any(isinstance(v, Expr) and not ctx.dtype(v).startswith(("int", "uint"))
               for v in (a, b)):
            raise ctx.fail("a bit shift is defined on integer tensors")
        known = b if not isinstance(b, Expr) else (
            b.data.numpy() if isinstance(b, Constant) else None)
        x, y = ctx.tensor(a, like), ctx.tensor(b, like)
        if ctx.dtype(x) != ctx.dtype(y):
            target = tensors_dtype(ctx.dtype(x), ctx.dtype(y), ctx.ndim(x) == 0,
                                   ctx.ndim(y) == 0)
            x, y = (v if ctx.dtype(v) == target else ctx.emit(_op.astype(v, target))
                    for v in (x, y))
        dt = ctx.dtype(x)
        return ctx.emit(shift(_op, x, y, left, dt, known,
                              lambda v: const(np.array(v, dt)), ctx.emit))

    return convert


register("__rshift__.Scalar", "__rshift__.Tensor", "bitwise_right_shift.Tensor",
         "bitwise_right_shift.Tensor_Scalar", "bitwise_right_shift.Scalar_Tensor")(_shift(False))
register("__lshift__.Scalar", "__lshift__.Tensor", "bitwise_left_shift.Tensor",
         "bitwise_left_shift.Tensor_Scalar", "bitwise_left_shift.Scalar_Tensor")(_shift(True))



def _truth(ctx: AtenContext, x):
    """``x`` as bool: nonzero is True, as torch's logical functions read any dtype."""
    if ctx.dtype(x) == "bool":
        return x
    return ctx.emit(_op.not_equal(x, ctx.tensor(0, x)))


def _logical(rop):
    def convert(ctx: AtenContext, args):
        return ctx.emit(rop(_truth(ctx, args[0]), _truth(ctx, args[1])))
    return convert


register("logical_and.default")(_logical(_op.logical_and))
register("logical_or.default")(_logical(_op.logical_or))
register("logical_xor.default")(_logical(_op.logical_xor))


@register("logical_not.default")
def _logical_not(ctx: AtenContext, args):
    """``logical_not`` of any dtype is bool (a float or integer operand is its ``!= 0``)."""
    return ctx.emit(_op.logical_not(_truth(ctx, args[0])))
