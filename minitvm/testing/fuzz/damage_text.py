"""Token-level damage to Relay text and TVMScript: an error must say ``line:col``.

The texts of random programs (``generator`` / ``relax_generator``) are split into tokens
(names, ``%vars``, numbers, strings, punctuation); one to three tokens are deleted, repeated,
swapped with their neighbour or replaced by another token of the same text or a hostile one.
Relay text goes through ``relay.parse`` (a ParseError or a type error must carry the source
``line:col``); TVMScript through ``script.from_source`` (a ParserError with its line and column;
a parsed module must be well formed). The character-level mutators are ``parser_fuzz`` and
``relax_parser_fuzz``; this family adds token edits and runs them isolated (hangs are findings).
"""

from __future__ import annotations

import random
import re

from .damage import DamageCase, Wrong

__all__ = ["cases", "tokens", "edit_tokens"]

_TOKEN = re.compile(r"\s+|%?[A-Za-z_][\w.]*|-?\d+(\.\d+)?([eE]-?\d+)?[a-z]*\d*|\"[^\"\n]*\"|"
                    r"'[^'\n]*'|->|\S")
_HOSTILE = ["(", ")", "[", "]", "{", "}", ",", ";", ":", "=", "->", "%0", "fn", "let", "def",
            "return", "R.Tensor", "float32", "int64", "?", "1e999", "-1", "0", "99999999999",
            "\"", "'", "\n", "#", "meta", "None", "lambda", "@", "*", "/*"]


def tokens(text: str) -> list[str]:
    """``text`` split into tokens (whitespace runs are tokens too: joining gives it back)."""
    return [m.group(0) for m in _TOKEN.finditer(text)]


def edit_tokens(text: str, rng: random.Random) -> tuple[str, str]:
    """One to three token edits of ``text`` and their description."""
    toks = tokens(text)
    solid = [i for i, t in enumerate(toks) if not t.isspace()]
    done = []
    for _ in range(rng.randint(1, 3)):
        if not solid:
            break
        i = rng.choice(solid)
        kind = rng.choice(["delete", "repeat", "swap", "replace", "hostile"])
        if kind == "delete":
            toks[i] = ""
        elif kind == "repeat":
            toks[i] = toks[i] + " " + toks[i]
        elif kind == "swap":
            j = next((k for k in solid if k > i), None)
            if j is not None:
                toks[i], toks[j] = toks[j], toks[i]
        elif kind == "replace":
            toks[i] = toks[rng.choice(solid)]
        else:
            toks[i] = rng.choice(_HOSTILE)
        done.append(f"{kind}@{i}")
    return "".join(toks), " ".join(done)


_LINE_COL = r"re::\d+:\d+"


def _relay_case(text: str, what: str) -> callable:
    def run():
        from ...ir.diagnostics import DiagnosticError
        from ...relay.parser import ParseError, parse

        try:
            parse(text)
        except ParseError as err:
            if not err.line:
                raise Wrong(f"a ParseError without a line: {err}") from None
            raise
        except DiagnosticError:
            raise
    return run


def _script_case(text: str) -> callable:
    def run():
        from .relax_parser_fuzz import check_script

        outcome, err = check_script(text, timeout=1e9)  # (the runner watches for hangs)
        if outcome == "failure":
            if isinstance(err, ValueError) and "ill-formed" in str(err):
                raise Wrong(str(err))
            raise err
        if outcome == "parse_error":
            raise err
    return run


def cases(seed: int, n: int) -> list[DamageCase]:
    """``n`` token-damaged texts, half Relay text and half TVMScript."""
    from .generator import generate_program
    from .relax_generator import generate_relax_program

    rng = random.Random(seed)
    relay_bases = [generate_program(seed * 1000 + k).mod.astext() for k in range(12)]
    script_bases = [generate_relax_program(seed * 1000 + k, max_ops=8).script()
                    for k in range(12)]
    out = []
    for i in range(n):
        if i % 2 == 0:
            b = rng.randrange(len(relay_bases))
            text, what = edit_tokens(relay_bases[b], rng)
            out.append(DamageCase("text/relay", f"relay#{i} base {b} {what}",
                                  _relay_case(text, what), (_LINE_COL,)))
        else:
            b = rng.randrange(len(script_bases))
            text, what = edit_tokens(script_bases[b], rng)
            out.append(DamageCase("text/tvmscript", f"tvmscript#{i} base {b} {what}",
                                  _script_case(text), (_LINE_COL,)))
    return out
