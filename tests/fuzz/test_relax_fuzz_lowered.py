"""CI sample of the lowering-sequence Relax fuzzer (``fuzz_long --relax-lowered-programs``):
BlockBuilder programs through high-level passes, LegalizeOps, AnnotateTIROpPattern, FuseOps,
FuseTIR and clean-ups, then relax.build, against the numpy reference; the exported and loaded
executable equal to the in-memory one bit for bit. A loaded executable that computes something
else is caught."""

import pytest

from minitvm.testing.fuzz import relax_lowered_sequences as lowered
from minitvm.testing.fuzz.relax_lowered_sequences import (
    LOWERING,
    check_lowered_program,
    draw_lowered_sequence,
    generate_lowered_program,
)


@pytest.mark.parametrize("seed", [6, 23])  # static / symbolic, down to FuseTIR
def test_lowered_programs_agree_and_survive_export(seed):
    assert "FuseTIR" in draw_lowered_sequence(seed)
    assert check_lowered_program(generate_lowered_program(seed)) == []


def test_sequences_lower_in_order():
    for seed in range(60):
        seq = draw_lowered_sequence(seed)
        chain = [n for n in seq[seq.index("LegalizeOps"):] if n in LOWERING]
        assert chain == list(LOWERING[:len(chain)])
        assert seq == draw_lowered_sequence(seed)
    ends = {[n for n in draw_lowered_sequence(s) if n in LOWERING][-1] for s in range(60)}
    assert ends == set(LOWERING)  # every depth of lowering is drawn
    assert "lowered to FuseTIR" in generate_lowered_program(6).features


def test_a_loaded_executable_that_differs_is_found(monkeypatch):
    from minitvm import relax

    other = relax.build(generate_lowered_program(4).mod, target="llvm")
    monkeypatch.setattr(lowered, "exported_and_loaded", lambda ex, folder: other)
    found = check_lowered_program(generate_lowered_program(0))
    assert [f.pass_name for f in found] == ["export_library+load"]


def test_found_argmax_over_an_empty_axis_with_an_empty_result():
    """Seed 610933 (fuzz61, an oracle bug): ``argmax(matmul(x, x.T), axis=1)`` at n = 0
    reduces an empty axis into an empty result. The VM refuses it (``check_nonempty``: no
    identity value), as the static struct-info check refuses a static zero-size axis; the
    reference returned the empty result before its empty-reduction check. It now raises
    EmptyReduction too, which the comparison accepts as the VM's ValueError."""
    from minitvm.testing.fuzz.relax_reference import EmptyReduction, evaluate

    prog = generate_lowered_program(610933)
    assert "R.argmax(lv1, axis=1" in prog.mod.script()
    with pytest.raises(EmptyReduction, match="argmax"):
        evaluate(prog.mod, prog.inputs(0, seed=0))
    assert evaluate(prog.mod, prog.inputs(2, seed=0))  # non-empty: values
