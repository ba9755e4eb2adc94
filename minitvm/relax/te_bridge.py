"""Bridge Relax values to TE: the machinery behind ``BlockBuilder.call_te`` / ``emit_te``.

Each Relax argument with ``TensorStructInfo`` becomes a ``te.placeholder`` of its shape (the
same ``tir.Var`` objects for symbolic dims) and dtype; the TE function's outputs are turned into
a PrimFunc with ``te.create_prim_func`` and called with ``relax.call_tir``.
"""

from __future__ import annotations

from ..te.symbolic_prim_func import make_te_prim_func, shape_vars, unbound_tir_vars
from ..tir import expr as tir_expr
from .expr import Expr, ShapeExpr, Tuple
from .struct_info import PrimStructInfo, TensorStructInfo

# (make_te_prim_func, shape_vars, unbound_tir_vars: shared with Relay, from ``te``)
__all__ = ["convert_te_args", "make_te_prim_func", "out_struct_info", "shape_vars",
           "unbound_tir_vars"]


def _tensor_name(a, k: int) -> str:
    """A placeholder's name: the Relax variable's own name (as TVM names it), else A, B, ..."""
    from .expr import Var

    if isinstance(a, Var):
        return a.name_hint
    return chr(ord("A") + k) if k < 26 else f"tensor_input_{k}"


def convert_te_args(args, kwargs):
    """Replace Relax tensor Exprs (also inside nested lists/tuples) by te placeholders.

    Returns ``(te_args, te_kwargs, relax_inputs, te_inputs)``: the converted arguments and, in
    order, the Relax expressions and the placeholders standing for them (one placeholder per
    occurrence, as in TVM).
    """
    from .. import te

    relax_inputs: list = []
    te_inputs: list = []

    def convert(a):
        if isinstance(a, Expr):
            sinfo = a._struct_info
            if isinstance(a, Tuple) and not isinstance(sinfo, TensorStructInfo):
                return [convert(f) for f in a.fields]
            if isinstance(a, ShapeExpr):
                return list(a.values)
            if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
                return sinfo.value  # R.prim_value(...) / a known scalar: its PrimExpr
            if not isinstance(sinfo, TensorStructInfo):
                raise TypeError(
                    f"emit_te/call_te: argument {a!r} has struct info {sinfo}; only "
                    "Relax expressions with TensorStructInfo can become te tensors")
            if not isinstance(sinfo.shape, ShapeExpr):
                raise ValueError(
                    f"emit_te/call_te: argument {a!r} needs a known shape (a ShapeExpr) to "
                    f"become a te tensor, got struct info {sinfo}")
            if sinfo.dtype == "void":
                raise ValueError(f"emit_te/call_te: argument {a!r} has an unknown dtype")
            t = te.placeholder(list(sinfo.shape.values), sinfo.dtype,
                               _tensor_name(a, len(te_inputs)))
            relax_inputs.append(a)
            te_inputs.append(t)
            return t
        if isinstance(a, list):
            return [convert(x) for x in a]
        if isinstance(a, tuple):
            return tuple(convert(x) for x in a)
        if isinstance(a, dict):
            return {k: convert(v) for k, v in a.items()}
        return a

    te_args = [convert(a) for a in args]
    te_kwargs = {k: convert(v) for k, v in kwargs.items()}
    return te_args, te_kwargs, relax_inputs, te_inputs


def _simplified_shape(shape) -> list:
    """``shape`` with arithmetic on constants folded (``2 * 3`` -> ``6``): the VM's shape
    lowering reads a non-constant dimension as one a symbolic variable must define."""
    from ..arith import Analyzer

    if all(isinstance(d, tir_expr.IntImm | tir_expr.Var) for d in shape):
        return list(shape)
    ana = Analyzer()
    return [d if isinstance(d, tir_expr.IntImm | tir_expr.Var) else ana.simplify(d)
            for d in shape]


def out_struct_info(outputs):
    sinfos = [TensorStructInfo(ShapeExpr(_simplified_shape(t.shape)), t.dtype)
              for t in outputs]
    return sinfos[0] if len(sinfos) == 1 else sinfos
