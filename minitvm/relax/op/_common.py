"""Helpers shared by the Relax op families: argument checks, axes, symbolic dims, broadcasting.

Symbolic dimensions are compared with ``minitvm.arith.Analyzer`` when that module is present;
otherwise with structural equality plus a small linear-form folder (``fallback_simplify``), so a
dimension is only declared unequal when that is provable (two different constants).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...ir.prim_expr import FloatImm, IntImm, PrimExpr
from ...ir.structural import structural_equal
from ...tir import expr as T
from ...tir.stmt_functor import expr_children, post_order, with_children
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    as_dim,
)
from .base import StructInfoError, StructInfoTypeError

UNKNOWN_NDIM = -1

try:  # the symbolic arithmetic module may not have landed yet
    from ...arith import Analyzer as _Analyzer
except ImportError:  # pragma: no cover - depends on the tree
    _Analyzer = None

_DEFAULT_ANALYZER = None


# --------------------------------------------------------------------------- errors, formatting
def op_name(call: Call) -> str:
    return str(getattr(call.op, "name", call.op))


def fail(call: Call, msg: str, type_error: bool = False):
    """Raise a StructInfoError about ``call`` (message starts with the op name)."""
    cls = StructInfoTypeError if type_error else StructInfoError
    raise cls(f"{op_name(call)}: {msg}")


def fmt_dim(d) -> str:
    if isinstance(d, IntImm):
        return str(d.value)
    if isinstance(d, int):
        return str(d)
    return re.sub(r"T\.int(?:64|32)\((-?\d+)\)", r"\1", repr(d))


def fmt_shape(values) -> str:
    if values is None:
        return "?"
    inner = ", ".join(fmt_dim(v) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


def fmt_sinfo(s) -> str:
    """A short TVMScript-like rendering used in error messages."""
    if s is None:
        return "<no struct info>"
    if isinstance(s, TensorStructInfo):
        if isinstance(s.shape, ShapeExpr):
            return f'R.Tensor({fmt_shape(s.shape.values)}, dtype="{s.dtype}")'
        if s.shape is not None:
            return f'R.Tensor({getattr(s.shape, "name_hint", "shape")}, dtype="{s.dtype}")'
        return f'R.Tensor(ndim={s.ndim}, dtype="{s.dtype}")'
    if isinstance(s, ShapeStructInfo):
        return f"R.Shape({fmt_shape(s.values)})" if s.values is not None else \
            f"R.Shape(ndim={s.ndim})"
    if isinstance(s, PrimStructInfo):
        return f'R.Prim("{s.dtype}")'
    if isinstance(s, TupleStructInfo):
        return "R.Tuple(" + ", ".join(fmt_sinfo(f) for f in s.fields) + ")"
    return type(s).__name__


# --------------------------------------------------------------------------- argument access
def check_num_args(call: Call, n: int | Sequence[int]) -> None:
    allowed = (n,) if isinstance(n, int) else tuple(n)
    if len(call.args) not in allowed:
        want = " or ".join(str(a) for a in allowed)
        fail(call, f"expects {want} arguments, but was called with {len(call.args)}")


def arg_sinfo(call: Call, i: int) -> StructInfo:
    a = call.args[i]
    s = getattr(a, "struct_info_", None)
    if s is None:
        s = getattr(a, "_checked_type", None)
    if not isinstance(s, StructInfo):
        fail(call, f"argument {i} ({type(a).__name__}) has no struct info; normalize it first "
                   "(BlockBuilder.normalize)")
    return s


def tensor_arg(call: Call, i: int, name: str = "") -> TensorStructInfo:
    s = arg_sinfo(call, i)
    if not isinstance(s, TensorStructInfo):
        label = f" ({name})" if name else ""
        fail(call, f"requires argument {i}{label} to be a tensor, but it is {fmt_sinfo(s)}",
             type_error=True)
    return s


def tensor_args(call: Call, names: Sequence[str]) -> list[TensorStructInfo]:
    check_num_args(call, len(names))
    return [tensor_arg(call, i, n) for i, n in enumerate(names)]


def tuple_tensor_fields(call: Call, i: int) -> list[TensorStructInfo]:
    s = arg_sinfo(call, i)
    if not isinstance(s, TupleStructInfo):
        fail(call, f"expects a tuple of tensors as argument {i}, got {fmt_sinfo(s)}",
             type_error=True)
    for f in s.fields:
        if not isinstance(f, TensorStructInfo):
            fail(call, f"expects a tuple of tensors as argument {i}, got {fmt_sinfo(s)}",
                 type_error=True)
    return list(s.fields)


def shape_expr_values(s: TensorStructInfo) -> tuple | None:
    """The dims of a tensor whose shape is a literal ShapeExpr, else None (like TVM's
    ``shape.as<ShapeExprNode>()``)."""
    return tuple(s.shape.values) if isinstance(s.shape, ShapeExpr) else None


def shape_values(s: TensorStructInfo) -> tuple | None:
    """The dims of a tensor when known, from a ShapeExpr or a shape Var's struct info."""
    if isinstance(s.shape, ShapeExpr):
        return tuple(s.shape.values)
    if isinstance(s.shape, Expr):
        ss = s.shape.struct_info_
        if isinstance(ss, ShapeStructInfo) and ss.values is not None:
            return tuple(ss.values)
    return None


