"""CI sample of the Relay text round-trip fuzzer (``fuzz_long --text-programs``): generated
programs in graph form, A-normal form, fused and fused + A-normal form print, parse back
structurally equal, print the same text again and run to the same values; a parser that
loses something is caught."""

import pytest

from minitvm.testing.fuzz import text_round_trip
from minitvm.testing.fuzz.text_round_trip import check_text_program, generate_text_program


@pytest.mark.parametrize("seed", [2, 3, 4, 6])  # graph, anf, fused, fused+anf
def test_generated_programs_round_trip(seed):
    tp = generate_text_program(seed)
    assert check_text_program(tp) == []


def test_forms_and_features_are_covered():
    progs = [generate_text_program(s) for s in range(12)]
    assert {p.form for p in progs} == set(text_round_trip.FORMS)
    fused = next(p for p in progs if p.form == "fused")
    assert "Primitive=1" in fused.mod.astext()
    anf = next(p for p in progs if p.form == "anf")
    assert "let %" in anf.mod.astext()
    assert generate_text_program(5).mod.astext() == generate_text_program(5).mod.astext()


def test_a_parser_that_drops_an_attribute_is_found(monkeypatch):
    from minitvm import relay

    real = relay.parse

    def lossy(text, *args, **kwargs):  # a parser that forgets fused functions' attributes
        return real(text.replace(", Primitive=1", ""), *args, **kwargs)

    monkeypatch.setattr(relay, "parse", lossy)
    found = check_text_program(generate_text_program(4))
    assert [f.kind for f in found] == ["round-trip"]
    assert "structurally equal" in found[0].detail
