"""Pieces the Relax importers share: ``detach_params`` (TVM's ``relax.frontend.detach_params``)
for modules imported with their weights kept as function inputs."""

from __future__ import annotations

from ...ir.module import IRModule
from ..expr import Function

__all__ = ["detach_params"]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list]]:
    """Split the ``"params"`` attribute off each function: (module without it, {name: params}).

    An importer called with ``keep_params_in_input=True`` (ONNX) or ``keep_params_as_input=True``
    (torch) records the weights' values there, in the order of the trailing parameters."""
    out = mod.shallow_copy()
    detached: dict[str, list] = {}
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or not func.attrs or "params" not in func.attrs:
            continue
        detached[gv.name_hint] = list(func.attrs["params"])
        attrs = {k: func.attrs[k] for k in func.attrs.keys() if k != "params"}
        out[gv] = Function(func.params, func.body, func.ret_struct_info, func.is_pure,
                           attrs or None, func.span)
    return out, detached
