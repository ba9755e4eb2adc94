"""TVM's ``topi`` broadcast functions on te tensors (``topi.add``, ``topi.broadcast_to``...).

Unlike the registered ``fcompute``s of ``topi.tensor`` (static shapes, Relay's calling
convention), these take te tensors (or scalar PrimExprs) directly, accept symbolic dimensions and
name their stages as TVM does (``T_add`` over axes ``ax0, ax1``...), so Relax's legalization
prints what TVM prints.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .int_power import int_power

__all__ = [
    "broadcast_shape", "broadcast_load", "broadcast_to", "binary", "ax_names", "const_like",
    "is_one", "int_power", "int_or_float_power", "BINARY_FUNCS",
]


def ax_names(n: int) -> list[str]:
    """TVM's default axis names of a C++ topi compute: ``ax0, ax1, ...``."""
    return [f"ax{k}" for k in range(n)]


def is_one(d) -> bool:
    return isinstance(d, E.IntImm) and d.value == 1


def const_like(value, dtype: str) -> E.PrimExpr:
    """``value`` as an immediate of ``dtype`` (float or integer)."""
    if dtype.startswith(("float", "bfloat")):
        return E.FloatImm(dtype, float(value))
    if dtype == "bool":
        return E.IntImm("bool", int(bool(value)))
    return E.IntImm(dtype, int(value))


def _same(a, b) -> bool:
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):
        return a.value == b.value
    from ..ir.structural import structural_equal

    return a is b or structural_equal(a, b)


def broadcast_shape(*shapes) -> list:
    """numpy broadcasting of shapes of PrimExpr dims (a dim 1 stretches; equal dims stay)."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        dims = [s[len(s) - nd + k] for s in shapes if len(s) - nd + k >= 0]
        pick = None
        for d in dims:
            if is_one(d):
                continue
            if pick is None:
                pick = d
            elif not _same(pick, d):
                if isinstance(pick, E.IntImm) and isinstance(d, E.IntImm):
                    raise ValueError(f"cannot broadcast shapes {[list(s) for s in shapes]}")
                # undecidable symbolic pair: TVM keeps the first non-constant one
                pick = pick if not isinstance(pick, E.IntImm) else d
        out.append(pick if pick is not None else dims[0])
    return out


def broadcast_load(t, out_idx, out_shape=None):
    """``t`` read at output element ``out_idx``: a dim 1 against a larger output dim reads 0."""
    if isinstance(t, E.PrimExpr):
        return t
    nd = len(t.shape)
    if nd == 0:
        return t[()]
    lead = len(out_idx) - nd
    idx = []
    for k in range(nd):
        o = out_idx[lead + k]
        od = None if out_shape is None else out_shape[lead + k]
        if is_one(t.shape[k]) and not is_one(od):
            idx.append(E.IntImm(o.dtype, 0))
        else:
            idx.append(o)
    return t[tuple(idx)]


def _shape_of(x) -> list:
    return [] if isinstance(x, E.PrimExpr) else list(x.shape)


def _dtype_of(x) -> str:
    return x.dtype


def _logical(f):
    """A logical op of the operands' truths, 0 / 1 in their dtype (bool for bools)."""
    return lambda a, b: tir_op.same_dtype(f(a, b), a.dtype)


def _floor_div(a, b):
    if a.dtype.startswith("float"):
        return tir_op.floor(a / b)
    return E.FloorDiv(a, b)


def float_floor_mod(a, b):
    """numpy's float ``mod``: ``fmod`` moved into ``b``'s sign, a zero result with ``b``'s
    sign (``a - floor(a / b) * b`` overflows to inf when ``a / b`` does)."""
    r = tir_op.fmod(a, b)
    zero = E.FloatImm(r.dtype, 0.0)
    wrong_sign = E.Or(E.And(E.LT(r, zero), E.GT(b, zero)), E.And(E.GT(r, zero), E.LT(b, zero)))
    moved = E.Select(wrong_sign, r + b, r)
    return E.Select(E.EQ(moved, zero), tir_op.copysign(zero, b), moved)


