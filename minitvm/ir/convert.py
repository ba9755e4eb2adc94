"""``tvm.runtime.convert``: Python values to the IR's values, as TVM converts them at an API
boundary (ints and floats to immediates, sequences to lists, dicts to dicts, nodes unchanged)."""

from __future__ import annotations

import numbers

from ..runtime.registry import register_func
from .node import Node
from .prim_expr import FloatImm, IntImm

_INT32 = (-(2**31), 2**31 - 1)


def convert(value, span=None):
    """``value`` as IR values: bool -> ``IntImm("bool")``, int -> ``IntImm`` (int32, or int64
    when it does not fit), float -> ``FloatImm("float32")``, list/tuple -> list, dict -> dict,
    str and nodes unchanged. Anything else is a ``TypeError`` naming its type."""
    if isinstance(value, (Node, str)) or value is None:
        return value
    if isinstance(value, bool):
        return IntImm("bool", int(value))
    if isinstance(value, numbers.Integral):
        v = int(value)
        return IntImm("int32" if _INT32[0] <= v <= _INT32[1] else "int64", v)
    if isinstance(value, numbers.Real):
        return FloatImm("float32", float(value))
    if isinstance(value, (list, tuple)):
        return [convert(v, span) for v in value]
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else convert(k, span)): convert(v, span)
                for k, v in value.items()}
    if callable(value):
        return value
    raise TypeError(f"cannot convert a {type(value).__name__} to an IR value: {value!r}")


const = convert


def make_const(value, dtype: str, span=None):
    """The scalar immediate of ``dtype`` holding ``value`` (``IntImm`` for int, uint and bool,
    ``FloatImm`` for float); what ``tvm.runtime.const`` builds."""
    base = dtype.rstrip("0123456789")
    if dtype == "bool":
        return IntImm("bool", int(bool(value)))
    if base in ("int", "uint"):
        if isinstance(value, numbers.Real) and not float(value).is_integer():
            raise ValueError(f"const: {value!r} is not an integer value of dtype {dtype}")
        return IntImm(dtype, int(value))
    if base in ("float", "bfloat"):
        return FloatImm(dtype, float(value))
    raise ValueError(f"const: cannot make a scalar constant of dtype {dtype!r}")


register_func("node._const", make_const, override=True)
