"""``tvm.relay.base``: the node base classes Relay code imports from this path."""

from __future__ import annotations

from ..ir.node import Node, SequentialSpan, SourceName, Span

__all__ = ["Node", "SourceName", "Span", "SequentialSpan", "pretty_print", "astext"]


def pretty_print(obj) -> str:
    """The Relay text of ``obj``."""
    from .printer import astext as _astext

    return _astext(obj)


def astext(obj, show_meta_data: bool = True, annotate=None) -> str:
    """The Relay text of ``obj`` (TVM's ``relay.base.astext``)."""
    from .printer import astext as _astext

    return _astext(obj, show_meta_data, annotate)
