"""Diagnostics: error classes that say what went wrong and where, with the program marked.

``tvm.ir.diagnostics`` names (DiagnosticLevel, Diagnostic, DiagnosticContext, DiagnosticError)
plus the helpers the type checker uses to render a program with the offending expression marked.
"""

from __future__ import annotations

from enum import IntEnum

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
    name = type(d).__name__
    if name == "Any":
        return "?"
    if name == "IntImm":
        return str(d.value)
    return str(d) if isinstance(d, int) else repr(d)


def format_type(t) -> str:
    """A type as Relay text (``Tensor[(1, 3), float32]``) without needing the printer."""
    if t is None:
        return "<untyped>"
    name = type(t).__name__
    if name == "TensorType":
        if not t.shape:
            return t.dtype
        dims = ", ".join(_dim_text(d) for d in t.shape)
        if len(t.shape) == 1:
            dims += ","
        return f"Tensor[({dims}), {t.dtype}]"
    if name == "TupleType":
        inner = ", ".join(format_type(f) for f in t.fields)
        return f"({inner},)" if len(t.fields) == 1 else f"({inner})"
    if name == "FuncType":
        params = f"[{', '.join(format_type(p) for p in t.type_params)}]" if t.type_params else ""
        args = ", ".join(format_type(a) for a in t.arg_types)
        return f"fn {params}({args}) -> {format_type(t.ret_type)}"
    if name in ("TypeVar", "GlobalTypeVar"):
        return t.name_hint
    if name == "IncompleteType":
        return "?"
    if name == "RelayRefType":
        return f"ref({format_type(t.value)})"
    if name == "TypeCall":
        args = ", ".join(format_type(a) for a in t.args)
        return f"{format_type(t.func)}[{args}]"
    if name == "PrimType":
        return t.dtype
    return name


# --------------------------------------------------------------------------- expressions
def describe_expr(e) -> str:
    """A one-line description of an expression (its head and immediate operands)."""
    name = type(e).__name__
    if name == "Var":
        return f"%{e.name_hint}"
    if name == "GlobalVar":
        return f"@{e.name_hint}"
    if name == "Constant":
        return f"constant of shape {tuple(e.data.shape)} and dtype {e.data.dtype}"
    if name == "Op":
        return e.name
    if name == "Constructor":
        return e.name_hint
    if name == "Call":
        args = ", ".join(_short(a) for a in e.args)
        return f"{_short(e.op)}({args})"
    if name == "Tuple":
        return "(" + ", ".join(_short(f) for f in e.fields) + ")"
    if name == "TupleGetItem":
        return f"{_short(e.tuple_value)}.{e.index}"
    if name == "Let":
        return f"let %{e.var.name_hint} = {_short(e.value)}; ..."
    if name == "If":
        return f"if ({_short(e.cond)}) {{...}} else {{...}}"
    if name == "Function":
        return "fn (" + ", ".join(f"%{p.name_hint}" for p in e.params) + ") {...}"
    if name == "Match":
        return f"match ({_short(e.data)}) {{...}}"
    return name


def _short(e) -> str:
    name = type(e).__name__
    if name in ("Var", "GlobalVar", "Op", "Constructor"):
        return describe_expr(e)
    if name == "Constant":
        return "meta[relay.Constant]"
    if name == "Call":
        return f"{_short(e.op)}(...)"
    return name.lower()


def render_program(root, bad, note: str) -> str:
    """``root`` printed with ``bad`` marked by ``note``, trimmed around the mark.

    Uses the Relay printer when it is available; falls back to a short description of ``bad``.
    """
    short = note if len(note) <= 80 else note[:77] + "..."
    marker = f" /* error: {short.replace('*/', '* /')} */"
    text = None
    try:
        from ..relay.printer import astext

        text = astext(root, False, lambda e: marker if e is bad else "")
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
