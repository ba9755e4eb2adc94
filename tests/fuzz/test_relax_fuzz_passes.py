"""Random Relax programs through every standalone Relax pass, the build pipeline stage by stage
and relax.build + VM at two symbolic sizes (CI-sized; scripts/fuzz_long.py runs thousands)."""

import logging
import warnings

import numpy as np
import pytest

from minitvm import relax
from minitvm.testing.fuzz.relax_differential import (
    PIPELINE,
    check_relax_build,
    check_relax_pass,
    check_relax_pipeline,
    relax_pass_names,
    shrink_relax,
    standalone_pass_names,
)
from minitvm.testing.fuzz.relax_generator import generate_relax_program
from minitvm.testing.fuzz.relax_reference import evaluate

PROGRAMS = 6
SEEDS = range(2000, 2000 + PROGRAMS)


@pytest.fixture(scope="module")
def programs():
    logging.disable(logging.WARNING)
    yield [generate_relax_program(s, max_ops=8) for s in SEEDS]
    logging.disable(logging.NOTSET)


@pytest.fixture(autouse=True, scope="module")
def _no_disk_cache():
    mp = pytest.MonkeyPatch()
    mp.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    yield
    mp.undo()


def test_generator_is_deterministic_and_well_formed():
    a = generate_relax_program(7)
    b = generate_relax_program(7)
    assert a.script() == b.script()
    features = set()
    for s in range(40):
        p = generate_relax_program(s)
        assert relax.analysis.well_formed(p.mod), p.script()
        features |= p.features | ({"symbolic"} if p.symbolic else set())
    assert {"if", "tuple", "match_cast", "symbolic"} <= features


def test_every_relax_pass_is_classified():
    names = relax_pass_names()
    alone = standalone_pass_names()
    assert len(names) >= 20
    for n in ("LegalizeOps", "Normalize", "relax.transform.FoldConstant",
              "relax.transform.DeadCodeElimination", "relax.transform.FuseOps"):
        assert n in alone
    assert "VMShapeLower" not in alone and "VMShapeLower" in PIPELINE


@pytest.mark.parametrize("name", standalone_pass_names())
def test_pass_on_random_relax_programs(name, programs):
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for prog in programs[:4]:
            found += check_relax_pass(prog, name)
    assert not found, "\n\n".join(str(f)[:3000] for f in found[:2])


def test_pipeline_and_build_on_random_relax_programs(programs):
    found = []
    for prog in programs:
        found += check_relax_pipeline(prog, full_stages="all" if prog.seed == SEEDS[0]
                                      else None)
    assert not found, "\n\n".join(str(f)[:3000] for f in found[:2])


def test_build_on_ieee_inputs():
    found = []
    for s in range(3000, 3004):
        prog = generate_relax_program(s, bounded=False, max_ops=8)
        found += [f for f in check_relax_build(prog, special=True)
                  if f.kind != "order-dependent"]
    assert not found, "\n\n".join(str(f)[:3000] for f in found[:2])


def test_a_broken_pass_is_caught_and_shrunk():
    """A pass that doubles every exp: the numerics check finds it; the shrinker keeps only the
    bindings the failure needs and prints the result as TVMScript."""
    from minitvm.ir.op import Op
    from minitvm.relax.expr import Call
    from minitvm.relax.transform.function_pass import function_pass
    from minitvm.relax.transform.normalize import NormalizingMutator

    exp = Op.get("relax.exp")

    class _Double(NormalizingMutator):
        def visit_call_(self, op):
            new = super().visit_call_(op)
            if new.op is exp:
                return Call(Op.get("relax.multiply"), [new, relax.const(2.0, "float32")])
            return new

    def broken():
        return function_pass(lambda f, m, c: _Double(m).visit_expr(f), opt_level=0,
                             name="Broken")

    def fails(p):
        return any(f.kind == "mismatch" for f in check_relax_pass(
            p, "Broken", pass_factory=broken, round_trip=False))

    seed = next(s for s in range(300) if "R.exp(" in generate_relax_program(s).script()
                and "float32" in generate_relax_program(s).script()
                and fails(generate_relax_program(s)))
    prog = generate_relax_program(seed)
    small = shrink_relax(prog, fails)
    assert fails(small)
    n_small = sum(len(b.bindings) for b in small.mod["main"].body.blocks)
    n_big = sum(len(b.bindings) for b in prog.mod["main"].body.blocks)
    assert n_small < n_big and "R.exp(" in small.script()


def test_reference_evaluator_checks_struct_info():
    """The oracle: numpy values of a small program with a symbolic dimension at two sizes."""
    from minitvm import tir
    from minitvm.relax import op as R

    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.concat([x, x], axis=0))
            b = bb.emit(R.sum(a, axis=[1]))
            gv = bb.emit_output(R.strided_slice(b, [0], [-1], [-100], [-2]))
        bb.emit_func_output(gv)
    mod = bb.get()
    for rows in (2, 5):
        xv = np.arange(rows * 3, dtype="float32").reshape(rows, 3)
        want = np.concatenate([xv, xv]).sum(axis=1)[::-2]
        np.testing.assert_allclose(evaluate(mod, [xv]), want)


def test_hypothesis_strategy_programs_match_the_reference():
    """Hypothesis-drawn programs (shrinking toward small seeds and few ops): the reference
    evaluator agrees with itself on a second evaluation and the struct info of every value."""
    from hypothesis import HealthCheck, given, settings

    from minitvm.testing.fuzz.relax_strategies import relax_programs_with_inputs

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(relax_programs_with_inputs(max_ops=6))
    def check(case):
        prog, _, inputs = case
        a = evaluate(prog.mod, inputs)
        b = evaluate(prog.mod, inputs)
        a = a if isinstance(a, tuple) else (a,)
        b = b if isinstance(b, tuple) else (b,)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)

    check()
