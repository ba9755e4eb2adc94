"""Random programs through relay.optimize (opt levels 0-3) and relay.build vs the interpreter,
bounded values and, for the IEEE check, unbounded operators on inf/nan/huge inputs."""

import warnings

import pytest
from hypothesis import HealthCheck, given, settings

from minitvm.testing.fuzz import generate_program
from minitvm.testing.fuzz.differential import check_build, check_pipeline
from minitvm.testing.fuzz.strategies import programs_with_inputs

# random programs draw ops that have no native compute yet (repeat, ...): their numpy kernels
# are compared like the native ones, so the session's strict builds are off here
pytestmark = pytest.mark.numpy_fallback("random programs use ops without a native compute")

DATAFLOW = dict(control_flow=False, closures=False, adts=False)  # let-bound values build


@pytest.mark.parametrize("seed", range(2000, 2008))
def test_pipeline_and_build_match_interpreter(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = check_pipeline(generate_program(seed))
        flat = generate_program(seed, **DATAFLOW)
        found += check_pipeline(flat, opt_levels=(3,))
    assert not found, str(found[0])[:3000]


@pytest.mark.parametrize("seed", range(3000, 3012))
def test_ieee_build_matches_interpreter_on_special_values(seed):
    prog = generate_program(seed, bounded=False, **DATAFLOW)
    found = [f for f in check_build(prog, prog.inputs(special=True))
             if f.kind != "order-dependent"]  # FMA/reassociation on huge inputs: documented
    assert not found, str(found[0])[:3000]


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs_with_inputs(graph_only=True, max_ops=8))
def test_hypothesis_build_matches_interpreter(prog_inputs):
    prog, inputs = prog_inputs
    assert check_build(prog, inputs) == []


def test_generator_is_deterministic_and_covers_the_language():
    a, b = generate_program(7), generate_program(7)
    assert a.mod.astext() == b.mod.astext()
    features, ops, dtypes = set(), set(), set()
    from minitvm.relay.analysis import list_op_freqs

    for s in range(150):
        p = generate_program(s)
        features |= p.features
        ops |= set(list_op_freqs(p.mod))
        dtypes |= {str(t.dtype) for _, t in p.input_types}
    assert features == {"let", "if", "closure", "adt", "tuple"}
    assert len(ops) >= 60 and {"nn.conv2d", "nn.dense", "split", "where", "cast"} <= ops
    assert {"float32", "float16", "int32", "bool"} <= dtypes
