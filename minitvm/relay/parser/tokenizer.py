"""Tokenizer of the Relay text format (one compiled regex, comments dropped, positions kept)."""

from __future__ import annotations

import bisect
import re

from .errors import ParseError

# token kinds
LOCAL, GLOBAL, IDENT, NUMBER, STRING, PUNCT, VERSION, METADATA, EOF = (
    "local", "global", "identifier", "number", "string", "punctuation", "version", "metadata",
    "end of input",
)

_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_TOKEN = re.compile(
    r"""
    \s*(?:
    (?P<line_comment>//[^\n]*)
  | (?P<comment>/\*[^*/]*\*/)
  | (?P<block_open>/\*)
  | (?P<punct>->|=>|<=|>=|==|!=|[()\[\]{},;:=.?+\-*/<>^])
  | (?P<version>\#\[version\s*=\s*"(?P<ver>[^"]*)"\s*\])
  | (?P<metadata>\#\[metadata\])
  | (?P<local>%(?:""" + _NAME + r"""|[0-9]+))
  | (?P<global>@""" + _NAME + r""")
  | (?P<float>(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)(?P<fsuf>f16|f32|f64|f)?)
  | (?P<int>[0-9]+(?P<isuf>f16|f32|f64|f|i8|i16|i32|i64|u8|u16|u32|u64)?)
  | (?P<ident>""" + _NAME + r""")
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<ws>$)
  | (?P<bad>\S)
    )""",
    re.VERBOSE,
)
_INT_ONLY = re.compile(r"[0-9]+")
_SUFFIX_DTYPE = {
    "f": "float32", "f16": "float16", "f32": "float32", "f64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r"}


class Source:
    """The text being parsed, with line lookup for error messages."""

    def __init__(self, text: str, name: str):
        self.text = text
        self.name = name
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._last = (0, 0, 0)  # (start, end, line index) of the last line looked up

    def line_col(self, pos: int) -> tuple[int, int]:
        start, end, line = self._last
        if not start <= pos < end:  # the parser asks in text order: mostly the same line
            starts = self._starts
            line = bisect.bisect_right(starts, pos) - 1
            start = starts[line]
            end = starts[line + 1] if line + 1 < len(starts) else len(self.text) + 1
            self._last = (start, end, line)
        return line + 1, pos - start + 1

    def error(self, pos: int, message: str, hint: str = "") -> ParseError:
        line, col = self.line_col(pos)
        start = self._starts[line - 1]
        end = self.text.find("\n", start)
        line_text = self.text[start:] if end < 0 else self.text[start:end]
        return ParseError(message, self.name, line, col, line_text, hint)


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _skip_block_comment(src: Source, pos: int) -> int:
    """Position after the (possibly nested) block comment opened at ``pos``."""
    text, depth, i = src.text, 1, pos + 2
    while depth:
        close = text.find("*/", i)
        if close < 0:
            raise src.error(pos, "unterminated block comment")
        nested = text.find("/*", i, close)
        if nested >= 0:
            depth += 1
            i = nested + 2
        else:
            depth -= 1
            i = close + 2
    return i


def tokenize(src: Source) -> list[tuple]:
    """Tokens as ``(kind, value, pos)``; numbers carry ``(value, dtype)``.

    One ``finditer`` over the text (every non-blank character starts some match, so the
    matches are contiguous); a comment without ``*`` or ``/`` inside (the printer's
    ``/* ty=... */``) is one match, and only a nested or unusual one restarts the scan after it."""
    text = src.text
    tokens: list[tuple] = []
    append = tokens.append
    pos, n = 0, len(text)
    while pos < n:
        restart = None
        for m in _TOKEN.finditer(text, pos):
            kind = m.lastgroup
            if kind == "punct":
                append((PUNCT, m.group(kind), m.start(kind)))
            elif kind == "comment" or kind == "line_comment":
                continue
            elif kind == "local":
                append((LOCAL, m.group(kind)[1:], m.start(kind)))
            elif kind == "ident":
                append((IDENT, m.group(kind), m.start(kind)))
            elif kind == "int" or kind == "float":
                start = m.start(kind)
                if tokens and tokens[-1][1] == "." and tokens[-1][0] == PUNCT:
                    m = _INT_ONLY.match(text, start)  # %t.0.1: tuple indices, not a float
                    if len(m.group()) > 18:
                        raise src.error(start, f"tuple index {m.group()[:20]}... is too large")
                    append((NUMBER, (int(m.group()), "int32"), start))
                    restart = m.end()
                    break
                try:
                    append((NUMBER, _number(m), start))
                except (ValueError, OverflowError) as err:  # e.g. Python's digit limit
                    raise src.error(start, f"invalid number literal: {err}") from None
            elif kind == "block_open":
                restart = _skip_block_comment(src, m.start(kind))
                break
            elif kind == "global":
                append((GLOBAL, m.group(kind)[1:], m.start(kind)))
            elif kind == "string":
                append((STRING, _unescape(m.group(kind)[1:-1]), m.start(kind)))
            elif kind == "version":
                append((VERSION, m.group("ver"), m.start(kind)))
            elif kind == "metadata":  # the rest of the text is its JSON
                append((METADATA, text[m.end():], m.start(kind)))
                break
            elif kind == "bad":
                bad = m.start(kind)
                raise src.error(bad, f"unexpected character {text[bad]!r}")
            # ws: the blanks at the end of the text
        if restart is None:
            break
        pos = restart
    append((EOF, None, n))
    return tokens


def _number(m) -> tuple:
    text = m.group(m.lastgroup)
    if m.lastgroup == "float" or m.group("float"):
        suffix = m.group("fsuf") or ""
        body = text[: len(text) - len(suffix)]
        return float(body), _SUFFIX_DTYPE.get(suffix, "float32")
    suffix = m.group("isuf") or ""
    body = text[: len(text) - len(suffix)]
    dtype = _SUFFIX_DTYPE.get(suffix, "int32")
    if not dtype.startswith("float") and len(body) > 40:  # beyond every integer dtype
        raise ValueError(f"{body[:20]}... ({len(body)} digits) is out of range for {dtype}")
    return (float(body) if dtype.startswith("float") else int(body)), dtype
