"""Regressions for the pass bugs the issue 15 fuzzer found: ToMixedPrecision on control flow,
let and closures; LambdaLift sharing binders between global functions; PartialEvaluate
residualizing an untypable constructor; DeadCodeElimination on a shared let; relay.build of
let-bound programs."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.structural import structural_equal
from minitvm.relay import transform as T
from minitvm.relay.analysis import bound_vars, check_well_formed
from minitvm.testing.fuzz import generate_program
from minitvm.testing.fuzz.differential import check_pass, compare_values, run_interpreter

_ADT = '''#[version = "0.0.5"]
type Opt[A] {
  Some(A),
  Nothing,
}
'''


def _same_values(before, after, inputs, rtol=None):
    ref, got = run_interpreter(before, inputs), run_interpreter(after, inputs)
    if rtol is not None:  # mixed precision: main's result may be float16 (as TVM)
        got = [g.astype(r.dtype) for r, g in zip(ref, got, strict=True)]
    diff = compare_values(ref, got, rtol, rtol)
    assert diff is None, diff


# ------------------------------------------------------------------ ToMixedPrecision
_AMP_IN = _ADT + '''
def @main(%x: Tensor[(2, 2), float32], %c: bool) {
  %0 = if (%c) { negative(%x) } else { multiply(%x, 2f) };
  let %v: Tensor[(2, 2), float32] = multiply(%x, 3f);
  let %f = fn (%p: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] { multiply(%p, 2f) };
  %1 = %f(%v);
  %2 = match (Some(%1)) {
    Some(%u: Tensor[(2, 2), float32]) => multiply(%u, 2f),
    Nothing => negative(%x),
  };
  (%0, %2, %v)
}
'''
# if/match branches that disagree are cast back to float32; the let variable takes its value's
# float16 type; the closure keeps its float32 signature (result cast back, argument cast back)
_AMP_EXPECTED = _ADT + '''
def @main(%x: Tensor[(2, 2), float32], %c: bool) {
  %h = cast(%x, dtype="float16");
  %0 = if (%c) { negative(%x) } else { cast(multiply(%h, 2f16), dtype="float32") };
  let %v: Tensor[(2, 2), float16] = multiply(%h, 3f16);
  let %f = fn (%p: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
    cast(multiply(cast(%p, dtype="float16"), 2f16), dtype="float32")
  };
  %1 = %f(cast(%v, dtype="float32"));
  %2 = match (Some(%1)) {
    Some(%u: Tensor[(2, 2), float32]) => cast(multiply(cast(%u, dtype="float16"), 2f16),
                                              dtype="float32"),
    Nothing => negative(%x),
  };
  (%0, %2, %v)
}
'''


def test_to_mixed_precision_keeps_control_flow_well_typed():
    mod = relay.parse(_AMP_IN)
    out = T.InferType()(T.ToMixedPrecision()(mod))
    assert check_well_formed(out) == []
    expected = T.InferType()(relay.parse(_AMP_EXPECTED))
    assert structural_equal(out["main"], expected["main"]), out["main"].astext()
    x = np.random.default_rng(0).uniform(-2, 2, (2, 2)).astype("float32")
    for c in (True, False):
        _same_values(mod, out, [x, np.array(c)], rtol=1e-2)


def test_to_mixed_precision_keeps_other_global_signatures():
    src = _ADT + '''
def @g(%a: Tensor[(3,), float32]) -> Tensor[(3,), float32] { multiply(%a, 2f) }
def @main(%x: Tensor[(3,), float32]) { add(@g(%x), %x) }
'''
    mod = relay.parse(src)
    out = T.InferType()(T.ToMixedPrecision()(mod))
    assert out["g"].checked_type == mod["g"].checked_type
    _same_values(mod, out, [np.arange(3, dtype="float32")], rtol=1e-2)


@pytest.mark.parametrize("seed", [5, 6, 13, 300396, 300397, 300398])
def test_to_mixed_precision_fuzz_seeds(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert check_pass(generate_program(seed), "ToMixedPrecision") == []


# ------------------------------------------------------------------ LambdaLift
def _shared_binder_module():
    """A let (binding %v) shared, in graph form, by a closure body and main's body."""
    x = relay.var("x", shape=(2,), dtype="float32")
    v = relay.var("v")
    inner = relay.Let(v, relay.exp(x), relay.add(v, v))
    p = relay.var("p", shape=(2,), dtype="float32")
    f = relay.var("f")
    body = relay.Let(f, relay.Function([p], relay.add(p, inner)),
                     relay.add(relay.Call(f, [x]), inner))
    return tvm.IRModule.from_expr(relay.Function([x], body))


def test_lambda_lift_gives_lifted_functions_their_own_binders():
    mod = T.InferType()(_shared_binder_module())
    out = T.InferType()(T.LambdaLift()(mod))
    lifted = [gv for gv in out.functions if gv.name_hint != "main"]
    assert len(lifted) == 1
    assert not set(bound_vars(out[lifted[0]])) & set(bound_vars(out["main"]))
    assert structural_equal(relay.parse(out.astext()), out)
    _same_values(mod, out, [np.array([0.5, -1.0], "float32")])


@pytest.mark.parametrize("seed", [19, 21, 98])
def test_lambda_lift_fuzz_seeds(seed):
    assert check_pass(generate_program(seed), "LambdaLift") == []


# ------------------------------------------------------------------ PartialEvaluate
_PE_IN = _ADT + '''
def @main(%x: Tensor[(2,), float32]) {
  %0 = Nothing;
  match (%0) {
    Some(%u: Tensor[(2,), float32]) => negative(%u),
    Nothing => exp(%x),
  }
}
'''
_PE_EXPECTED = _ADT + '''
def @main(%x: Tensor[(2,), float32]) {
  let %x1: Opt[Tensor[(2,), float32]] = Nothing;
  let %x2 = exp(%x);
  %x2
}
'''


