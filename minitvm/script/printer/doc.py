"""Statement documents of the TVMScript printer and their rendering as Python text.

Expressions are printed straight to strings; statements are small nodes (a line, a ``with`` /
``if`` scope, a function or class) rendered by one loop over an explicit work stack with the
layout rules of TVM's Python doc printer: a block's statements each on a new line one level
deeper (``pass`` for an empty one), a blank line after every function and class, and trailing
whitespace stripped from the whole text.
"""

from __future__ import annotations

_ROPE_MIN = 256


class Rope(tuple):
    """A long expression text kept as its parts (strs and Ropes), joined once when its statement
    is built: nesting a call in a call costs O(1), so a 100,000-deep expression prints in
    linear time."""

    __slots__ = ()


def cat(parts) -> str | Rope:
    """The concatenation of ``parts``: a str while short, a Rope once long or nested."""
    total = 0
    for p in parts:
        if type(p) is Rope:
            return Rope(parts)
        total += len(p)
    return Rope(parts) if total > _ROPE_MIN else "".join(parts)


def join(sep: str, items) -> str | Rope:
    """``sep.join(items)`` for docs that may be Ropes."""
    parts: list = []
    for k, item in enumerate(items):
        if k:
            parts.append(sep)
        parts.append(item)
    return cat(parts)


def flat(doc) -> str:
    """The text of an expression doc (a str, or a Rope joined iteratively)."""
    if type(doc) is not Rope:
        return doc
    out: list[str] = []
    stack = [iter(doc)]
    while stack:
        for part in stack[-1]:
            if type(part) is Rope:
                stack.append(iter(part))
                break
            out.append(part)
        else:
            stack.pop()
    return "".join(out)


def is_expr(doc) -> bool:
    return type(doc) is str or type(doc) is Rope


def quote(s: str) -> str:
    """A Python string literal with TVM's escapes."""
    if s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def call_text(callee, args=(), kwargs=()):
    """``callee(args, key=value)`` (a str, or a Rope when long)."""
    parts = [callee, "("]
    for a in args:
        if len(parts) > 2:
            parts.append(", ")
        parts.append(a)
    for k, v in kwargs:
        if len(parts) > 2:
            parts.append(", ")
        parts.append(k)
        parts.append("=")
        parts.append(v)
    parts.append(")")
    return cat(parts)


def tuple_text(items):
    items = list(items)
    if len(items) == 1:
        return cat(["(", items[0], ",)"])
    return cat(["(", join(", ", items), ")"])


def list_text(items):
    return cat(["[", join(", ", items), "]"])


class Stmt:
    """Base of statement documents."""

    __slots__ = ()


class Line(Stmt):
    """One line: an assignment, ``return``, a bare expression (``expr`` set) or a declaration."""

    __slots__ = ("text", "expr")

    def __init__(self, text, expr=None):
        self.text = flat(text)
        self.expr = None if expr is None else self.text


def expr_stmt(expr) -> Line:
    """A bare expression statement (the value of a SeqExpr in an ``if`` branch, ``R.output``)."""
    return Line(expr, True)


def assign(lhs: str, rhs=None, ann=None) -> Line:
    """``lhs: ann = rhs`` with the annotation and the right-hand side each optional."""
    if ann is None and rhs is None:
        return Line(lhs)
    parts = [lhs]
    if ann is not None:
        parts += [": ", ann]
    if rhs is not None:
        parts += [" = ", rhs]
    return Line(cat(parts))


class Comment(Stmt):
    """``# text`` (one line per line of ``text``); the empty comment renders as an empty line."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class Scope(Stmt):
    """``head:`` followed by an indented body (``with R.dataflow():``)."""

    __slots__ = ("head", "body")

    def __init__(self, head: str, body: list):
        self.head = head
        self.body = body


class If(Stmt):
    """``if cond:`` then-branch ``else:`` else-branch (the else part only when non-empty)."""

    __slots__ = ("cond", "then_body", "else_body")

    def __init__(self, cond, then_body: list, else_body: list):
        self.cond = flat(cond)
        self.then_body = then_body
        self.else_body = else_body


class Def(Stmt):
    """A function or class: ``@decorator`` lines, the ``def``/``class`` line, the body, then a
    blank line."""

    __slots__ = ("decorators", "head", "body")

    def __init__(self, decorators: list[str], head: str, body: list):
        self.decorators = decorators
        self.head = head
        self.body = body


class RawDef(Stmt):
    """A function already printed as lines by another printer (a TIR ``@T.prim_func``), indented
    as a whole and followed by a blank line like ``Def``."""

    __slots__ = ("lines",)

    def __init__(self, lines: list[str]):
        self.lines = lines


def render(stmts: list, indent_spaces: int = 4) -> str:
    """The text of a top-level statement block."""
    out: list[str] = []
    # work items: a Stmt at an indent level, ("nl", level) a newline, ("nl0",) a bare newline,
    # or a str written as is
    work: list = []
    for s in reversed(stmts):
        work.append(("nl", 0))
        work.append((s, 0))
    pad = " " * indent_spaces
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        first = item[0]
        if first == "nl":
            out.append("\n" + pad * item[1])
            continue
        if first == "nl0":
            out.append("\n")
            continue
        s, level = item
        t = type(s)
        if t is Line:
            out.append(s.text)
        elif t is Comment:
            if s.text:
                parts = s.text.split("\n")
                seq: list = []
                for k, part in enumerate(parts):
                    if k:
                        seq.append(("nl", level))
                    seq.append("# " + part)
                work.extend(reversed(seq))
        elif t is Scope:
            out.append(s.head)
            _push_block(work, s.body, level + 1)
        elif t is If:
            out.append(f"if {s.cond}:")
            # pushed in reverse: the else part, then the then-block popped first
            if s.else_body:
                _push_block(work, s.else_body, level + 1)
                work.append("else:")
                work.append(("nl", level))
            _push_block(work, s.then_body, level + 1)
        elif t is Def:
            work.append(("nl0",))
            _push_block(work, s.body, level + 1)
            work.append(s.head)
            for dec in reversed(s.decorators):
                work.append(("nl", level))
                work.append("@" + dec)
        elif t is RawDef:
            work.append(("nl0",))
            seq = []
            for k, line in enumerate(s.lines):
                if k:
                    seq.append(("nl", level))
                seq.append(line)
            work.extend(reversed(seq))
        else:  # pragma: no cover - every statement class is handled above
            raise TypeError(f"cannot render {t.__name__}")
    return "".join(out).rstrip()


def _push_block(work: list, body: list, level: int) -> None:
    """Push an indented block: each statement on a new line at ``level``; ``pass`` if empty."""
    if not body:
        work.append("pass")
        work.append(("nl", level))
        return
    for s in reversed(body):
        work.append((s, level))
        work.append(("nl", level))