def make_tensor(shape, dtype: str, ndim: int = UNKNOWN_NDIM, vdevice=None) -> TensorStructInfo:
    """TensorStructInfo from dims (list/tuple), a shape Expr, or None (unknown, with ``ndim``)."""
    if shape is None:
        return TensorStructInfo(None, dtype, vdevice, ndim)
    if isinstance(shape, Expr):
        return TensorStructInfo(shape, dtype, vdevice)
    return TensorStructInfo(ShapeExpr(list(shape)), dtype, vdevice)


def with_dtype(s: TensorStructInfo, dtype: str) -> TensorStructInfo:
    """``s`` with another dtype (same shape object, ndim and vdevice)."""
    if s.dtype == dtype:
        return s
    return TensorStructInfo(s.shape, dtype, s.vdevice, s.ndim if s.shape is None else -1)


# --------------------------------------------------------------------------- dtypes
def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat")) or "float8" in dtype


def is_int(dtype: str) -> bool:
    return dtype.startswith("int")


def is_uint(dtype: str) -> bool:
    return dtype.startswith("uint")


def is_void(dtype: str) -> bool:
    return dtype == "void"


def binary_out_dtype(call: Call, a: StructInfo, b: StructInfo) -> str:
    da, db = getattr(a, "dtype", "void"), getattr(b, "dtype", "void")
    if is_void(da) or is_void(db):
        return "void"
    if da != db:
        fail(call, f"data types {da} and {db} must be equal for binary operators "
                   f"(got {fmt_sinfo(a)} and {fmt_sinfo(b)})")
    return da


def out_vdevice(a, b):
    va, vb = getattr(a, "vdevice", None), getattr(b, "vdevice", None)
    return va if va is not None else vb


# --------------------------------------------------------------------------- axes
def normalize_axis(call: Call, ndim: int, axis: int) -> int:
    return normalize_axes(call, ndim, [axis])[0]


def normalize_axes(call: Call, ndim: int, axes) -> list[int]:
    """Axes made non-negative, checked to be in range and distinct."""
    out: list[int] = []
    seen: set[int] = set()
    for a in axes:
        a = int(a)
        if a < -ndim or a >= ndim:
            fail(call, f"axis {a} is out of range for a tensor of {ndim} dimensions (axes must "
                       f"be in [{-ndim}, {ndim}))")
        if a < 0:
            a += ndim
        if a in seen:
            fail(call, f"axes must be distinct, but axis {a} is given more than once")
        seen.add(a)
        out.append(a)
    return out


# --------------------------------------------------------------------------- symbolic dims
def is_const(d, value: int | None = None) -> bool:
    return isinstance(d, IntImm) and (value is None or d.value == value)


def _ctx_analyzer(ctx):
    global _DEFAULT_ANALYZER
    if _Analyzer is None:
        return None
    for name in ("analyzer", "get_analyzer"):
        a = getattr(ctx, name, None) if ctx is not None else None
        if callable(a) and name == "get_analyzer":
            a = a()
        if a is not None and hasattr(a, "can_prove_equal"):
            return a
    if _DEFAULT_ANALYZER is None:
        _DEFAULT_ANALYZER = _Analyzer()
    return _DEFAULT_ANALYZER


