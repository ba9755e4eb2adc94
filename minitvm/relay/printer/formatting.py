"""Leaf formatting of the Relay text format: scalars, attribute values, types.

Floats use C++'s default stream format (``%g``, 6 significant digits) as TVM does, except that
when 6 digits would not read back to the same value more digits are printed, so the text round
trips exactly (TVM loses precision there).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...ir.type import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from ...tir.expr import Any, FloatImm, IntImm, StringImm
from .meta import MetaContext

# dtype -> literal suffix of the simple scalars TVM prints inline
SCALAR_SUFFIX = {
    "int16": "i16", "int32": "", "int64": "i64",
    "float16": "f16", "float32": "f", "float64": "f64",
}


_FLOAT_TEXT: dict[tuple, str] = {}  # (value, dtype) -> text: a model repeats its scalars


def format_float(value: float, dtype: str = "float64") -> str:
    """``%g`` text of a float; more digits only when %g would not read back exactly."""
    value = float(value)
    if value == 0.0 or not math.isfinite(value):  # -0.0 == 0.0 as a key; NaN != NaN
        return _format_float(value, dtype)
    key = (value, dtype)
    text = _FLOAT_TEXT.get(key)
    if text is None:
        text = _format_float(value, dtype)
        if len(_FLOAT_TEXT) >= 1 << 14:
            _FLOAT_TEXT.clear()
        _FLOAT_TEXT[key] = text
    return text


def _format_float(value: float, dtype: str) -> str:
    np_type = np.dtype(dtype).type
    target = np_type(value)
    for digits in range(6, 18):
        text = f"{value:.{digits}g}"
        if np_type(float(text)) == target:
            return text
    return repr(value)


def scalar_to_str(value, dtype: str) -> str | None:
    """The inline literal of a 0-d constant (``42i64``, ``1e-05f``, ``True``), None if it has none."""
    if dtype == "bool":
        return "True" if bool(value) else "False"
    suffix = SCALAR_SUFFIX.get(dtype)
    if suffix is None:
        return None
    if dtype.startswith("int"):
        return f"{int(value)}{suffix}"
    f = float(value)
    if not math.isfinite(f):
        return None
    return format_float(f, dtype) + suffix


def quote(s: str) -> str:
    """A double-quoted string literal with backslash escapes."""
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{body}"'


class TypeAndAttrPrinter:
    """Prints types and attribute values, sending symbolic and opaque values to the meta table."""

    def __init__(self, meta: MetaContext, show_meta_data: bool = False):
        self.meta = meta
        self.show_meta_data = show_meta_data
        self._type_memo: dict = {}

    # ------------------------------------------------------------------ attribute values
    def attr_value(self, v) -> str:
        if v is None:
            return "None"
        if isinstance(v, bool | np.bool_):
            return "True" if v else "False"
        if isinstance(v, int | np.integer):
            return str(int(v))
        if isinstance(v, float | np.floating):
            return format_float(float(v)) + "f"
        if isinstance(v, str):
            return quote(v)
        if isinstance(v, list | tuple):
            return "[" + ", ".join(self.attr_value(x) for x in v) + "]"
        return self._attr_node(v)

    def _attr_node(self, v) -> str:
        if isinstance(v, Any):
            return "?"
        if isinstance(v, IntImm):
            text = scalar_to_str(v.value, v.dtype)
            width = re.fullmatch(r"(u?)int(8|16|32|64)", v.dtype)
            if text is None and width:
                # keep the dtype so the attribute parses back to the same IntImm (``48u64``)
                text = f"{int(v.value)}{width.group(1) or 'i'}{width.group(2)}"
            return text or str(v.value)
        if isinstance(v, FloatImm):
            return scalar_to_str(v.value, v.dtype) or format_float(v.value)
        if isinstance(v, StringImm):
            return quote(v.value)
        if isinstance(v, dict):
            if self.show_meta_data:
                return self.meta.ref(v, "Map")
            return "{" + ", ".join(f"{self.attr_value(k)}={self.attr_value(x)}"
                                   for k, x in v.items()) + "}"
        name = type(v).__name__
        if name == "VirtualDevice" and not self.show_meta_data:
            return repr(v)  # TVM prints VirtualDevices inline unless showing the meta table
        if name == "GlobalVar":
            return self.meta.ref(v) if self.show_meta_data else f"'{v.name_hint}'"
        if hasattr(v, "non_default_items"):
            if self.show_meta_data:
                return self.meta.ref(v)
            return "{" + ", ".join(self.attr_items(v)) + "}"
        if name == "DictAttrs":
            return "{" + ", ".join(f"{k}={self.attr_value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, TensorType | TupleType | FuncType):
            return self.type(v)
        return self.meta.ref(v)

    def attr_items(self, attrs) -> list[str]:
        """``key=value`` for the non-default fields of an Attrs, or every item of a DictAttrs."""
        items = attrs.non_default_items() if hasattr(attrs, "non_default_items") else attrs.items()
        return [f"{k}={self.attr_value(v)}" for k, v in items]

    # ------------------------------------------------------------------ types
    def type(self, t) -> str:
        """``t`` as text. Nested types are printed bottom-up from an explicit stack, memoized by
        identity (a type's structural hash would itself recurse on a 5,000-deep tuple type)."""
        memo = self._type_memo
        hit = memo.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        stack = [(t, False)]
        while stack:
            node, ready = stack.pop()
            hit = memo.get(id(node))
            if hit is not None and hit[0] is node:
                continue
            kids = _type_children(node)
            if ready or not kids:
                memo[id(node)] = (node, self._type(node))
                continue
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
        return memo[id(t)][1]

    def _dim(self, d) -> str:
        if isinstance(d, int):
            return str(d)
        if isinstance(d, Any):
            return "?"
        if isinstance(d, IntImm):
            return scalar_to_str(d.value, d.dtype) or str(d.value)
        return self.meta.ref(d)

    def _type(self, t) -> str:
        if t is None:
            return "None"
        if isinstance(t, TensorType):
            if not t.shape:
                return t.dtype
            return f"Tensor[({', '.join(self._dim(d) for d in t.shape)}), {t.dtype}]"
        if isinstance(t, TupleType):
            fields = [self.type(f) for f in t.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if isinstance(t, FuncType):
            params = ""
            if t.type_params:
                params = "[" + ", ".join(self.type(p) for p in t.type_params) + "]"
            args = ", ".join(self.type(a) for a in t.arg_types)
            return f"fn {params}({args}) -> {self.type(t.ret_type)}"
        if isinstance(t, RelayRefType):
            return f"ref({self.type(t.value)})"
        if isinstance(t, TypeCall):
            return f"{self.type(t.func)}[{', '.join(self.type(a) for a in t.args)}]"
        if isinstance(t, GlobalTypeVar | TypeVar):
            return t.name_hint
        if type(t).__name__ == "TypeData":
            return self.type_data(t)
        if isinstance(t, IncompleteType):
            return self.meta.ref(t, "IncompleteType")
        return self.meta.ref(t)

    def type_data(self, td) -> str:
        head = f"type {td.header.name_hint}"
        if td.type_vars:
            head += "[" + ", ".join(self.type(v) for v in td.type_vars) + "]"
        ctors = []
        for c in td.constructors:
            text = c.name_hint
            if c.inputs:
                text += "(" + ", ".join(self.type(i) for i in c.inputs) + ")"
            ctors.append("  " + text + ",")
        return head + " {\n" + "\n".join(ctors) + ("\n" if ctors else "") + "}"


def _type_children(t) -> tuple:
    """The types printed inside ``t`` (printed first, so ``t``'s own text finds them memoized)."""
    if isinstance(t, TupleType):
        return tuple(t.fields)
    if isinstance(t, FuncType):
        return (*t.type_params, *t.arg_types, t.ret_type)
    if isinstance(t, RelayRefType):
        return (t.value,)
    if isinstance(t, TypeCall):
        return (t.func, *t.args)
    return ()
