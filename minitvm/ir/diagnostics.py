"""Diagnostics: error classes that say what went wrong and where, with the program marked.

``tvm.ir.diagnostics`` names (DiagnosticLevel, Diagnostic, DiagnosticContext, DiagnosticError)
plus the helpers the type checker uses to render a program with the offending expression marked.
"""

from __future__ import annotations

from enum import IntEnum

from .dialect import find_hook
from .prim_expr import Any, IntImm
from .type import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    PrimType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)

__all__ = [
    "DiagnosticLevel", "Diagnostic", "DiagnosticContext", "DiagnosticError", "RelayTypeError",
    "format_type", "describe_expr", "render_program",
]

_MAX_PROGRAM_LINES = 40
_CONTEXT_LINES = 8


class DiagnosticLevel(IntEnum):
    BUG = 10
    ERROR = 20
    WARNING = 30
    NOTE = 40
    HELP = 50


class Diagnostic:
    """One message about a program location (an expression and/or a source span)."""

    __slots__ = ("level", "span", "message", "expr")

    def __init__(self, level: DiagnosticLevel, span, message: str, expr=None):
        self.level = DiagnosticLevel(level)
        self.span = span
        self.message = message
        self.expr = expr

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}{self.level.name.lower()}: {self.message}"

    __repr__ = __str__


class DiagnosticError(TypeError):
    """Raised when a program is rejected; ``diagnostics`` lists what was found."""

    def __init__(self, message: str, diagnostics=None):
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])


class RelayTypeError(DiagnosticError):
    """A Relay type error; ``expr`` is the offending sub-expression, ``root`` the checked program."""

    def __init__(self, message: str, expr=None, root=None, detail: str = ""):
        super().__init__(message, [Diagnostic(DiagnosticLevel.ERROR, _span(expr), detail, expr)])
        self.expr = expr
        self.root = root
        self.detail = detail


class DiagnosticContext:
    """Collects diagnostics for a module; ``render()`` raises if any error was emitted."""

    def __init__(self, module=None, renderer=None):
        self.module = module
        self.renderer = renderer
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def emit_fatal(self, diagnostic: Diagnostic):
        self.emit(diagnostic)
        self.render()

    def render(self) -> None:
        errors = [d for d in self.diagnostics if d.level <= DiagnosticLevel.ERROR]
        if self.renderer is not None:
            self.renderer(self)
        if errors:
            self.diagnostics = []
            raise DiagnosticError("\n".join(str(d) for d in errors), errors)


def _span(expr):
    return getattr(expr, "span", None) if expr is not None else None


# --------------------------------------------------------------------------- type text
def _dim_text(d) -> str:
    if isinstance(d, Any):
        return "?"
    if isinstance(d, IntImm):
        return str(d.value)
    return str(d) if isinstance(d, int) else repr(d)


def format_type(t, _depth: int = 0) -> str:
    """A type as Relay text (``Tensor[(1, 3), float32]``) without needing the printer; what is
    nested more than 100 levels deep prints as ``...`` (bounded recursion)."""
    if _depth > 100:
        return "..."
    if t is None:
        return "<untyped>"
    if isinstance(t, TensorType):
        if not t.shape:
            return t.dtype
        dims = ", ".join(_dim_text(d) for d in t.shape)
        if len(t.shape) == 1:
            dims += ","
        return f"Tensor[({dims}), {t.dtype}]"
    if isinstance(t, TupleType):
        inner = ", ".join(format_type(f, _depth + 1) for f in t.fields)
        return f"({inner},)" if len(t.fields) == 1 else f"({inner})"
    if isinstance(t, FuncType):
        params = f"[{', '.join(format_type(p, _depth + 1) for p in t.type_params)}]" if t.type_params else ""
        args = ", ".join(format_type(a, _depth + 1) for a in t.arg_types)
        return f"fn {params}({args}) -> {format_type(t.ret_type, _depth + 1)}"
    if isinstance(t, TypeVar | GlobalTypeVar):
        return t.name_hint
    if isinstance(t, IncompleteType):
        return "?"
    if isinstance(t, RelayRefType):
        return f"ref({format_type(t.value, _depth + 1)})"
    if isinstance(t, TypeCall):
        args = ", ".join(format_type(a, _depth + 1) for a in t.args)
        return f"{format_type(t.func, _depth + 1)}[{args}]"
    if isinstance(t, PrimType):
        return t.dtype
    return type(t).__name__


# --------------------------------------------------------------------------- expressions
def describe_expr(e) -> str:
    """A one-line description of an expression (the dialect's hook ``describe``)."""
    describe = find_hook("describe", type(e))
    return describe(e) if describe is not None else type(e).__name__


def render_program(root, bad, note: str) -> str:
    """``root`` printed with ``bad`` marked by ``note``, trimmed around the mark.

    Uses the dialect's printer (hook ``annotated_text``) when there is one; falls back to a short description of ``bad``.
    """
    short = note if len(note) <= 80 else note[:77] + "..."
    marker = f" /* error: {short.replace('*/', '* /')} */"
    text = None
    try:
        printer = find_hook("annotated_text", type(root))
        text = printer(root, lambda e: marker if e is bad else "") if printer else None
    except Exception:  # noqa: BLE001 - the printer is optional here; fall back below
        text = None
    if text and marker in text:
        lines = text.splitlines()
        at = next(i for i, ln in enumerate(lines) if marker in ln)
        indent = len(lines[at]) - len(lines[at].lstrip())
        lines.insert(at + 1, " " * indent + "^^^ the error is here")
        lo, hi = 0, len(lines)
        if len(lines) > _MAX_PROGRAM_LINES:
            lo, hi = max(0, at - _CONTEXT_LINES), min(len(lines), at + _CONTEXT_LINES + 2)
        shown = lines[lo:hi]
        if lo > 0:
            shown.insert(0, "  ...")
        if hi < len(lines):
            shown.append("  ...")
        return "\n".join(shown)
    return f"  in: {describe_expr(bad)}"
