"""AnnotateSpans: give every expression a span pointing into the module's printed text.

As TVM does, the module is printed with ``astext`` and parsed back, so each parsed node carries
``Span(SourceName, line, column, ...)`` in that text (useful in error messages and profiles).
"""

from __future__ import annotations

from ._pass_helpers import make_module_pass, register

__all__ = ["AnnotateSpans"]


def annotate_spans(mod):
    """``mod`` printed and parsed back: structurally the same module, with spans."""
    from ..parser import parse
    from ..printer import astext

    return parse(astext(mod), "GeneratedSource")


@register("AnnotateSpans")
def AnnotateSpans():  # noqa: N802 - TVM's name
    """Print and re-parse the module so that its nodes carry spans (module pass, opt 0)."""
    return make_module_pass(lambda m, c: annotate_spans(m), opt_level=0, name="AnnotateSpans")
