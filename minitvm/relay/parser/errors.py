"""ParseError: a syntax error in Relay text, reported with its line, column and a caret."""

from __future__ import annotations


class ParseError(ValueError):
    """Raised for malformed Relay text; ``line``/``column`` are 1-based."""

    def __init__(self, message: str, source_name: str = "from_string", line: int = 0,
                 column: int = 0, line_text: str = "", hint: str = ""):
        self.message = message
        self.source_name = source_name
        self.line = line
        self.column = column
        text = f"{source_name}:{line}:{column}: parse error: {message}"
        if line_text:
            text += f"\n  {line_text}\n  {' ' * (column - 1)}^"
        if hint:
            text += f"\nhint: {hint}"
        super().__init__(text)
