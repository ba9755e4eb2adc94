"""Relax op registration, struct-info inference entry point and the calling-convention ops.

Every Relax op is registered once under TVM's name (``relax.add``) with ``FInferStructInfo``
(``fn(call, ctx) -> StructInfo``), ``FPurity`` and, for fusable ops, ``TOpPattern``. This module
also defines ``call_tir``/``call_dps_packed``/``call_pure_packed``, ``shape_of`` and
``null_value``, whose result struct info comes from their arguments rather than a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...ir.expr import GlobalVar
from ...ir.op import Op, register_op
from ..expr import Call, Expr, ExternFunc, ShapeExpr, Tuple, Var
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = [
    "StructInfoError", "StructInfoTypeError", "register_op_rule", "infer_struct_info",
    "call_tir", "call_dps_packed", "call_pure_packed", "shape_of", "null_value",
]


class StructInfoError(ValueError):
    """A Relax call whose arguments the op cannot accept (rank, shape or dtype mismatch)."""


class StructInfoTypeError(StructInfoError, TypeError):
    """An argument of the wrong kind (a tuple where a tensor is needed, ...)."""


def register_op_rule(name: str, infer: Callable, *, purity: bool = True,
                     pattern: int | None = None, num_inputs: int = -1,
                     arguments: Sequence[str] = (), attrs_type: type | None = None,
                     description: str = "") -> Op:
    """Register (or refresh) Relax op ``name`` with its inference rule, purity and pattern."""
    op = register_op(name)
    op.num_inputs = num_inputs
    op.arguments = tuple(arguments)
    op.attrs_type = attrs_type
    if description:
        op.description = description
    for key, value in (("FInferStructInfo", infer), ("FPurity", bool(purity)),
                       ("TOpPattern", pattern)):
        if value is None:
            continue
        old = op.get_attr(key)
        if old is not None and old is not value and _same_origin(old, value):
            op.reset_attr(key)  # a reload of this module re-registers its own rule
        op.set_attr(key, value)
    return op


def _same_origin(old, new) -> bool:
    if isinstance(old, bool | int) and isinstance(new, bool | int):
        return True
    return (getattr(old, "__module__", None) == getattr(new, "__module__", None)
            and getattr(old, "__qualname__", None) == getattr(new, "__qualname__", None))


def infer_struct_info(call: Call, ctx=None) -> StructInfo:
    """The struct info of ``call`` from its op's rule (or its callee's FuncStructInfo).

    Raises ``StructInfoError`` naming the op and the argument struct info when the arguments
    are not acceptable. Arguments must already carry struct info (be normalized)."""
    if not isinstance(call, Call):
        raise TypeError(f"infer_struct_info expects a relax.Call, got {type(call).__name__}")
    op = call.op
    if isinstance(op, Op):
        rule = op.get_attr("FInferStructInfo")
        if rule is None:
            raise StructInfoError(f"operator {op.name} has no FInferStructInfo rule "
                                  "(is it a Relax op?)")
        return rule(call, ctx)
    sinfo = getattr(op, "_checked_type", None)  # a Relax expr's (or GlobalVar's) struct info
    if not isinstance(sinfo, FuncStructInfo) and isinstance(op, GlobalVar) and ctx is not None:
        try:
            sinfo = ctx.get()[op].struct_info_
        except (AttributeError, KeyError, ValueError, TypeError):
            sinfo = None
    if isinstance(sinfo, FuncStructInfo):
        from ..analysis.struct_info_analysis import derive_call_ret_struct_info

        return derive_call_ret_struct_info(sinfo, call, ctx)
    if call.sinfo_args:
        return call.sinfo_args[0]
    raise StructInfoError(f"cannot infer the struct info of a call to {op!r}: the callee has no "
                          "function struct info")


# --------------------------------------------------------------------------- calling conventions
def _out_sinfo(out_sinfo, what: str) -> StructInfo:
    items = list(out_sinfo) if isinstance(out_sinfo, list | tuple) else [out_sinfo]
    if not items:
        raise ValueError(f"{what}: out_sinfo must name at least one output")
    for s in items:
        if not isinstance(s, TensorStructInfo):
            raise TypeError(f"{what}: out_sinfo must be TensorStructInfo(s), got "
                            f"{type(s).__name__}")
        if not isinstance(s.shape, ShapeExpr):
            raise ValueError(f"{what}: out_sinfo must have a known shape (a ShapeExpr), "
                             f"got {s}")
    return items[0] if len(items) == 1 else TupleStructInfo(items)


def _args_tuple(args) -> Tuple:
    if isinstance(args, Tuple):
        return args
    if isinstance(args, Expr):
        return Tuple([args])
    return Tuple(list(args))


def call_tir(gvar: GlobalVar, args, out_sinfo, tir_vars=None) -> Call:
    """Call PrimFunc ``gvar`` in destination-passing style: outputs allocated from out_sinfo."""
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"call_tir expects a GlobalVar callee, got {type(gvar).__name__}")
    call_args = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(tir_vars))
    return Call(Op.get("relax.call_tir"), call_args, None,
                [_out_sinfo(out_sinfo, "call_tir")])


def call_dps_packed(func, args, out_sinfo) -> Call:
    """Call packed function ``func`` in destination-passing style (outputs from out_sinfo)."""
    if isinstance(func, str):
        func = ExternFunc(func)
    return Call(Op.get("relax.call_dps_packed"), [func, _args_tuple(args)], None,
                [_out_sinfo(out_sinfo, "call_dps_packed")])


def call_pure_packed(func, *args, sinfo_args) -> Call:
    """Call packed function ``func`` (returning ``sinfo_args``) and treat the call as pure."""
    if isinstance(func, str):
        func = ExternFunc(func)
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    if not sinfo_args:
        raise ValueError("call_pure_packed needs sinfo_args (the struct info of the result)")
    return Call(Op.get("relax.call_pure_packed"), [func, *args], None, list(sinfo_args))


def shape_of(expr: Expr) -> Call:
    """The shape of tensor ``expr`` as a value (``R.shape_of(x)``)."""
    return Call(Op.get("relax.shape_of"), [expr])


def null_value() -> Call:
    """A null object (``R.null_value()``)."""
    return Call(Op.get("relax.null_value"), [])


def _fail(call: Call, msg: str, type_error: bool = False):
    cls = StructInfoTypeError if type_error else StructInfoError
    raise cls(f"{call.op}: {msg}")


def _infer_call_tir(call: Call, ctx) -> StructInfo:
    if len(call.sinfo_args) != 1:
        _fail(call, f"expects exactly one output struct info in sinfo_args, got "
                    f"{len(call.sinfo_args)}")
    if len(call.args) not in (2, 3):
        _fail(call, f"expects 2 or 3 arguments (callee, args tuple[, tir_vars]), got "
                    f"{len(call.args)}")
    return call.sinfo_args[0]


def _infer_call_dps_packed(call: Call, ctx) -> StructInfo:
    if len(call.sinfo_args) != 1:
        _fail(call, f"expects exactly one output struct info in sinfo_args, got "
                    f"{len(call.sinfo_args)}")
    return call.sinfo_args[0]


def _infer_call_pure_packed(call: Call, ctx) -> StructInfo:
    if not call.args:
        _fail(call, "expects the packed function as its first argument")
    if not call.sinfo_args:
        return ObjectStructInfo()
    if len(call.sinfo_args) == 1:
        return call.sinfo_args[0]
    return TupleStructInfo(call.sinfo_args)


def _infer_shape_of(call: Call, ctx) -> StructInfo:
    if len(call.args) != 1:
        _fail(call, f"expects 1 argument, got {len(call.args)}")
    s = call.args[0].struct_info_
    if not isinstance(s, TensorStructInfo):
        _fail(call, f"expects a tensor, got {type(s).__name__ if s is not None else 'no struct info'}",
              type_error=True)
    if isinstance(s.shape, ShapeExpr):
        return ShapeStructInfo(s.shape.values)
    if isinstance(s.shape, Var) and isinstance(s.shape.struct_info_, ShapeStructInfo):
        return s.shape.struct_info_
    return ShapeStructInfo(ndim=s.ndim)


def _infer_null_value(call: Call, ctx) -> StructInfo:
    if call.args:
        _fail(call, f"takes no arguments, got {len(call.args)}")
    return ObjectStructInfo()


register_op_rule("relax.call_tir", _infer_call_tir, arguments=("func", "args", "packed_ints"),
                 description="call a PrimFunc in destination-passing style")
register_op_rule("relax.call_dps_packed", _infer_call_dps_packed, arguments=("func", "args"),
                 description="call a packed function in destination-passing style")
register_op_rule("relax.call_pure_packed", _infer_call_pure_packed, arguments=("args",),
                 description="call a packed function, treating the call as pure")
register_op_rule("relax.shape_of", _infer_shape_of, num_inputs=1, arguments=("input",))
register_op_rule("relax.null_value", _infer_null_value, num_inputs=0)
