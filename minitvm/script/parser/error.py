"""Errors of the TVMScript parser: what is wrong and where, with the line of source shown."""

from __future__ import annotations

from ...ir.node import Span

__all__ = ["ParserError", "Source"]


class Source:
    """Text being parsed and where it came from: file name, first line in that file, and the
    columns removed by dedenting (so reported positions are those of the original file)."""

    __slots__ = ("text", "lines", "name", "line_offset", "col_offset")

    def __init__(self, text: str, name: str = "<string>", line_offset: int = 0,
                 col_offset: int = 0):
        self.text = text
        self.lines = text.splitlines()
        self.name = name
        self.line_offset = line_offset
        self.col_offset = col_offset

    def span(self, node):
        """The ``Span`` of ``node`` (an ``ast`` node) in the original file, or None."""
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return None
        col = getattr(node, "col_offset", 0) or 0
        end_line = getattr(node, "end_lineno", None) or lineno
        end_col = getattr(node, "end_col_offset", None) or col
        # (positional, the import at the top: a span per statement and expression, and the
        # import statement here was a third of it)
        off = self.col_offset + 1
        return Span(self.name, lineno + self.line_offset, end_line + self.line_offset,
                    col + off, end_col + off)

    def error(self, node, message: str) -> ParserError:
        """A ParserError at ``node`` (an ``ast`` node; None: no position)."""
        lineno = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        if lineno is None:
            return ParserError(message, self.name)
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return ParserError(message, self.name, lineno + self.line_offset,
                           (col or 0) + self.col_offset + 1, text, (col or 0))


class ParserError(ValueError):
    """TVMScript that cannot be parsed: unsupported syntax, an undefined name, a type error.

    ``lineno`` and ``col`` (1-based) locate it in ``source_name``; the message repeats them as
    ``file:line:col`` and shows the offending line with a caret under the column.
    """

    def __init__(self, message: str, source_name: str = "<string>", lineno: int | None = None,
                 col: int | None = None, line_text: str = "", caret: int = 0):
        self.message = message
        self.source_name = source_name
        self.lineno = lineno
        self.col = col
        if lineno is None:
            full = f"{source_name}: error: {message}"
        else:
            full = (f"{source_name}:{lineno}:{col}: error: {message}\n"
                    f"  (line {lineno}, column {col})\n    {line_text}\n    {' ' * caret}^")
        super().__init__(full)
