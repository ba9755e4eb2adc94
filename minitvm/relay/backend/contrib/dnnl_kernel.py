"""Registers the "dnnl" external codegen: Relay function -> JSON graph -> oneDNN kernel."""

from __future__ import annotations

from . import register_external_codegen
from .dnnl import codegen


@register_external_codegen("dnnl")
def lower_dnnl(func, name: str):
    """Compile a ``Compiler="dnnl"`` function to a runtime kernel running oneDNN primitives."""
    from ....backend.contrib.dnnl import make_kernel
    from ....backend.contrib.dnnl.kernel import DnnlSource

    graph, consts = codegen(func)
    symbol = str(func.get_attr("global_symbol") or name)
    return make_kernel(name, DnnlSource(graph, consts, symbol))