def _floor_mod(a, b):
    if a.dtype.startswith("float"):
        return float_floor_mod(a, b)
    return E.FloorMod(a, b)


def _divide(a, b):
    return a / b if a.dtype.startswith("float") else E.Div(a, b)


def int_or_float_power(a, b):
    """``a ** b``: the llvm intrinsic for floats, ``int_power`` for integers."""
    if a.dtype.startswith(("int", "uint")):
        return int_power(a, b)
    return tir_op.power(a, b)


#: name -> (scalar function, TVM's stage name)
BINARY_FUNCS = {
    "add": (lambda a, b: a + b, "T_add"),
    "subtract": (lambda a, b: a - b, "T_subtract"),
    "multiply": (lambda a, b: a * b, "T_multiply"),
    "divide": (_divide, "T_divide"),
    "floor_divide": (_floor_div, "T_floor_divide"),
    "floor_mod": (_floor_mod, "T_floor_mod"),
    "mod": (lambda a, b: E.Mod(a, b) if not a.dtype.startswith("float") else tir_op.fmod(a, b),
            "T_mod"),
    "power": (int_or_float_power, "T_power"),
    "maximum": (E.Max, "T_maximum"),
    "minimum": (E.Min, "T_minimum"),
    "equal": (E.EQ, "T_equal"),
    "not_equal": (E.NE, "T_not_equal"),
    "less": (E.LT, "T_less"),
    "less_equal": (E.LE, "T_less_equal"),
    "greater": (E.GT, "T_greater"),
    "greater_equal": (E.GE, "T_greater_equal"),
    "logical_and": (_logical(tir_op.logical_and), "T_logical_and"),
    "logical_or": (_logical(tir_op.logical_or), "T_logical_or"),
    "logical_xor": (_logical(tir_op.logical_xor), "T_logical_xor"),
    "bitwise_and": (tir_op.bitwise_and, "T_bitwise_and"),
    "bitwise_or": (tir_op.bitwise_or, "T_bitwise_or"),
    "bitwise_xor": (tir_op.bitwise_xor, "T_bitwise_xor"),
    "left_shift": (tir_op.shift_left, "T_left_shift"),
    "right_shift": (tir_op.shift_right, "T_right_shift"),
}


def binary(name: str, lhs, rhs, out_shape=None, out_dtype: str | None = None):
    """The broadcast binary op ``name`` (a key of ``BINARY_FUNCS``) of two te tensors or scalar
    PrimExprs; ``out_shape`` (the caller's inferred shape) overrides the broadcast rule for
    undecidable symbolic dims."""
    f, stage = BINARY_FUNCS[name]
    shape = list(out_shape) if out_shape is not None else broadcast_shape(_shape_of(lhs),
                                                                          _shape_of(rhs))

    def body(*i):
        a = broadcast_load(lhs, i, shape)
        b = broadcast_load(rhs, i, shape)
        if a.dtype != b.dtype:
            a, b = E._unify(a, b)
        v = f(a, b)
        if out_dtype is not None and v.dtype != out_dtype:
            v = E.Cast(out_dtype, v)
        return v

    if not shape:
        return te.compute((), lambda: body(), name=stage)
    return te.compute(shape, body, name=stage, varargs_names=ax_names(len(shape)))


def _binary_api(name: str):
    def fn(lhs, rhs, out_shape=None):
        return binary(name, lhs, rhs, out_shape)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``topi.{name}``: broadcast {name} of two tensors (or a tensor and a scalar)."
    return fn


for _n in BINARY_FUNCS:
    globals()[_n] = _binary_api(_n)
    __all__.append(_n)


def broadcast_to(x, shape):
    """``topi.broadcast_to``: ``x`` stretched to ``shape`` (stage ``T_broadcast_to``)."""
    shape = [E._to_expr(s, "int64") for s in shape]
    return te.compute(shape, lambda *i: broadcast_load(x, i, shape), name="T_broadcast_to",
                      varargs_names=ax_names(len(shape)))
