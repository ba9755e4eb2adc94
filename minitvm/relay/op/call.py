"""``call_lowered``: TVM's operator calling a lowered global function (``relay.op.call_lowered``).

After lowering, ``call_lowered(@f, (args...), attrs=CallLoweredAttrs(metadata))`` stands for
``@f(args...)``: its type is ``@f``'s return type when the tuple of arguments matches ``@f``'s
parameters. ``metadata`` carries what lowering records, such as ``relay_attrs`` (the primitive
function's attributes, e.g. ``relay.reshape_only=1``). It has no reference implementation of its
own (no ``FNumpy``): executing it needs the module holding ``@f``, which executors of lowered
modules supply.
"""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.expr import GlobalVar
from ...ir.op import Op, OpPattern
from ...ir.type import FuncType, TupleType
from ..expr import Call, Tuple
from .op import register
from .type_relations import check_num_args

__all__ = ["CallLoweredAttrs", "call_lowered", "call_lowered_props", "is_reshape_only"]


class CallLoweredAttrs(Attrs):
    """Attributes of ``call_lowered``: the metadata lowering recorded (a dict)."""

    __slots__ = ()
    type_key = "relay.attrs.CallLoweredAttrs"
    _fields = (("metadata", None),)


def _call_lowered_rel(arg_types, attrs=None):
    check_num_args("call_lowered", arg_types, 2)
    func_t, args_t = arg_types
    if not isinstance(func_t, FuncType):
        raise TypeError(f"call_lowered: the callee must be a function, got {func_t}")
    if not isinstance(args_t, TupleType):
        raise TypeError(f"call_lowered: the arguments must be a tuple, got {args_t}")
    if len(args_t.fields) != len(func_t.arg_types) or any(
            a != p for a, p in zip(args_t.fields, func_t.arg_types, strict=True)):
        raise TypeError(f"call_lowered: arguments {args_t} do not match the callee's "
                        f"parameters {TupleType(list(func_t.arg_types))}")
    return func_t.ret_type


def _define() -> None:
    """Register ``call_lowered`` (once): a type relation and pattern, no numpy reference."""
    op = register("call_lowered", "Invoke an operation compiled by TVM.")
    if op.has_attr("FTypeRelation"):
        return
    op.attrs_type = CallLoweredAttrs
    op.num_inputs = 2
    op.set_attr("FTypeRelation", _call_lowered_rel)
    op.set_attr("TOpPattern", OpPattern.OPAQUE)
    op.set_attr("TOpIsStateful", False)
    op.set_attr("TNonComputational", True)


_define()


def call_lowered(func: GlobalVar, inputs, attrs: CallLoweredAttrs | None = None,
                 span=None) -> Call:
    """``call_lowered(func, Tuple(inputs), attrs)``; ``func`` must be a GlobalVar (as TVM)."""
    if not isinstance(func, GlobalVar):
        raise TypeError(f"call_lowered: the function to call must be a GlobalVar, got "
                        f"{type(func).__name__}")
    fields = inputs.fields if isinstance(inputs, Tuple) else list(inputs)
    return Call(Op.get("call_lowered"), [func, Tuple(fields)],
                attrs if attrs is not None else CallLoweredAttrs(metadata={}), None, span)


def call_lowered_props(call):
    """``(function, arguments, metadata)`` of a ``call_lowered`` call, else None."""
    if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "call_lowered"):
        return None
    if len(call.args) != 2 or not isinstance(call.args[0], GlobalVar) or \
            not isinstance(call.args[1], Tuple):
        raise ValueError("call_lowered expects a GlobalVar and a Tuple of arguments")
    metadata = getattr(call.attrs, "metadata", None) or {}
    return call.args[0], list(call.args[1].fields), metadata


def is_reshape_only(metadata) -> bool:
    """Whether lowering marked the called function ``relay.reshape_only`` (TVM's IsReshapeOnly)."""
    relay_attrs = metadata.get("relay_attrs") if metadata else None
    if not relay_attrs:
        return False
    value = relay_attrs.get("relay.reshape_only") if hasattr(relay_attrs, "get") else None
    value = getattr(value, "value", value)
    return bool(value)
