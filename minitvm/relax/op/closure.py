"""Closure ops (TVM's ``relax.make_closure``, ``relax.invoke_closure``,
``relax.invoke_pure_closure``), as LambdaLift emits them for functions with free variables.

``make_closure(func, args)`` packs global ``func`` with captured ``args`` (struct info
``R.Object``); ``invoke_closure(closure, args, sinfo_args)`` calls it with ``args`` appended to
the captured values, its result described by ``sinfo_args`` (one: that struct info; several: a
tuple of them). ``invoke_closure`` is impure; ``invoke_pure_closure`` is its pure twin.
"""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Call, Expr, Tuple
from ..struct_info import ObjectStructInfo, StructInfo, TupleStructInfo
from .base import StructInfoError, register_op_rule

__all__ = ["make_closure", "invoke_closure", "invoke_pure_closure"]


def _as_tuple(args) -> Tuple:
    if isinstance(args, Tuple):
        return args
    if isinstance(args, Expr):
        return Tuple([args])
    return Tuple(list(args))


def _sinfo_list(sinfo_args, what: str) -> list:
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    sinfo_args = list(sinfo_args or ())
    if not sinfo_args:
        raise ValueError(f"{what} needs sinfo_args (the struct info of the result)")
    for s in sinfo_args:
        if not isinstance(s, StructInfo):
            raise TypeError(f"{what}: sinfo_args must be StructInfo, got {type(s).__name__}")
    return sinfo_args


def make_closure(func, args) -> Call:
    """A closure of global function ``func`` capturing ``args`` (a Tuple or a list)."""
    return Call(Op.get("relax.make_closure"), [func, _as_tuple(args)])


def invoke_closure(closure: Expr, args, sinfo_args) -> Call:
    """Call ``closure`` with ``args``; ``sinfo_args`` give the result's struct info."""
    return Call(Op.get("relax.invoke_closure"), [closure, _as_tuple(args)], None,
                _sinfo_list(sinfo_args, "invoke_closure"))


def invoke_pure_closure(closure: Expr, args, sinfo_args) -> Call:
    """``invoke_closure`` treated as pure (may appear in dataflow blocks)."""
    return Call(Op.get("relax.invoke_pure_closure"), [closure, _as_tuple(args)], None,
                _sinfo_list(sinfo_args, "invoke_pure_closure"))


def _infer_make_closure(call: Call, ctx) -> StructInfo:
    if len(call.args) != 2:
        raise StructInfoError(f"{call.op}: expects 2 arguments (func, args tuple), got "
                              f"{len(call.args)}")
    return ObjectStructInfo()


def _infer_invoke_closure(call: Call, ctx) -> StructInfo:
    if len(call.args) != 2:
        raise StructInfoError(f"{call.op}: expects 2 arguments (closure, args tuple), got "
                              f"{len(call.args)}")
    if not call.sinfo_args:
        return ObjectStructInfo()
    if len(call.sinfo_args) == 1:
        return call.sinfo_args[0]
    return TupleStructInfo(call.sinfo_args)


register_op_rule("relax.make_closure", _infer_make_closure, num_inputs=2,
                 arguments=("func", "args"), description="create a closure with free variables")
register_op_rule("relax.invoke_closure", _infer_invoke_closure, purity=False, num_inputs=2,
                 arguments=("closure", "args"), description="invoke a closure")
register_op_rule("relax.invoke_pure_closure", _infer_invoke_closure, num_inputs=2,
                 arguments=("closure", "args"), description="invoke a closure, as pure")
