"""``relay.op.debug``: the ``debug`` op, an identity that calls a Python function on the value
flowing through it when the program runs (its ``debug_func``; without one it stops in the Python
debugger, as TVM's default ``relay.debug._debug`` does). Reference:
``minitvm.topi.reference.memory``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from .op import define_op
from .type_relations import check_num_args

__all__ = ["debug", "DebugAttrs"]


class DebugAttrs(Attrs):
    """Attributes of ``debug``: the function called with the value."""

    __slots__ = ()
    type_key = "relay.attrs.DebugAttrs"
    _fields = (("debug_func", None),)


def _debug_rel(arg_types, attrs):
    check_num_args("debug", arg_types, 1)
    return arg_types[0]


define_op("debug", _debug_rel, pattern=OpPattern.OPAQUE, attrs_type=DebugAttrs,
          num_inputs=1, describe="Call a Python function on a value at run time.",
          stateful=True)


def debug(expr: Expr, debug_func=None) -> Call:
    """``expr`` unchanged, with ``debug_func(value)`` called when the program computes it."""
    if debug_func is not None and not callable(debug_func):
        raise TypeError(f"debug: debug_func must be callable, got {type(debug_func).__name__}")
    return Call(Op.get("debug"), [expr], DebugAttrs(debug_func=debug_func))
