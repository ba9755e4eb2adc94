"""CI sample of the Relax pass-sequence fuzzer (``fuzz_long --relax-pass-programs``): generated
Relax programs through a random sequence of high-level passes, then relax.build, against the
numpy reference of the original program; a planted wrong pass is found and the sequence shrunk
to it."""

from minitvm.testing.fuzz import relax_pass_sequences
from minitvm.testing.fuzz.relax_pass_sequences import (
    check_relax_sequence,
    draw_sequence,
    generate_pass_program,
    sequence_pass_names,
)


def test_sequences_are_drawn_from_high_level_passes():
    names = sequence_pass_names()
    assert "FoldConstant" in names and "EliminateCommonSubexpr" in names
    assert "LegalizeOps" not in names and "ToMixedPrecision" not in names
    seqs = [draw_sequence(s) for s in range(30)]
    assert seqs == [draw_sequence(s) for s in range(30)]
    assert all(1 <= len(q) <= 6 for q in seqs) and any(len(set(q)) < len(q) for q in seqs)


def test_static_program_through_a_sequence():
    prog = generate_pass_program(0)
    assert check_relax_sequence(prog, ("FoldConstant", "EliminateCommonSubexpr", "FuseOps")) \
        == []


def test_symbolic_program_at_sizes():
    prog = generate_pass_program(1)
    assert prog.symbolic
    assert check_relax_sequence(prog, ("ToNonDataflow", "ConvertToDataflow",
                                       "DeadCodeElimination"), sizes=[3, 0]) == []


def test_a_planted_wrong_pass_is_found_and_named(monkeypatch):
    prog = generate_pass_program(0)
    other = generate_pass_program(2).mod  # a different program: different values or types
    real = relax_pass_sequences.make_relax_pass

    def make(name):
        if name == "Normalize":  # planted: "Normalize" swaps in another program
            return lambda mod: other
        return real(name)

    monkeypatch.setattr(relax_pass_sequences, "make_relax_pass", make)
    found = check_relax_sequence(prog, ("FoldConstant", "Normalize", "DeadCodeElimination"))
    assert len(found) == 1 and found[0].kind in ("mismatch", "exception")
    assert "(minimal ['Normalize'])" in found[0].detail


def test_a_reduction_read_only_by_an_implied_match_cast_may_be_dropped():
    """Seed 600211: argmin over the symbolic axis, read only by ``match_cast(gv1,
    R.Tensor((), "bool"))``, a cast to the struct info gv1 already has. The build keeps the
    cast (the VM raises at n = 0, as the reference does); CanonicalizeBindings drops it, as
    TVM's, and the argmin with it. Both are right: the oracle accepts the value the program
    has when implied casts are not reads."""
    import pytest

    from minitvm.testing.fuzz.relax_reference import EmptyReduction, evaluate

    prog = generate_pass_program(600211)
    inputs = prog.inputs(0, seed=1)
    with pytest.raises(EmptyReduction):
        evaluate(prog.mod, inputs)
    assert len(evaluate(prog.mod, inputs, implied_casts=False)) == 3
    assert check_relax_sequence(prog, ("CanonicalizeBindings",), sizes=[0]) == []


def test_generator_keeps_arg_reductions_off_static_empty_axes():
    """Seed 700036 drew argmax over a (0,) tensor, which the struct info rightly refuses (no
    index to give): the generator failed. It now draws no arg-reduction over a static empty
    axis (max / min there give their identity and stay)."""
    prog = generate_pass_program(700036)
    assert "R.argmax" not in prog.mod.script() or "(0," not in prog.mod.script()
