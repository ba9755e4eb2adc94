"""The Relay text format printer: ``str(mod)``, ``mod.astext()``, ``str(expr)``, ``str(type)``.

``pretty_print`` (``str``) has no version header and ends with TVM's tutorial-era footer when
meta refs exist; ``astext`` starts with ``#[version = "0.0.5"]`` and appends the ``#[metadata]``
JSON section (or, with ``show_meta_data=False``, TVM's "omitted" comment).
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir.gc_pause import gc_paused
from .formatting import TypeAndAttrPrinter, format_float, scalar_to_str
from .meta import MetaContext
from .text_printer import RelayTextPrinter

__all__ = ["pretty_print", "astext", "type_to_str", "RelayTextPrinter", "SEMVER"]

SEMVER = '#[version = "0.0.5"]'
_STR_FOOTER = "// meta data omitted. you can use show_meta_data=True to include meta data"
_OMITTED = (
    "/* For debugging purposes the metadata section has been omitted.\n"
    " * If you would like to see the full metadata section you can set the \n"
    " * option to `True` when invoking `astext`. \n"
    " */"
)


def pretty_print(node) -> str:
    """The text of ``node`` as ``print`` shows it: no header, no metadata section."""
    printer = RelayTextPrinter(show_meta_data=False)
    text = printer.print_final(node)
    if not printer.meta.empty():
        text += "\n" + _STR_FOOTER
    return text


@gc_paused
def astext(node, show_meta_data: bool = True, annotate: Callable | None = None) -> str:
    """The text format with its version header and, if meta refs exist, the metadata section.

    Parameters
    ----------
    node : IRModule, RelayExpr or Type
    show_meta_data : bool
        Append the ``#[metadata]`` section (needed to parse constants back).
    annotate : callable(expr) -> str, optional
        Replaces the ``/* ty=... */`` comment after each expression.
    """
    printer = RelayTextPrinter(show_meta_data=show_meta_data, annotate=annotate)
    text = SEMVER + "\n" + printer.print_final(node)
    if not printer.meta.empty():
        text += "\n"
        if show_meta_data:
            text += "#[metadata]\n" + printer.meta.to_json()
        else:
            text += _OMITTED
    return text


def type_to_str(t) -> str:
    """A type in the text format (``Tensor[(1, 3), float32]``)."""
    return TypeAndAttrPrinter(MetaContext()).type(t)


_ = (format_float, scalar_to_str)