def prove_equal(a, b, ctx=None) -> bool:
    """Whether dims ``a`` and ``b`` are provably equal."""
    a, b = as_dim(a), as_dim(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    if a is b or structural_equal(a, b):
        return True
    an = _ctx_analyzer(ctx)
    if an is not None:
        return bool(an.can_prove_equal(a, b))
    return structural_equal(fallback_simplify(a), fallback_simplify(b))


def prove_not_equal(a, b, ctx=None) -> bool:
    """Whether dims ``a`` and ``b`` are provably different."""
    a, b = as_dim(a), as_dim(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value != b.value
    an = _ctx_analyzer(ctx)
    if an is not None and hasattr(an, "can_prove"):
        return bool(an.can_prove(T.NE(a, b)))
    diff = fallback_simplify(T.Sub(a, b))
    return isinstance(diff, IntImm) and diff.value != 0


def prove(cond, ctx=None) -> bool:
    """Whether boolean PrimExpr ``cond`` is provably true (constants, or via arith)."""
    if isinstance(cond, bool):
        return cond
    cond = fallback_simplify(cond)
    if isinstance(cond, IntImm):
        return bool(cond.value)
    an = _ctx_analyzer(ctx)
    if an is not None and hasattr(an, "can_prove"):
        return bool(an.can_prove(cond))
    return False


def simplify(e, ctx=None) -> PrimExpr:
    """Simplify a dim expression (arith when available, else linear folding)."""
    e = as_dim(e)
    an = _ctx_analyzer(ctx)
    if an is not None and hasattr(an, "simplify"):
        return an.simplify(e)
    return fallback_simplify(e)


def _imm(dtype: str, v: int) -> IntImm:
    return IntImm(dtype, int(v))


# TVM's PrimExpr operators fold constants and identities (``1 * n`` is ``n``); these do too.
def mul(a, b) -> PrimExpr:
    a, b = as_dim(a), as_dim(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return _imm(a.dtype, a.value * b.value)
    if is_const(a, 1):
        return b
    if is_const(b, 1):
        return a
    if is_const(a, 0) or is_const(b, 0):
        return _imm(a.dtype, 0)
    return T.Mul(a, b)


def add(a, b) -> PrimExpr:
    a, b = as_dim(a), as_dim(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return _imm(a.dtype, a.value + b.value)
    if is_const(a, 0):
        return b
    if is_const(b, 0):
        return a
    return T.Add(a, b)


def sub(a, b) -> PrimExpr:
    a, b = as_dim(a), as_dim(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return _imm(a.dtype, a.value - b.value)
    if is_const(b, 0):
        return a
    return T.Sub(a, b)


def floordiv(a, b) -> PrimExpr:
    a, b = as_dim(a), as_dim(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm) and b.value != 0:
        return _imm(a.dtype, a.value // b.value)
    if is_const(b, 1):
        return a
    return T.FloorDiv(a, b)


def shape_product(values) -> PrimExpr:
    """The product of dims, folding constants as TVM's operators do."""
    prod: PrimExpr = IntImm("int64", 1)
    for v in values:
        prod = mul(prod, v)
    return prod


# --------------------------------------------------------------------------- fallback simplifier
def _lin_atom(e):
    return ([(e, 1)], 0)


def _lin_add(x, y, sign: int = 1):
    terms = list(x[0])
    for atom, c in y[0]:
        for k, (other, oc) in enumerate(terms):
            if other is atom or structural_equal(other, atom):
                terms[k] = (other, oc + sign * c)
                break
        else:
            terms.append((atom, sign * c))
    return ([(a, c) for a, c in terms if c != 0], x[1] + sign * y[1])


def _lin_scale(x, k: int):
    if k == 0:
        return ([], 0)
    return ([(a, c * k) for a, c in x[0]], x[1] * k)


def _lin_build(x, dtype: str) -> PrimExpr:
    terms, const = x
    out = None
    for atom, c in terms:
        if out is None:
            out = atom if c == 1 else T.Mul(atom, _imm(dtype, c))
        elif c > 0:
            out = T.Add(out, atom if c == 1 else T.Mul(atom, _imm(dtype, c)))
        else:
            out = T.Sub(out, atom if c == -1 else T.Mul(atom, _imm(dtype, -c)))
    if out is None:
        return _imm(dtype, const)
    if const > 0:
        out = T.Add(out, _imm(dtype, const))
    elif const < 0:
        out = T.Sub(out, _imm(dtype, -const))
    return out


def fallback_simplify(e) -> PrimExpr:
    """Fold integer dim expressions into ``sum(coeff * atom) + const`` form.

    Handles +, -, * by constants, exact floordiv/floormod by constants and min/max of
    constants; anything else becomes an atom (with simplified operands). Iterative."""
    if not isinstance(e, PrimExpr) or isinstance(e, IntImm | FloatImm | T.Var):
        return e
    if not e.dtype.startswith(("int", "uint", "bool")):
        return e
    lin: dict[int, tuple] = {}
    built: dict[int, PrimExpr] = {}

    def rebuilt(node):
        b = built.get(id(node))
        if b is None:
            b = built[id(node)] = _lin_build(lin[id(node)], node.dtype)
        return b

    for node in post_order(e):
        if isinstance(node, IntImm):
            lin[id(node)] = ([], node.value)
            continue
        kids = expr_children(node)
        if isinstance(node, T.CmpOp) and not isinstance(node, T.And | T.Or):
            la, lb = lin[id(node.a)], lin[id(node.b)]
            diff = _lin_add(la, lb, -1)
            if not diff[0]:
                d = diff[1]
                holds = {T.EQ: d == 0, T.NE: d != 0, T.LT: d < 0, T.LE: d <= 0, T.GT: d > 0,
                         T.GE: d >= 0}[type(node)]
                lin[id(node)] = ([], int(holds))
                built[id(node)] = _imm("bool", int(holds))
                continue
        if not node.dtype.startswith(("int", "uint")):
            new = with_children(node, [rebuilt(k) for k in kids]) if kids else node
            lin[id(node)] = _lin_atom(new)
            continue
        if isinstance(node, T.Add):
            lin[id(node)] = _lin_add(lin[id(node.a)], lin[id(node.b)])
        elif isinstance(node, T.Sub):
            lin[id(node)] = _lin_add(lin[id(node.a)], lin[id(node.b)], -1)
        elif isinstance(node, T.Mul):
            la, lb = lin[id(node.a)], lin[id(node.b)]
            if not lb[0]:
                lin[id(node)] = _lin_scale(la, lb[1])
            elif not la[0]:
                lin[id(node)] = _lin_scale(lb, la[1])
            else:
                lin[id(node)] = _lin_atom(T.Mul(rebuilt(node.a), rebuilt(node.b)))
        elif isinstance(node, T.FloorDiv | T.FloorMod):
            la, lb = lin[id(node.a)], lin[id(node.b)]
            c = lb[1] if not lb[0] else 0
            if c > 0 and all(k % c == 0 for _, k in la[0]):
                if isinstance(node, T.FloorDiv):
                    lin[id(node)] = ([(a, k // c) for a, k in la[0]], la[1] // c)
                else:
                    lin[id(node)] = ([], la[1] % c)
            else:
                lin[id(node)] = _lin_atom(type(node)(rebuilt(node.a), rebuilt(node.b)))
        elif isinstance(node, T.Min | T.Max):
            la, lb = lin[id(node.a)], lin[id(node.b)]
            if not la[0] and not lb[0]:
                f = min if isinstance(node, T.Min) else max
                lin[id(node)] = ([], f(la[1], lb[1]))
            else:
                lin[id(node)] = _lin_atom(type(node)(rebuilt(node.a), rebuilt(node.b)))
        elif isinstance(node, T.Var):
            lin[id(node)] = _lin_atom(node)
        else:
            new = with_children(node, [rebuilt(k) for k in kids]) if kids else node
            lin[id(node)] = _lin_atom(new)
    return rebuilt(e)


# --------------------------------------------------------------------------- broadcasting
def broadcast_shapes(call: Call, s1: Sequence, s2: Sequence, ctx=None) -> tuple | None:
    """TVM's binary broadcast rule over dims: a 1 takes the other dim, provably equal dims
    stay, two different constants are an error; anything else gives None (the caller falls
    back to an unknown shape of known rank)."""
    n1, n2 = len(s1), len(s2)
    out: list = []
    for i in range(1, min(n1, n2) + 1):
        d0, d1 = s1[n1 - i], s2[n2 - i]
        if is_const(d0, 1):
            out.append(d1)
        elif is_const(d1, 1):
            out.append(d0)
        elif prove_equal(d0, d1, ctx):
            out.append(d0)
        elif isinstance(d0, IntImm) and isinstance(d1, IntImm):
            fail(call, f"the first input shape at dim {n1 - i} is {fmt_dim(d0)} and the second "
                       f"input shape at dim {n2 - i} is {fmt_dim(d1)}, which are not "
                       f"broadcastable (shapes {fmt_shape(s1)} and {fmt_shape(s2)})")
        else:
            return None
    longer = s1 if n1 > n2 else s2
    for i in range(min(n1, n2) + 1, max(n1, n2) + 1):
        out.append(longer[len(longer) - i])
    return tuple(reversed(out))


def int_attr(value, what: str) -> int:
    """An integer attribute (``what``: "relax.concat's axis"); a TypeError for a str, float or
    bool, which ``int()`` would silently turn into some integer ('0' -> 0, 1.5 -> 1)."""
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, int | np.integer | IntImm):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def int_tuple(value, n: int, what: str) -> tuple:
    """``value`` (an int or a sequence) as a tuple of ``n`` ints (an int is repeated)."""
    if isinstance(value, int | IntImm):
        return (int(value),) * n
    t = tuple(int(v) for v in value)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{what} must have {n} values, got {t}")
    return t

