"""Found by the issue 15 long run on inf/nan/huge inputs: compiled float floor_mod overflowed
(a - floor(a/b)*b is inf for huge a/b; numpy's mod is fmod moved into b's sign), and max
reductions/pools started from the lowest finite float, so an all -inf window gave -3.4e38. Also
the harness's "order-dependent" verdict for FMA-contracted sums of huge values."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.graph_executor import GraphModule
from minitvm.testing.fuzz import generate_program
from minitvm.testing.fuzz.differential import check_build, compare_values, run_interpreter

SPECIAL = [0.5, -0.75, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-30, 7.0, -7.0]


def _build_run(mod, inputs):
    lib = relay.build(mod, target="llvm")
    m = GraphModule(lib["default"](tvm.cpu()))
    for p, x in zip(mod["main"].params, inputs, strict=True):
        m.set_input(p.name_hint, x)
    m.run()
    return [m.get_output(k).numpy() for k in range(m.get_num_outputs())]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("op", ["floor_mod", "mod", "floor_divide"])
def test_float_division_ops_match_numpy_on_special_values(op, dtype):
    with np.errstate(over="ignore"):  # 3.4e38 is inf in float16
        a = np.array([x for x in SPECIAL for _ in SPECIAL], dtype)
        b = np.array([y for _ in SPECIAL for y in SPECIAL], dtype)
    x, y = relay.var("x", shape=a.shape, dtype=dtype), relay.var("y", shape=a.shape, dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x, y], getattr(relay, op)(x, y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = run_interpreter(mod, [a, b])
    got = _build_run(mod, [a, b])
    assert compare_values(ref, got) is None
    if op == "floor_mod":  # numpy itself, e.g. floor_mod(-3.4e38, 0.5) is 0, not inf
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got[0], np.mod(a, b))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", ["max_pool2d", "max_pool2d_pad", "global_max_pool2d",
                                  "adaptive_max_pool2d", "max_pool1d", "max_pool3d", "max",
                                  "min"])
def test_max_reductions_keep_minus_infinity(name, dtype):
    a = np.full((1, 2, 3, 3), -np.inf, dtype)
    a[0, 1, 1, 1] = np.nan
    if name == "min":
        a = -a
    make = {
        "max_pool2d": lambda x: relay.nn.max_pool2d(x, pool_size=(1, 1)),
        "max_pool2d_pad": lambda x: relay.nn.max_pool2d(x, pool_size=(2, 2), padding=(1, 1)),
        "global_max_pool2d": relay.nn.global_max_pool2d,
        "adaptive_max_pool2d": lambda x: relay.nn.adaptive_max_pool2d(x, output_size=(2, 2)),
        "max_pool1d": lambda x: relay.nn.max_pool1d(relay.reshape(x, (1, 2, 9)), pool_size=2,
                                                    padding=1),
        "max_pool3d": lambda x: relay.nn.max_pool3d(relay.reshape(x, (1, 2, 1, 3, 3)),
                                                    pool_size=(1, 2, 2), padding=(0, 1, 1)),
        "max": lambda x: relay.max(x, axis=[2, 3]),
        "min": lambda x: relay.min(x, axis=[2, 3]),
    }[name]
    x = relay.var("x", shape=a.shape, dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x], make(x)))
    ref = run_interpreter(mod, [a])
    got = _build_run(mod, [a])
    assert compare_values(ref, got) is None, (ref[0].ravel()[:4], got[0].ravel()[:4])
    assert np.isinf(got[0]).any()


def test_order_dependent_overflow_is_told_apart_from_a_mismatch():
    # seed 400139: conv2d with an inf weight on +-3.4e38 inputs; the compiled sum of products
    # (FMA-contracted) gives -inf where the interpreter's rounded products give inf - inf = NaN
    prog = generate_program(400139, bounded=False, control_flow=False, closures=False,
                            adts=False)
    found = check_build(prog, prog.inputs(special=True))
    assert [f.kind for f in found] in ([], ["order-dependent"])
    # without huge finite inputs there is nothing to tell apart: the values agree exactly
    tamed = [np.where(np.abs(x) >= 1e30, 1, x).astype(x.dtype) if x.dtype.kind == "f" else x
             for x in prog.inputs(special=True)]
    assert check_build(prog, tamed) == []


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_integer_arithmetic_on_loaded_values_wraps(dtype):
    """Seed 500311: max(where(x > 0, x, -x)) gave INT_MIN for an input holding INT_MAX: the
    negation was emitted ``mul nsw`` (overflow is poison), so LLVM rewrote the fused
    reduction; values from buffers now wrap as numpy's do."""
    info = np.iinfo(dtype)
    a = np.array([-1, 0, 2, info.max, info.min, 5], dtype)
    x = relay.var("x", shape=a.shape, dtype=dtype)
    zero = relay.const(0, dtype)
    body = relay.Tuple([
        relay.max(relay.where(relay.greater(x, zero), x, relay.negative(x))),
        relay.multiply(x, relay.const(-1, dtype)), relay.add(x, x), relay.sum(relay.abs(x))])
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    ref = run_interpreter(mod, [a])
    got = _build_run(mod, [a])
    for r, g in zip(ref, got, strict=True):
        np.testing.assert_array_equal(r, g)
    assert got[0] == info.max


def test_float64_output_of_float32_math_is_compared_at_float32_precision():
    """Seed 500469: cast(erf(x: float32), "float64") differs from the interpreter by one
    float32 ulp; the harness compares at the precision the program computes in."""
    from minitvm.testing.fuzz.differential import check_pipeline, precision_floor

    prog = generate_program(500469, control_flow=False, closures=False, adts=False)
    assert precision_floor(prog.mod) == "float32"
    assert check_pipeline(prog, opt_levels=()) == []
    a = [np.array([1.0, 2.0], "float64")]
    assert compare_values(a, [a[0] * (1 + 1e-7)]) is not None  # float64 alone stays strict
    assert compare_values(a, [a[0] * (1 + 1e-7)], floor="float32") is None
