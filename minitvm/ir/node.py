"""Node base class and source spans shared by every IR in minitvm."""

from __future__ import annotations

from dataclasses import dataclass


class Node:
    """Base of every IR node: plain ``__slots__`` objects, equal by identity."""

    __slots__ = ("__weakref__",)

    def same_as(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:  # overridden by printable nodes
        return f"{type(self).__name__}(...)"


@dataclass(frozen=True)
class SourceName:
    name: str


@dataclass(frozen=True)
class Span:
    """A source location: file, line and column range (1-based lines)."""

    source_name: SourceName | str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        name = self.source_name.name if isinstance(self.source_name, SourceName) else self.source_name
        return f"{name}:{self.line}:{self.column}"