def test_partial_evaluate_annotates_an_unused_constructor_value():
    mod = T.InferType()(relay.parse(_PE_IN))
    out = T.InferType()(T.PartialEvaluate()(mod))  # raised "cannot infer the type of %x1"
    expected = T.InferType()(relay.parse(_PE_EXPECTED))
    assert structural_equal(out["main"], expected["main"]), out["main"].astext()
    _same_values(mod, out, [np.array([0.5, -1.0], "float32")])


@pytest.mark.parametrize("seed", [19, 51, 63])
def test_partial_evaluate_fuzz_seeds(seed):
    assert check_pass(generate_program(seed), "PartialEvaluate") == []


# ------------------------------------------------------------------ DeadCodeElimination
def test_dead_code_elimination_keeps_a_closure_of_a_shared_let():
    """The let binding %f is reached from three users; its second use must still count."""
    x = relay.var("x", shape=(2,), dtype="float32")
    p = relay.var("p", shape=(2,), dtype="float32")
    f = relay.var("f")
    shared = relay.Let(f, relay.Function([p], relay.add(p, relay.tanh(x))),
                       relay.Call(f, [relay.Call(f, [x])]))
    body = relay.Tuple([relay.abs(shared), relay.negative(shared), relay.exp(shared)])
    mod = T.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    out = T.DeadCodeElimination()(mod)
    assert check_well_formed(out) == []  # was: variable %f is free
    assert structural_equal(out["main"], mod["main"])  # nothing is dead
    _same_values(mod, out, [np.array([0.5, -1.0], "float32")])


@pytest.mark.parametrize("seed", [62, 72, 91])
def test_dead_code_elimination_fuzz_seeds(seed):
    assert check_pass(generate_program(seed), "DeadCodeElimination") == []


# ------------------------------------------------------------------ relay.build with let
def test_build_runs_let_bound_programs():
    from minitvm.runtime.graph_executor import GraphModule

    x = relay.var("x", shape=(2, 3), dtype="float32")
    v, w = relay.var("v"), relay.var("w")
    body = relay.Let(v, relay.exp(x), relay.Let(w, relay.add(v, v),
                                                relay.Tuple([w, relay.multiply(v, w)])))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    a = np.random.default_rng(1).uniform(-1, 1, (2, 3)).astype("float32")
    for level in (0, 3):
        with tvm.transform.PassContext(opt_level=level):
            lib = relay.build(mod, target="llvm")
        m = GraphModule(lib["default"](tvm.cpu()))
        m.set_input("x", a)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), 2 * np.exp(a), rtol=1e-6)
        np.testing.assert_allclose(m.get_output(1).numpy(), 2 * np.exp(a) ** 2, rtol=1e-6)


def test_build_still_refuses_control_flow_clearly():
    from minitvm.relay.backend.graph_executor_codegen import GraphCodegenError

    x = relay.var("x", shape=(2,), dtype="float32")
    c = relay.var("c", shape=(), dtype="bool")
    mod = tvm.IRModule.from_expr(relay.Function([x, c], relay.If(c, x, relay.negative(x))))
    with pytest.raises(GraphCodegenError, match="If"):
        relay.build(mod, target="llvm")


# ------------------------------------------------------------------ ConvertLayout
def test_convert_layout_keeps_axis_attributed_ops_in_the_original_layout():
    """Found by the long run (seed 400284): ``repeat(axis=2)`` after a pool converted to NHWC
    repeated the wrong axis; ops whose attributes name axes now get the original layout."""
    src = '''#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 4, 2), float32]) {
  %0 = nn.max_pool2d(%x, pool_size=[2, 2]);
  repeat(%0, repeats=2, axis=2)
}
'''
    mod = T.InferType()(relay.parse(src))
    out = T.InferType()(T.ConvertLayout({"nn.max_pool2d": ["NHWC"]})(mod))
    assert out["main"].checked_type == mod["main"].checked_type
    assert "layout_transform" in out.astext()  # the pool did run in NHWC
    _same_values(mod, out, [np.random.default_rng(2).uniform(-1, 1, (1, 4, 4, 2))
                            .astype("float32")])
    assert check_pass(generate_program(400284), "ConvertLayout") == []


# ------------------------------------------------------------------ SimplifyExpr
def test_simplify_expr_keeps_the_integer_cast_of_a_float_clip():
    """Found by the long run (seed 500757): cast(cast(clip(x: float32, -100, 100), int32),
    float64) lost its int32 cast (the range fits int32, but the fraction does not)."""
    x = relay.var("x", shape=(3,), dtype="float32")
    clip = relay.clip(x, -100.0, 100.0)
    mod = T.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.cast(relay.cast(clip, "int32"), "float64"))))
    out = T.InferType()(T.SimplifyExpr()(mod))
    assert structural_equal(out["main"], mod["main"])  # nothing to drop
    _same_values(mod, out, [np.array([1.5, -0.75, 250.0], "float32")])
    # a float widening cast of the clip is lossless: dropped as before (TVM's rule)
    wide = T.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.cast(relay.cast(clip, "float64"), "float32"))))
    expected = T.InferType()(tvm.IRModule.from_expr(relay.Function([x], clip)))
    assert structural_equal(T.InferType()(T.SimplifyExpr()(wide))["main"], expected["main"])
    assert check_pipeline_ok(500757)


def check_pipeline_ok(seed):
    from minitvm.testing.fuzz.differential import check_pipeline

    prog = generate_program(seed, control_flow=False, closures=False, adts=False)
    return check_pipeline(prog, opt_levels=()) == []
