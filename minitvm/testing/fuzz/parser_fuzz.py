"""Mutation fuzzing of the Relay text parser: "a clear error or a module, never anything else".

Texts of random programs are mutated (characters and tokens deleted, duplicated, swapped or
replaced; numbers made huge, negative, fractional or out of range; brackets nested thousands
deep; the metadata JSON damaged; the text truncated) and parsed. Allowed outcomes: a module, a
``ParseError`` (syntax, with line and column) or the type checker's ``RelayTypeError`` (the text
parsed but the program is ill-typed). Anything else — KeyError, RecursionError, OverflowError,
a hang — is a failure.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from ...ir.diagnostics import RelayTypeError
from ...relay.parser import ParseError, parse
from .generator import generate_program

_TOKENS = ["(", ")", "[", "]", "{", "}", ",", ";", "=", "%0", "%x0", "@main", "fn", "let",
           "if", "else", "match", "meta", "Tensor", "float32", "int8", "?", "->", ".", "0",
           "1.5", "-", "1e999", "300i8", "-1u8", "99999999999999999999", "axis=", "axis=1.5",
           "/*", "*/", "//", '"', "#[metadata]", "#[version = \"0.0.5\"]", "free_var",
           "Tensor[(2.5, 3), float32]", "float7", "ref(", "meta[relay.Constant][9]", "\n"]
_NUMBERS = ["0", "-1", "1.5", "1e999", "1e-999", "99999999999999999999", "2.5", "300i8",
            "-129i8", "65536u16", "1" * 5000, "0x10", "1e39f", "nan", "inf", "-0"]


@dataclass
class ParserFuzzReport:
    """Counts of outcomes and the failing texts (at most ``keep`` of them)."""

    total: int = 0
    parsed: int = 0
    parse_errors: int = 0
    type_errors: int = 0
    failures: list = field(default_factory=list)
    slowest: float = 0.0

    def __str__(self):
        return (f"{self.total} mutated texts: {self.parsed} parsed, {self.parse_errors} "
                f"ParseError, {self.type_errors} type errors, {len(self.failures)} failures "
                f"(slowest parse {self.slowest:.2f} s)")


def splice(text: str, kind: int, i: int, j: int, rng: random.Random, tokens, numbers):
    """The text-level mutations both dialects' fuzzers share (kinds 0-4: delete ``[i, j)``,
    insert a token, repeat a span, replace a number, truncate); None for another kind."""
    n = len(text)
    if kind == 0:
        return text[:i] + text[j:]
    if kind == 1:
        return text[:i] + rng.choice(tokens) + text[i:]
    if kind == 2:
        return text[:i] + text[i:j] * rng.randint(2, 4) + text[j:]
    if kind == 3:  # replace a number
        digits = [k for k, c in enumerate(text) if c.isdigit()]
        if not digits:
            return text
        k = rng.choice(digits)
        e = k
        while e < n and (text[e].isalnum() or text[e] == "."):
            e += 1
        return text[:k] + rng.choice(numbers) + text[e:]
    if kind == 4:
        return text[: rng.randrange(n + 1)]
    return None


def mutate(text: str, rng: random.Random) -> str:
    """One to three random mutations of ``text``."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(10)
        n = len(text)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randint(1, 20))
        spliced = splice(text, kind, i, j, rng, _TOKENS, _NUMBERS)
        if spliced is not None:
            text = spliced
        elif kind == 5:  # deep nesting
            depth = rng.choice([50, 500, 3000])
            open_, close = rng.choice([("(", ")"), ("[", "]"), ("{", "}"), ("(", ",)")])
            text = text[:i] + open_ * depth + text[i:j] + close * depth + text[j:]
        elif kind == 6:  # swap two spans
            a, b = sorted(rng.sample(range(n + 1), 2)) if n > 1 else (0, 0)
            text = text[:a] + text[b:b + 10] + text[a + 10:b] + text[a:a + 10] + text[b + 10:]
        elif kind == 7:
            text = text[:i] + chr(rng.randrange(32, 0x2FF)) + text[i:]
        elif kind == 8:  # damage the metadata JSON
            k = text.find("#[metadata]")
            if k >= 0:
                body = k + len("#[metadata]")
                m = rng.randrange(body, len(text) + 1)
                text = text[:m] + rng.choice(["[" * 5000, "}", '"x"', "null", "1e999",
                                              '{"relay.Constant": 5}', ""]) + text[m + 1:]
        else:
            text = text.replace(rng.choice(["float32", "int32", "axis", "Tensor", "%x0"]),
                                rng.choice(["float7", "int3", "axes", "Tensr", "%y"]), 1)
    return text


def check_text(text: str) -> tuple[str, BaseException | None]:
    """``("parsed" | "parse_error" | "type_error" | "failure", exception)``."""
    try:
        parse(text)
    except ParseError as err:
        if not err.line:
            return "failure", err  # a ParseError must say where
        return "parse_error", err
    except RelayTypeError as err:
        return "type_error", err
    except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
        return "failure", err
    return "parsed", None


def fuzz_parser(n: int, seed: int = 0, keep: int = 20, programs: int = 40) -> ParserFuzzReport:
    """Parse ``n`` mutations of the texts of ``programs`` random programs."""
    rng = random.Random(seed)
    bases = [generate_program(seed * 1000 + k).mod.astext() for k in range(programs)]
    bases.append('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 3), float32]) {\n'
                 '  %0 = sum(%x, axis=[1]);\n  (%0, meta[relay.Constant][0])\n}\n#[metadata]\n'
                 '{"relay.Constant": [{"type_key": "relay.Constant", "dtype": "float32", '
                 '"shape": [], "data": "AACAfw=="}]}\n')
    return run_mutations(n, bases, rng, mutate, check_text, ParserFuzzReport(), keep)


_COUNTERS = {"parsed": "parsed", "parse_error": "parse_errors", "type_error": "type_errors"}


def run_mutations(n: int, bases: list, rng: random.Random, mutate_fn, check_fn, report,
                  keep: int):
    """Check ``n`` mutations of texts drawn from ``bases``; count each allowed outcome in the
    report's field of that name and keep the first ``keep`` failures' texts."""
    for _ in range(n):
        text = mutate_fn(rng.choice(bases), rng)
        t0 = time.perf_counter()
        outcome, err = check_fn(text)
        report.slowest = max(report.slowest, time.perf_counter() - t0)
        report.total += 1
        field_name = _COUNTERS.get(outcome)
        if field_name is not None and hasattr(report, field_name):
            setattr(report, field_name, getattr(report, field_name) + 1)
        elif len(report.failures) < keep:
            report.failures.append((text, f"{type(err).__name__}: {str(err)[:300]}"))
        else:
            report.failures.append((None, type(err).__name__))
    return report
