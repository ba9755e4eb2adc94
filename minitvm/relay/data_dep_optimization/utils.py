"""Run one pass on a Relay function or expression (the helper the conversions share)."""

from __future__ import annotations

from ...ir.module import IRModule
from ...transform.pass_base import Pass
from ..expr import Function


def _run_opt_pass(expr, opt_pass):
    """Type-check ``expr`` in a module, run ``opt_pass``, return main (or its body)."""
    from ..transform import InferType

    if not isinstance(opt_pass, Pass):
        raise TypeError(f"_run_opt_pass needs a Pass, got {type(opt_pass).__name__}")
    mod = opt_pass(InferType()(IRModule.from_expr(expr)))
    entry = mod["main"]
    return entry if isinstance(expr, Function) else entry.body
