"""Mutation fuzzing of the TVMScript parser on Relax programs: "a clear error or a module".

The TVMScript of random Relax programs (constants in the metadata section) is mutated —
characters and tokens deleted, duplicated, swapped or replaced; numbers made huge, negative,
fractional or out of range; dtypes and operator names misspelled; calls, tuples and annotations
nested thousands deep; the metadata JSON damaged; the text truncated — and parsed with
``tvm.script.from_source``. Allowed outcomes: a module, or a ``ParserError`` that says where
(line and column). Anything else — KeyError, RecursionError, OverflowError, a hang — is a
failure.
"""

from __future__ import annotations

import random
import signal
import threading
from dataclasses import dataclass, field

from ...script.parser.error import ParserError
from .parser_fuzz import run_mutations, splice
from .relax_generator import generate_relax_program

__all__ = ["fuzz_relax_parser", "check_script", "mutate_script", "RelaxParserFuzzReport"]

_TOKENS = ["(", ")", "[", "]", ",", ":", "=", "R.", "T.", "R.add", "R.Tensor", "R.Tuple",
           "R.shape", "R.dataflow()", "R.output(", "with ", "if ", "else:", "return ", "lambda",
           "metadata", '"float32"', '"float7"', "dtype=", "axis=", "axis=1.5", "n", "T.int64()",
           "R.match_cast(", "R.const(", "1e999", "-1", "0", "**", "@R.function", "@T.prim_func",
           "class ", "def ", "\n", "\n    ", "    ", "#", '"""', "'", "\\", "None", "...", "*"]
_NUMBERS = ["0", "-1", "1.5", "1e999", "-1e999", "99999999999999999999", "2**70", "1" * 5000,
            "0x10", "nan", "inf", "-0", "True", "2.5", "1e-999", "300"]
_NAMES = [("float32", "float7"), ("float32", "int3"), ("R.add", "R.ad"), ("R.nn.", "R.nx."),
          ("axis", "axes"), ("R.Tensor", "R.Tensr"), ("keepdims", "keep"), ("lv", "zz"),
          ("R.output", "R.outputs"), ("dtype=", "dtype=1, dtype="), ("x0", "x9"),
          ("R.dataflow", "R.dataflw"), ("T.int64()", "T.int64(3)"), ("n", "m")]


@dataclass
class RelaxParserFuzzReport:
    """Counts of outcomes and the failing texts (at most ``keep`` of them)."""

    total: int = 0
    parsed: int = 0
    parse_errors: int = 0
    failures: list = field(default_factory=list)
    slowest: float = 0.0

    def __str__(self):
        return (f"{self.total} mutated Relax scripts: {self.parsed} parsed, {self.parse_errors}"
                f" ParserError, {len(self.failures)} failures (slowest parse "
                f"{self.slowest:.2f} s)")


def _nest(rng: random.Random, depth: int) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return "(" * depth + "x0" + ")" * depth
    if kind == 1:
        return "R.Tuple(" * depth + 'R.Tensor((2,), "float32")' + ")" * depth
    if kind == 2:
        return "R.add(" * depth + "x0" + ", x0)" * depth
    if kind == 3:
        return "[" * depth + "1" + "]" * depth
    return "(" * depth + "1," + ")" * depth


def mutate_script(text: str, rng: random.Random) -> str:
    """One to three random mutations of ``text``."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(11)
        n = len(text)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randint(1, 20))
        spliced = splice(text, kind, i, j, rng, _TOKENS, _NUMBERS)
        if spliced is not None:
            text = spliced
        elif kind == 5:  # deep nesting, at an expression position when one is found
            eq = [k for k in range(n) if text.startswith(" = ", k)]
            depth = rng.choice([30, 200, 1000, 5000])
            if eq:
                k = rng.choice(eq) + 3
                end = text.find("\n", k)
                end = n if end < 0 else end
                text = text[:k] + _nest(rng, depth) + text[end:]
            else:
                text = text[:i] + _nest(rng, depth) + text[i:]
        elif kind == 6:  # swap two spans
            if n > 1:
                a, b = sorted(rng.sample(range(n + 1), 2))
                text = text[:a] + text[b:b + 10] + text[a + 10:b] + text[a:a + 10] + \
                    text[b + 10:]
        elif kind == 7:
            text = text[:i] + chr(rng.randrange(32, 0x2FF)) + text[i:]
        elif kind == 8:  # damage the metadata JSON
            k = text.find('load_json("""')
            if k >= 0:
                m = rng.randrange(k + 13, max(k + 14, text.find('""")', k)))
                text = text[:m] + rng.choice(["[" * 5000, "}", '"x"', "null", "1e999",
                                              '{"dtype": 5}', "", "]]", "-"]) + text[m + 1:]
        elif kind == 9:
            old, new = rng.choice(_NAMES)
            text = text.replace(old, new, rng.choice([1, -1]))
        else:  # an indentation change on one line
            lines = text.split("\n")
            k = rng.randrange(len(lines))
            lines[k] = rng.choice(["", " ", "  ", "\t"]) + lines[k].lstrip(" ") \
                if rng.random() < 0.5 else "    " + lines[k]
            text = "\n".join(lines)
    return text


def _well_formed(obj) -> str | None:
    from ...ir.module import IRModule
    from ...relax.analysis.well_formed import check_well_formed
    from ...relax.expr import Function

    if isinstance(obj, IRModule | Function):
        return check_well_formed(obj)
    return None


class _Timeout(Exception):
    pass


def check_script(text: str, timeout: float = 20.0) -> tuple[str, BaseException | None]:
    """``("parsed" | "parse_error" | "failure", exception)`` for one text."""
    from ...script.parser.entry import from_source

    use_alarm = threading.current_thread() is threading.main_thread()

    def on_alarm(signum, frame):
        raise _Timeout(f"no answer in {timeout} s")

    old = signal.signal(signal.SIGALRM, on_alarm) if use_alarm else None
    if use_alarm:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        parsed = from_source(text)
        problem = _well_formed(parsed)
        if problem:  # the parser accepted text whose program is not valid Relax
            return "failure", ValueError(f"parsed into an ill-formed module: {problem}")
    except ParserError as err:
        if not err.lineno or not err.col:
            return "failure", err  # a ParserError must say where
        return "parse_error", err
    except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
        return "failure", err
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return "parsed", None


def fuzz_relax_parser(n: int, seed: int = 0, keep: int = 20,
                      programs: int = 30) -> RelaxParserFuzzReport:
    """Parse ``n`` mutations of the TVMScript of ``programs`` random Relax programs."""
    rng = random.Random(seed)
    bases = [generate_relax_program(seed * 1000 + k, max_ops=8).script()
             for k in range(programs)]
    return run_mutations(n, bases, rng, mutate_script, check_script, RelaxParserFuzzReport(),
                         keep)
