"""``tvm.runtime.object_generic``: Python values to runtime objects at an API boundary.

``convert_to_object`` maps numbers to scalar immediates (``const``), strings to ``String``,
sequences and dicts element-wise, ``ObjectGeneric`` values to their ``asobject()``, and leaves
objects as they are; anything else is a ``ValueError`` naming its type, as in TVM.

The immediates (``IntImm`` / ``FloatImm``) are IR nodes, which this package does not import:
``const`` calls the global function ``node._const`` that ``minitvm.ir`` registers, the same
indirection TVM's runtime uses to reach the node constructors."""

from __future__ import annotations

import numbers

from . import object as _object
from .container import String
from .object import ObjectGeneric
from .registry import get_global_func

__all__ = ["ObjectGeneric", "convert_to_object", "convert", "const"]  # and ObjectTypes

_FLOAT32_MAX = 3.40282347e38


def __getattr__(name: str):
    # ObjectTypes grows once NDArray and Module are defined (runtime/__init__)
    if name == "ObjectTypes":
        return _object.ObjectTypes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _scalar_type_inference(value) -> str:
    """TVM's default dtype of a Python scalar: int32 / float32 when the value fits, else the
    64-bit type; a numpy scalar keeps its own dtype."""
    if hasattr(value, "dtype"):
        return str(value.dtype)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int32" if -(2**31) <= int(value) <= 2**31 - 1 else "int64"
    if isinstance(value, numbers.Real):
        return "float32" if -_FLOAT32_MAX <= float(value) <= _FLOAT32_MAX else "float64"
    raise NotImplementedError(f"Cannot automatically inference the type. value={value!r}")


def const(value, dtype: str | None = None, span=None):
    """A scalar immediate holding ``value``: ``IntImm`` for integer and bool dtypes,
    ``FloatImm`` for float dtypes; ``dtype`` defaults to TVM's inference (int32, float32, ...)."""
    if dtype is None:
        dtype = _scalar_type_inference(value)
    return get_global_func("node._const")(value, str(dtype), span)


def convert_to_object(value, span=None):
    """``value`` as a runtime object (see the module docstring); None stays None."""
    if value is None or isinstance(value, _object.ObjectTypes):
        return value
    if isinstance(value, String):
        return value
    if isinstance(value, numbers.Real):  # bool, int, float and numpy scalars
        return const(value, span=span)
    if isinstance(value, str):
        return String(value)
    if isinstance(value, list | tuple):
        return [convert_to_object(x, span) for x in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, (str, *_object.ObjectTypes)):
                raise ValueError(f"key of map must already been a container type, got "
                                 f"{type(k).__name__} {k!r}")
            out[String(k) if isinstance(k, str) else k] = convert_to_object(v, span)
        return out
    if isinstance(value, ObjectGeneric):
        return value.asobject()
    if callable(value):
        return value  # functions are already packed functions here
    raise ValueError(f"don't know how to convert type {type(value)} to object")


def convert(value, span=None):
    """``convert_to_object``; functions pass through unchanged (TVM packs them)."""
    if callable(value) and not isinstance(value, ObjectGeneric):
        return value
    return convert_to_object(value, span)
