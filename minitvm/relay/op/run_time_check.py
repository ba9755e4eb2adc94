"""``run_time_check``: its first argument unchanged, once a boolean scalar computed at run time
holds; when it does not, a ``ValueError`` whose message is filled with run-time values. Relay has
no assert (Relax's is ``assert_op``); importers guard sizes read at run time with it, where a
kernel would otherwise clip or repeat rows silently (ONNX Split sizes that must add up to the
axis). It reads a few integers, so numpy runs it by design. Reference:
``minitvm.topi.reference.memory``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from .op import define_op, register_numpy_only
from .type_relations import tensor_arg, type_str

__all__ = ["run_time_check", "RunTimeCheckAttrs"]


class RunTimeCheckAttrs(Attrs):
    """Attributes of ``run_time_check``: the message, ``{}`` placeholders for the shown values."""

    __slots__ = ()
    type_key = "relay.attrs.RunTimeCheckAttrs"
    _fields = (("message", ""),)


def _check_rel(arg_types, attrs):
    if len(arg_types) < 2:
        raise TypeError(f"run_time_check takes a value and a condition, got {len(arg_types)} "
                        "arguments")
    cond = tensor_arg(arg_types, 1, "run_time_check")
    if cond.dtype != "bool" or tuple(cond.shape):
        raise TypeError(f"run_time_check: the condition must be a bool scalar, got "
                        f"{type_str(cond)}")
    for i in range(2, len(arg_types)):
        tensor_arg(arg_types, i, "run_time_check")
    return arg_types[0]


define_op("run_time_check", _check_rel, pattern=OpPattern.OPAQUE, attrs_type=RunTimeCheckAttrs,
          describe="Pass a value through once a run-time condition holds; else raise.")
register_numpy_only("run_time_check", "a check of a few run-time integers that raises a "
                                      "ValueError naming them")


def run_time_check(value: Expr, condition: Expr, message: str, shown: list | tuple = ()) -> Call:
    """``value``, after checking at run time that ``condition`` (a bool scalar) holds; else a
    ``ValueError`` of ``message`` with its ``{}``s filled by the values of ``shown``."""
    if message.count("{}") != len(shown):
        raise ValueError(f"run_time_check: the message has {message.count('{}')} placeholders "
                         f"for {len(shown)} shown values")
    return Call(Op.get("run_time_check"), [value, condition, *shown],
                RunTimeCheckAttrs(message=message))
