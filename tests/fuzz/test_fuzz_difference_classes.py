"""Issue 15, seed 500914 and the FMA question: which compiled-vs-interpreter differences on
inf/nan/huge values the harness tolerates ("rewrite-dependent": SimplifyInference's batch_norm
fold, TVM's definition; "order-dependent": FMA contraction/reassociation), and that a wrong
answer can hide in neither class."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.graph_executor import GraphModule
from minitvm.testing.fuzz import generate_program
from minitvm.testing.fuzz.differential import (
    accumulating_outputs,
    check_build,
    compare_values,
    inference_reference,
    overflow_explains,
    run_interpreter,
)
from minitvm.testing.fuzz.generator import GeneratedProgram

FLT_MAX = np.finfo("float32").max


def _batch_norm_program():
    """batch_norm over 2 channels with a mean of 3.4e38 in channel 0 (scale > 1 there)."""
    x = relay.var("x", shape=(1, 2, 4), dtype="float32")
    gamma = relay.const(np.array([2.0, 0.5], "float32"))
    beta = relay.const(np.array([0.25, -1.0], "float32"))
    mean = relay.const(np.array([FLT_MAX, 1.0], "float32"))
    var = relay.const(np.array([1.0, 4.0], "float32"))
    out = relay.nn.batch_norm(x, gamma, beta, mean, var)[0]
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], out)))
    return GeneratedProgram(mod, 0, [("x", mod["main"].params[0].checked_type)])


def _build_run(mod, inputs):
    lib = relay.build(mod, target="llvm")
    m = GraphModule(lib["default"](tvm.cpu()))
    for p, a in zip(mod["main"].params, inputs, strict=True):
        m.set_input(p.name_hint, a)
    m.run()
    return [m.get_output(k).numpy() for k in range(m.get_num_outputs())]


def test_seed_500914_is_simplify_inference_fold():
    prog = generate_program(500914, bounded=False, control_flow=False, closures=False,
                            adts=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = check_build(prog, prog.inputs(special=True))
    assert [f.kind for f in found] == ["rewrite-dependent"]


def test_batch_norm_fold_on_huge_mean():
    """x == mean == 3.4e38: (x - mean) / s * g + b is exactly beta; TVM's fold computes
    x * scale + (beta - mean * scale) = inf - inf. The compiled value is the fold's, NaN for
    NaN; on ordinary values both agree."""
    prog = _batch_norm_program()
    x = np.zeros((1, 2, 4), "float32")
    x[0, 0] = [FLT_MAX, np.inf, 1.0, -FLT_MAX]
    x[0, 1] = [1.0, 2.0, np.inf, -3.0]
    with np.errstate(all="ignore"):
        ref = run_interpreter(prog.mod, [x])
        folded = inference_reference(prog.mod, [x])
        got = _build_run(prog.mod, [x])
    assert ref[0][0, 0, 0] == np.float32(0.25) and ref[0][0, 0, 1] == np.inf
    assert np.isnan(folded[0][0, 0, 0])  # the fold overflows: inf - inf
    assert compare_values(folded, got) is None or overflow_explains(folded, got, [True])
    found = check_build(prog, [x])
    assert [f.kind for f in found] in (["rewrite-dependent"], ["order-dependent"])
    ordinary = np.random.default_rng(0).normal(size=(1, 2, 4)).astype("float32")
    tame = _batch_norm_program()
    tame.mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        tame.mod["main"].params, relay.nn.batch_norm(
            tame.mod["main"].params[0], *[relay.const(np.array(v, "float32")) for v in (
                [2.0, 0.5], [0.25, -1.0], [3.0, 1.0], [1.0, 4.0])])[0])))
    assert check_build(tame, [ordinary]) == []


def test_wrong_compiled_batch_norm_is_a_mismatch(monkeypatch):
    """A compiled result off by one in a single element is neither class."""
    prog = _batch_norm_program()
    x = np.ones((1, 2, 4), "float32")
    x[0, 0, 0] = FLT_MAX
    real = GraphModule.get_output

    def wrong(self, k):
        out = real(self, k).numpy().copy()
        out[0, 1, 3] += 1
        return tvm.nd.array(out)

    monkeypatch.setattr(GraphModule, "get_output", wrong)
    with np.errstate(all="ignore"):
        assert [f.kind for f in check_build(prog, [x])] == ["mismatch"]


def test_overflow_explains_is_tight():
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    a = np.array([1.0, inf, 3.0], "float32")
    assert overflow_explains([a], [np.array([1.0, nan, 3.0], "float32")], [True])
    assert overflow_explains([a], [np.array([1.0, 2e38, 3.0], "float32")], [True])
    # a finite value off beyond rounding: a wrong answer, accumulation or not
    assert not overflow_explains([a], [np.array([1.0, inf, 4.0], "float32")], [True])
    # inf vs NaN in an output no accumulating op feeds: a wrong answer
    assert not overflow_explains([a], [np.array([1.0, nan, 3.0], "float32")], [False])
    # against an unfused reference only the reference side may have overflowed (an FMA
    # never overflows where the rounded product did not)
    assert overflow_explains([a], [np.array([1.0, 2e38, 3.0], "float32")], [True],
                             unfused_reference=True)
    b = np.array([1.0, 5.0, 3.0], "float32")
    assert not overflow_explains([b], [np.array([1.0, nan, 3.0], "float32")], [True],
                                 unfused_reference=True)
    # integer outputs never differ by order
    i = np.array([1, 2], "int32")
    assert not overflow_explains([i], [np.array([1, 3], "int32")], [True])
    assert overflow_explains([a, i], [a.copy(), i.copy()], [False, False])


def test_accumulating_outputs_follows_dataflow():
    x = relay.var("x", shape=(3,), dtype="float32")
    s = relay.var("s")
    body = relay.Let(s, relay.sum(x, keepdims=True),
                     relay.Tuple([relay.exp(x), relay.add(s, x), relay.Tuple([x, s])]))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    assert accumulating_outputs(mod) == [False, True, False, True]


def test_order_dependent_needs_the_accumulation_to_feed_the_output(monkeypatch):
    """exp's output is wrong (compiled NaN) in a program that also has a sum: the sum feeds
    another output, so this is a mismatch, not "order-dependent"."""
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.Tuple([relay.exp(x), relay.sum(x)]))))
    prog = GeneratedProgram(mod, 0, [("x", mod["main"].params[0].checked_type)])
    values = np.array([FLT_MAX, 1.0, 89.0, -FLT_MAX], "float32")
    real = GraphModule.get_output

    def wrong(self, k):
        out = real(self, k).numpy().copy()
        if k == 0:
            out[0] = np.nan  # exp(3.4e38) is inf
        return tvm.nd.array(out)

    monkeypatch.setattr(GraphModule, "get_output", wrong)
    with np.errstate(all="ignore"):
        assert [f.kind for f in check_build(prog, [values])] == ["mismatch"]


@pytest.mark.parametrize("seed", [400139])
def test_known_fma_seed_still_order_dependent(seed):
    prog = generate_program(seed, bounded=False, control_flow=False, closures=False,
                            adts=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = check_build(prog, prog.inputs(special=True))
    assert [f.kind for f in found] in ([], ["order-dependent"])


def test_overflow_through_a_huge_constant_is_order_dependent():
    """Seed 500774: batch_matmul against a constant holding -inf and -3.4e38. The interpreter's
    numpy matmul fuses -1.87 * -3.4e38 into the sum (-inf stays -inf); the compiled kernel
    rounds the product to +inf first (-inf + inf = NaN). Taming the huge *constant* (not only
    the inputs) makes both agree, so it is an order difference, not a wrong answer."""
    from minitvm.testing.fuzz.differential import check_build
    from minitvm.testing.fuzz.generator import generate_program

    raw = generate_program(500774, bounded=False, control_flow=False, closures=False,
                           adts=False)
    kinds = {f.kind for f in check_build(raw, raw.inputs(special=True))}
    assert kinds <= {"order-dependent"}


def test_overflow_of_a_mean_seen_through_a_division_is_order_dependent():
    """Seed 502738: ``mean`` of values holding +3.4e38 once and -3.4e38 twice is -inf in numpy's
    pairwise order and -1.4e37 in the kernel's sequential one; ``x / mean`` then differs by
    normal-sized values (24 against 0). The accumulation itself differs only by overflow and the
    tamed run agrees: order-dependent, not a mismatch."""
    from minitvm.testing.fuzz.differential import check_build
    from minitvm.testing.fuzz.generator import generate_program

    raw = generate_program(502738, bounded=False, control_flow=False, closures=False,
                           adts=False)
    kinds = [f.kind for f in check_build(raw, raw.inputs(special=True))]
    assert kinds == ["order-dependent"]


@pytest.mark.parametrize("seed", [503785, 503045])
def test_absorption_and_huge_periodic_arguments_are_order_dependent(seed):
    """503785: a sum over +3.4e38, -3.4e38 and small values (the small ones absorbed or not,
    by the order). 503045: sin of -1.7e38 computed from an exp one ulp apart. Both agree once
    the huge inputs are tamed."""
    from minitvm.testing.fuzz.differential import check_build
    from minitvm.testing.fuzz.generator import generate_program

    raw = generate_program(seed, bounded=False, control_flow=False, closures=False, adts=False)
    kinds = [f.kind for f in check_build(raw, raw.inputs(special=True))]
    assert kinds == ["order-dependent"]
