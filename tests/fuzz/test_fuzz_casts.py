"""CI sample of the cast fuzzer (``fuzz_long --cast-programs``): chains of casts between
float32 / float16 / int8 / uint8 / int32 / bool with exact operations between them, fed values
at the casts' jumps, compared exactly (NaN for NaN, the sign of zero) -- Relay in the
interpreter, the graph executor and the VM, Relax in the reference and relax.build; a planted
off-by-one cast is caught."""

import numpy as np

from minitvm.testing.fuzz import cast_generator
from minitvm.testing.fuzz.cast_generator import (
    CAST_JUMPS,
    check_cast_program,
    generate_cast_program,
)


def test_programs_cast_between_the_dtypes_at_their_jumps():
    progs = [generate_cast_program(s) for s in range(40)]
    casts = {f for p in progs for f in p.features if "->" in f}
    for pair in ("float32->float16", "float16->int8", "float16->uint8", "float32->bool"):
        assert any(c.startswith(pair.split("->")[0]) for c in casts), pair
    assert {p.dialect for p in progs} == {"relay", "relax"}
    x = progs[0].inputs()[0]
    assert np.isin(x, np.array(CAST_JUMPS, "float32")).mean() > 0.5 or x.size < 4
    assert generate_cast_program(5).inputs()[0].tolist() == \
        generate_cast_program(5).inputs()[0].tolist()


def test_relay_and_relax_programs_agree_exactly():
    for seed in (0, 1, 2, 3):
        assert check_cast_program(generate_cast_program(seed)) == []


def test_the_sign_of_zero_is_compared_but_not_a_nans():
    a = np.array([0.0, np.nan, 1.0], "float32")
    assert cast_generator._exact([a], [np.array([0.0, -np.nan, 1.0], "float32")]) is None
    assert "sign of zero" in cast_generator._exact([a], [np.array([-0.0, np.nan, 1.0],
                                                                  "float32")])


def test_a_planted_wrong_cast_is_caught(monkeypatch):
    prog = next(p for p in map(generate_cast_program, range(0, 40, 2))
                if any(s[1] == "cast" and s[0] in ("int8", "uint8", "int32")
                       for s in p.steps) and p.outputs)
    real = cast_generator._relay_results

    def off_by_one(p, inputs):
        out = real(p, inputs)
        key = next(k for k in out if k.startswith("relay.vm"))
        out[key] = [o + np.ones_like(o) if o.dtype.kind in "iuf" else ~o for o in out[key]]
        return out

    monkeypatch.setattr(cast_generator, "_relay_results", off_by_one)
    found = check_cast_program(prog)
    assert [f.pass_name.startswith("relay.vm.compile") for f in found] == [True]
