"""Issue 15 (1, 4, 5): compiled math follows IEEE outside FastMath, and agrees with the
interpreter on inf/nan/huge inputs; reductions over a zero-size axis; integer division by zero
and INT_MIN / -1 never trap."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor

SPECIAL = np.array([88.5, 89.0, 88.72, 100.0, -100.0, -104.0, np.inf, -np.inf, np.nan, 0.0, -0.0,
                    1.0, -1.0, 1e-30, -1e-30, 3.4e38, -3.4e38, 0.5, 9.5, -9.5, 20.0, -20.0, 4.5,
                    -4.5], dtype="float32")


def _both(body, *arrays):
    params = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(params, body(*params)))
    ref = relay.create_executor("debug", mod=mod).evaluate()(*arrays).numpy()
    lib = relay.build(mod, target="llvm")
    assert lib.get_lib().native_functions, "expected a native kernel"
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f"x{i}", a)
    m.run()
    return ref, m.get_output(0).numpy()


def _assert_same(ref, got, rtol=2e-6):
    assert ref.dtype == got.dtype
    np.testing.assert_array_equal(np.isnan(ref), np.isnan(got))
    np.testing.assert_array_equal(np.isinf(ref), np.isinf(got))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=1e-37)


UNARY = ["exp", "log", "tanh", "sigmoid", "erf", "sqrt", "rsqrt", "abs", "negative", "floor",
         "ceil", "round", "trunc", "sign", "sin", "cos", "log2", "log10", "atan", "isnan",
         "isinf", "isfinite", "copy"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values_match_interpreter(name):
    ref, got = _both(getattr(relay, name), SPECIAL)
    _assert_same(ref, got, rtol=3e-6)


def test_exp_does_not_saturate_and_propagates():
    _, got = _both(relay.exp, np.array([88.5, 89.0, np.inf, np.nan, -np.inf], "float32"))
    assert got[0] == pytest.approx(np.exp(np.float64(88.5)), rel=1e-6)  # was 2.406e38
    assert np.isinf(got[1]) and np.isinf(got[2]) and np.isnan(got[3]) and got[4] == 0


@pytest.mark.parametrize("build", [
    lambda x: relay.nn.relu(x), lambda x: relay.maximum(x, relay.const(0.0)),
    lambda x: relay.minimum(x, relay.const(0.0)), lambda x: relay.clip(x, -1.0, 1.0),
    lambda x: relay.nn.leaky_relu(x, 0.1), lambda x: relay.nn.softmax(x),
    lambda x: relay.nn.log_softmax(x), lambda x: relay.max(x, axis=0, keepdims=True),
    lambda x: relay.min(x, axis=0, keepdims=True), lambda x: relay.sum(x, axis=0, keepdims=True),
], ids=["relu", "maximum", "minimum", "clip", "leaky_relu", "softmax", "log_softmax", "max",
        "min", "sum"])
def test_nan_propagates_through_min_max_and_softmax(build):
    x = np.array([np.nan, 1, 2, 3, -np.inf, np.inf, 0, -1], "float32")
    ref, got = _both(build, x)
    _assert_same(ref, got, rtol=1e-5)
    ref, got = _both(build, x[1:4].copy())  # finite row: ordinary numerics
    _assert_same(ref, got, rtol=1e-5)


def test_softmax_nan_row_is_nan():
    ref, got = _both(lambda x: relay.nn.softmax(x), np.array([[np.nan, 1, 2, 3]], "float32"))
    assert np.isnan(got).all() and np.isnan(ref).all()


def test_fast_math_variants_stay_approximations():
    # FastMath's fast_exp is documented to saturate; the IEEE exp is what `exp` compiles to
    _, got = _both(relay.fast_exp, np.array([1.0, 2.0], "float32"))
    np.testing.assert_allclose(got, np.exp([1.0, 2.0]), rtol=1e-6)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_reduce_over_zero_size_axis_is_the_same_clear_error(op):
    x = relay.var("x", shape=(3, 0), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], getattr(relay, op)(x, axis=1)))
    with pytest.raises((TypeError, ValueError), match=f"{op}: cannot reduce over axis 1 of size 0"):
        relay.build(mod, target="llvm")
    with pytest.raises((TypeError, ValueError), match=f"{op}: cannot reduce over axis 1 of size 0"):
        relay.create_executor("debug", mod=mod).evaluate()(np.zeros((3, 0), "float32"))


@pytest.mark.parametrize(("op", "identity"), [("max", -np.inf), ("min", np.inf)])
def test_max_min_over_zero_size_axis_is_their_identity(op, identity):
    """max / min have an identity (TVM's type relation accepts the empty axis and its kernel
    gives the identity; ONNX's ReduceMax / ReduceMin too): -inf / +inf in the interpreter and
    the build alike, as Relax gives (argmax / argmin, with no index to give, still refuse)."""
    ref, got = _both(lambda x: getattr(relay, op)(x, axis=1), np.zeros((3, 0), "float32"))
    np.testing.assert_array_equal(got, np.full(3, identity, "float32"))
    np.testing.assert_array_equal(ref, got)


def test_sum_over_zero_size_axis_is_its_identity():
    ref, got = _both(lambda x: relay.sum(x, axis=1), np.zeros((3, 0), "float32"))
    np.testing.assert_array_equal(got, np.zeros(3, "float32"))
    np.testing.assert_array_equal(ref, got)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("op", ["divide", "mod", "floor_divide", "floor_mod"])
def test_integer_division_never_traps(op, dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, info.min, info.min, info.max, 0, 5, -5], dtype=dtype) \
        if info.min < 0 else np.array([7, 0, info.max, 3, 9, 0, 5, 1], dtype=dtype)
    b = np.array([0, 0, -1, 0, -1, 0, 3, 3], dtype=dtype) if info.min < 0 \
        else np.array([0, 0, 0, 2, 4, 3, 0, 1], dtype=dtype)
    ref, got = _both(lambda x, y: getattr(relay, op)(x, y), a, b)
    np.testing.assert_array_equal(got, ref)
    assert (got[b == 0] == 0).all()  # division by zero gives 0 (numpy's convention)


def test_int64_divide_is_exact():
    a = np.array([2**62 + 1, -(2**62) - 3, 9007199254740993], "int64")
    b = np.array([1, 7, 3], "int64")
    ref, got = _both(relay.divide, a, b)
    np.testing.assert_array_equal(ref, got)
    exact = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # truncating, in Python ints
             for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    np.testing.assert_array_equal(got, np.array(exact, "int64"))


def test_float64_to_float16_cast_does_not_crash():
    # found by scripts/fuzz_long.py (seed 102001): fptrunc double -> half became a call of
    # __truncdfhf2, unresolved in the JIT: the process died with SIGSEGV
    x = np.array([1.5, -2.25, 65504.0, 1e6, np.inf, np.nan, 3.0e-8, 0.1], "float64")
    ref, got = _both(lambda v: relay.cast(v, "float16"), x)
    assert got.dtype == np.float16
    _assert_same(ref, got, rtol=1e-3)


@pytest.mark.parametrize("build, ref", [
    (lambda x: relay.clip(x, 0.0, 6.0), lambda a: np.clip(a, 0.0, 6.0)),
    (lambda x: relay.maximum(relay.const(1.5), x), lambda a: np.maximum(1.5, a)),
    (lambda x: relay.minimum(x, relay.const(-0.5)), lambda a: np.minimum(a, -0.5)),
], ids=["clip", "number_first", "number_second"])
def test_min_max_against_a_number_is_one_compare_and_keeps_nan(build, ref):
    # against a number only the other side can be NaN: ``c < x ? c : x`` keeps it (x86's
    # one-instruction minps/maxps) where two operands need a NaN test as well
    a = np.random.default_rng(0).standard_normal(67).astype("float32") * 5
    a[[0, 9, 17, 40, 66]] = np.nan
    a[[5, 6]] = np.inf, -np.inf
    x = relay.var("x", shape=a.shape)
    lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], build(x))), target="llvm")
    ir = lib.get_lib().get_source()
    assert "fcmp olt" in ir or "fcmp ogt" in ir
    assert "fcmp uno" not in ir
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", a)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), ref(a))
