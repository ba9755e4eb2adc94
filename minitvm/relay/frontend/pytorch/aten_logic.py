"""ATen converters for the boolean and bitwise operators: ``~``, ``&``, ``|``, ``^`` (which
TorchScript records as ``bitwise_not``, ``__and__``, ``__or__``, ``__xor__``), their
``bitwise_*`` and in-place spellings, ``logical_and`` / ``logical_or`` / ``logical_xor``, and
the shifts ``>>`` / ``<<``.

On bool tensors the operators are the logical ops; on integer tensors the bitwise ones, a bool
operand promoted to the other's integer type as torch does. The ``logical_*`` functions take any
dtype (non-zero is true) and give bool.
"""

from __future__ import annotations

import operator

from ....frontend_common.bit_shift import shift
from ....frontend_common.torch_promote import with_number_dtype
from ... import expr as _expr
from ... import op as _op
from .aten import _is_expr, _pair, _scalar_like, register

_OPS = {  # name: (logical op, bitwise op, python op for two constants)
    "and": (_op.logical_and, _op.bitwise_and, operator.and_),
    "or": (_op.logical_or, _op.bitwise_or, operator.or_),
    "xor": (_op.logical_xor, _op.bitwise_xor, operator.xor),
}


def _bitwise(kind):
    logical, bitwise, py = _OPS[kind]

    def convert(ctx, args):
        a, b = args[0], args[1]
        if not _is_expr(a) and not _is_expr(b):
            return py(a, b)
        if not _is_expr(a) or not _is_expr(b):  # a Python int lifts a bool tensor to int64
            t, n = (a, b) if _is_expr(a) else (b, a)
            dt = with_number_dtype(ctx.dtype(t), n)
            t = t if dt == ctx.dtype(t) else _op.cast(t, dt)
            a, b = (t, n) if _is_expr(a) else (n, t)
        dts = {ctx.dtype(v) for v in (a, b) if _is_expr(v)}
        if any(d.startswith("float") for d in dts):
            raise ctx.fail(f"{kind} is defined on bool and integer tensors, got {sorted(dts)}")
        if dts == {"bool"}:
            return logical(*_pair(ctx, a, b))
        if "bool" in dts and len(dts) > 1:  # bool & int: the bool promoted to the int type
            other = next(d for d in dts if d != "bool")
            a, b = (_op.cast(v, other) if _is_expr(v) and ctx.dtype(v) == "bool" else v
                    for v in (a, b))
        return bitwise(*_pair(ctx, a, b))

    return convert


def _truth(ctx, v):
    """A tensor as bool (non-zero is true); Python numbers pass through as bools."""
    if not _is_expr(v):
        return bool(v)
    if ctx.dtype(v) == "bool":
        return v
    return _op.not_equal(v, _scalar_like(ctx, 0, v))


def _logical(kind):
    logical, _, py = _OPS[kind]

    def convert(ctx, args):
        a, b = _truth(ctx, args[0]), _truth(ctx, args[1])
        if not _is_expr(a) and not _is_expr(b):
            return py(a, b)
        return logical(*_pair(ctx, a, b))

    return convert


for _kind in _OPS:
    register(f"__{_kind}__", f"__i{_kind}__", f"bitwise_{_kind}", f"bitwise_{_kind}_")(
        _bitwise(_kind))
    register(f"logical_{_kind}", f"logical_{_kind}_")(_logical(_kind))


@register("bitwise_not", "bitwise_not_")
def _bitwise_not(ctx, args):
    x = args[0]
    if not _is_expr(x):
        return ~x
    dt = ctx.dtype(x)
    if dt == "bool":
        return _op.logical_not(x)
    if dt.startswith("float"):
        raise ctx.fail(f"bitwise_not is defined on bool and integer tensors, got {dt}")
    return _op.bitwise_not(x)


def _shift(left):
    """``x >> y`` / ``x << y`` of integer tensors (``__rshift__``, ``bitwise_right_shift``):
    the 4-bit unpacking of AWQ / GPTQ weights, ``(q >> 4) & 0xF``. Amounts outside
    [0, bits) shift every bit out, as torch does (``frontend_common.bit_shift``)."""

    def convert(ctx, args):
        a, b = args[0], args[1]
        if not _is_expr(a) and not _is_expr(b):
            return a << b if left else a >> b
        dts = {ctx.dtype(v) for v in (a, b) if _is_expr(v)}
        if any(not d.startswith(("int", "uint")) for d in dts):
            raise ctx.fail(f"a bit shift is defined on integer tensors, got {sorted(dts)}")
        known = b if not _is_expr(b) else (b.data.numpy() if isinstance(b, _expr.Constant)
                                           else None)
        x, y = _pair(ctx, a, b)
        dt = ctx.dtype(x)
        return shift(_op, x, y, left, dt, known, lambda v: _scalar_like(ctx, v, x))

    return convert


register("__rshift__", "__irshift__", "bitwise_right_shift", "bitwise_right_shift_")(
    _shift(False))
register("__lshift__", "__ilshift__", "bitwise_left_shift", "bitwise_left_shift_")(
    _shift(True))
