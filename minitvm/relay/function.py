"""``tvm.relay.function``: ``Function`` under TVM's module path (plus ``FunctionWithFields``)."""

from __future__ import annotations

from .expr import Function

__all__ = ["Function", "FunctionWithFields"]


def FunctionWithFields(function, params=None, body=None, ret_type=None, ty_params=None,  # noqa: N802
                       attrs=None, virtual_device=None, span=None):
    """A copy of ``function`` with the given fields replaced (``function`` when none change)."""
    fields = {k: v for k, v in (("params", params), ("body", body), ("ret_type", ret_type),
                                 ("type_params", ty_params), ("attrs", attrs), ("span", span))
              if v is not None}
    out = function.with_fields(**fields) if fields else function
    if virtual_device is not None:
        out.virtual_device_ = virtual_device
    return out
