"""Scalar expressions (PrimExpr) inside Relax: shape dimensions, ``R.prim_value``, attrs.

Under Relax, TVM prints integer immediates as plain Python literals (``784``, not
``T.int64(784)``), symbolic variables by the name they were declared with (``n = T.int64()``),
and arithmetic as Python operators when the operation is what building it again would give
(``n * 128``; ``T.Mul(n, 1)`` where ``tir.mul`` would fold it). Printed bottom-up from the
iterative post-order of ``tir.stmt_functor``, so deep expressions need no recursion.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...tir import expr as E
from ...tir.stmt_functor import expr_children, post_order

# Python's operator precedence, as TVM's doc printer ranks it
OR, AND, NOT, CMP, ADD, MUL, IDENT = 3, 4, 5, 6, 11, 12, 15

_SUGAR: dict[type, tuple[str, int]] = {
    E.Add: ("+", ADD), E.Sub: ("-", ADD), E.Mul: ("*", MUL), E.FloorDiv: ("//", MUL),
    E.FloorMod: ("%", MUL), E.LT: ("<", CMP), E.LE: ("<=", CMP), E.EQ: ("==", CMP),
    E.NE: ("!=", CMP), E.GT: (">", CMP), E.GE: (">=", CMP), E.And: ("and", AND),
    E.Or: ("or", OR),
}
_NAMES: dict[type, str] = {
    E.Add: "Add", E.Sub: "Sub", E.Mul: "Mul", E.FloorDiv: "FloorDiv", E.FloorMod: "FloorMod",
    E.LT: "LT", E.LE: "LE", E.EQ: "EQ", E.NE: "NE", E.GT: "GT", E.GE: "GE", E.And: "And",
    E.Or: "Or", E.Mod: "truncmod", E.Min: "min", E.Max: "max",
}


def float_literal(v: float) -> str:
    """A float as TVM's LiteralDoc prints it: 17 significant digits, ``"inf"`` quoted."""
    if math.isinf(v) or math.isnan(v):
        return f'"{"-" if v < 0 else ""}{"inf" if math.isinf(v) else "nan"}"'
    return f"{v:.17g}"


def _const(e):
    return e.value if isinstance(e, E.IntImm | E.FloatImm) else None


def _folds(e) -> bool:
    """Whether building ``e``'s operation again (``tir.add(a, b)``...) would not give ``e``:
    both operands constant, an identity operand, or operands of different dtypes."""
    a, b = e.a, e.b
    if a.dtype != b.dtype:
        return True
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return True
    t = type(e)
    if t is E.Add:
        return ca == 0 or cb == 0
    if t is E.Sub:
        return cb == 0
    if t is E.Mul:
        return ca in (0, 1) or cb in (0, 1)
    if t is E.FloorDiv or t is E.FloorMod:
        return cb == 1
    if t is E.And or t is E.Or:
        return ca is not None or cb is not None
    return False


def _wrap(text_prec: tuple[str, int], parent: int, same: bool = False) -> str:
    text, prec = text_prec
    return f"({text})" if prec < parent or (same and prec == parent) else text


def prim_doc(root, var_doc: Callable, tir: Callable) -> tuple[str, int]:
    """``(text, precedence)`` of ``root``; ``var_doc(v)`` names a variable (declaring it on
    first use), ``tir(attr)`` spells ``T.attr`` (and records that TIR is used)."""
    t = type(root)
    if t is E.IntImm:
        return _int(root), IDENT
    if isinstance(root, E.Var):
        return var_doc(root), IDENT
    memo: dict[int, tuple[str, int]] = {}
    for node in post_order(root):
        kids = [memo[id(c)] for c in expr_children(node)]
        memo[id(node)] = _node(node, kids, var_doc, tir)
    return memo[id(root)]


def _int(e) -> str:
    if e.dtype == "bool":
        return "True" if e.value else "False"
    return str(e.value)


def _typed_args(e, kids, tir) -> list[str]:
    """The operands of an operation printed as a call: with no variable beside it to take the
    dtype from, an integer constant that is not int32 states its dtype (``T.int64(3)``)."""
    out = []
    for c, k in zip((e.a, e.b), kids):
        if type(c) is E.IntImm and c.dtype not in ("int32", "bool") and (
                _const(e.a) is not None and _const(e.b) is not None or e.a.dtype != e.b.dtype):
            out.append(_call(tir(c.dtype), [str(c.value)]))
        else:
            out.append(k[0])
    return out


def _call(name: str, args) -> str:
    return f"{name}({', '.join(args)})"


def _node(e, kids, var_doc, tir) -> tuple[str, int]:
    t = type(e)
    sugar = _SUGAR.get(t)
    if sugar is not None:
        if _folds(e):
            return _call(tir(_NAMES[t]), _typed_args(e, kids, tir)), IDENT
        sym, prec = sugar
        return f"{_wrap(kids[0], prec)} {sym} {_wrap(kids[1], prec, True)}", prec
    if t is E.IntImm:
        return _int(e), IDENT
    if isinstance(e, E.Var):
        return var_doc(e), IDENT
    if t is E.FloatImm:
        if math.isinf(e.value) or math.isnan(e.value):
            return _call(tir(e.dtype), [float_literal(e.value)]), IDENT
        text = f"{e.value:.17g}"
        if "e" not in text and "." not in text:
            text += ".0"
        return _call(tir(e.dtype), [text]), IDENT
    if t is E.StringImm:
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"', IDENT
    if t is E.Div:
        if e.a.dtype.startswith(("int", "uint")) or _const(e.a) is not None and _const(
                e.b) is not None:
            return _call(tir("Div"), [k[0] for k in kids]), IDENT
        return f"{_wrap(kids[0], MUL)} / {_wrap(kids[1], MUL, True)}", MUL
    if t in _NAMES:
        return _call(tir(_NAMES[t]), [k[0] for k in kids]), IDENT
    if t is E.Not:
        if _const(e.a) is not None:
            return _call(tir("Not"), [kids[0][0]]), IDENT
        return f"not {_wrap(kids[0], NOT)}", NOT
    if t is E.Cast:
        return _call(tir("Cast"), [f'"{e.dtype}"', kids[0][0]]), IDENT
    if t is E.Select:
        return _call(tir("Select"), [k[0] for k in kids]), IDENT
    if t is E.Call:
        name = e.op_name
        short = name[4:] if name.startswith("tir.") else name
        return _call(tir(short), [k[0] for k in kids]), IDENT
    if t is E.Any:
        return _call(tir("Any"), []), IDENT
    if t is E.Let:
        value, body = kids
        return f"{tir('Let')}({body[0]}, where={{{var_doc(e.var)}: {value[0]}}})", IDENT
    if t is E.Ramp:
        return _call(tir("Ramp"), [kids[0][0], kids[1][0], str(e.lanes)]), IDENT
    if t is E.Broadcast:
        return _call(tir("Broadcast"), [kids[0][0], str(e.lanes)]), IDENT
    return _call(tir(t.__name__), [k[0] for k in kids]), IDENT
