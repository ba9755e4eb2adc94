"""all_dtypes: the data types of every tensor an expression's (inferred) types mention."""

from __future__ import annotations

from ...ir.type import TensorType
from ..expr_functor import post_order_visit

__all__ = ["all_dtypes"]


def _type_parts(t) -> list:
    out = []
    for name in ("fields", "arg_types", "args"):
        out.extend(getattr(t, name, ()) or ())
    for name in ("ret_type", "value", "element_type"):
        sub = getattr(t, name, None)
        if sub is not None and not isinstance(sub, str | int | float):
            out.append(sub)
    return out


def all_dtypes(expr) -> set:
    """``{"float32", "int64", ...}``: the dtypes in the checked types of ``expr``'s nodes, as
    TVM collects them (nodes not yet type-checked contribute nothing)."""
    dtypes: set = set()
    seen: set[int] = set()

    def note(e) -> None:
        stack = [getattr(e, "_checked_type", None)]
        while stack:
            t = stack.pop()
            if t is None or id(t) in seen:
                continue
            seen.add(id(t))
            if isinstance(t, TensorType):
                dtypes.add(str(t.dtype))
            else:
                stack.extend(_type_parts(t))

    post_order_visit(expr, note)
    return dtypes
