"""Relay programs through the text printer and parser: ``parse(astext(m))`` is ``m``.

DESIGN.md §1 fixes that the printed Relay text parses back structurally equal. The parser
fuzzer (``parser_fuzz``) damages texts; here whole random programs of the Relay generator
(attributes, tuples, let, if, closures, ADTs, constants in the metadata section) are printed in
one of four forms drawn from the seed -- as generated (graph form), in A-normal form (a let per
value), after FuseOps (``Primitive=1`` functions with their attributes) and fused then in
A-normal form -- and parsed back. Each must be structurally equal to the printed module, print
to the same text again, and run on the interpreter to the same values exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .differential import Finding, compare_values, run_interpreter
from .generator import GeneratedProgram, generate_program

FORMS = ("graph", "anf", "fused", "fused+anf")


@dataclass
class TextProgram:
    """A generated program in the printed form of its seed."""

    seed: int
    form: str
    prog: GeneratedProgram
    mod: object
    features: set = field(default_factory=set)


def _in_form(mod, form: str):
    from ... import transform as _transform
    from ...relay import transform

    mod = transform.InferType()(mod)
    with _transform.PassContext(opt_level=3):
        if form.startswith("fused"):
            mod = transform.InferType()(transform.FuseOps(fuse_opt_level=2)(mod))
        if form.endswith("anf"):
            mod = transform.InferType()(transform.ToANormalForm()(mod))
    return mod


def generate_text_program(seed: int) -> TextProgram:
    """The generator's program of ``seed`` in the seed's form."""
    form = random.Random(seed * 31 + 7).choice(FORMS)
    prog = generate_program(seed)
    return TextProgram(seed, form, prog, _in_form(prog.mod, form),
                       set(prog.features) | {f"form {form}"})


def check_text_program(tp: TextProgram) -> list[Finding]:
    """Print, parse, compare structure, text and interpreter values (exactly)."""
    from ...ir import structural_equal
    from ...relay import parse

    def finding(kind, what, text=""):
        return [Finding(kind, f"text round trip ({tp.form})", tp.seed, what, text)]

    try:
        text = tp.mod.astext()
    except Exception as err:  # noqa: BLE001
        return finding("exception", f"astext: {type(err).__name__}: {str(err)[:400]}")
    try:
        back = parse(text)
    except Exception as err:  # noqa: BLE001
        return finding("round-trip", f"parse: {type(err).__name__}: {str(err)[:400]}", text)
    if not structural_equal(back, tp.mod):
        return finding("round-trip", "parse(astext(m)) is not structurally equal to m", text)
    again = back.astext()
    if again != text:
        first = next(i for i, (a, b) in enumerate(zip(text, again + "\0")) if a != b)
        return finding("round-trip", f"the parsed module prints differently from char "
                       f"{first}: {again[max(first - 80, 0):first + 80]!r}", text)
    inputs = tp.prog.inputs()
    try:
        ref = run_interpreter(tp.mod, inputs)
    except Exception as err:  # noqa: BLE001 - the printed module itself does not run
        return finding("exception", f"interpreter: {type(err).__name__}: {str(err)[:300]}",
                       text)
    try:
        got = run_interpreter(back, inputs)
    except Exception as err:  # noqa: BLE001
        return finding("mismatch", f"the parsed module raised {type(err).__name__}: "
                       f"{str(err)[:300]}", text)
    diff = compare_values(ref, got, rtol=0.0, atol=0.0)
    return finding("mismatch", diff, text) if diff else []
