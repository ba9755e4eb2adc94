"""Elementwise/broadcast ops: type relations and numpy references against numpy, one sweep each."""

import itertools
import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op, OpPattern
from minitvm.ir.type import TensorType, TupleType
from minitvm.relay.op.type_relations import broadcast_shapes

RNG = np.random.default_rng(0)


def run_op(call, *arrays):
    """Type a call on the arrays' types and evaluate it with its numpy reference."""
    op = call.op
    types = [TupleType([TensorType(x.shape, str(x.dtype)) for x in a]) if isinstance(a, list)
             else TensorType(a.shape, str(a.dtype)) for a in arrays]
    out_t = op.get_attr("FTypeRelation")(types, call.attrs)
    out = op.get_attr("FNumpy")(call.attrs, list(arrays), out_t)
    return out_t, out


def check(call, arrays, expected, rtol=1e-5):
    out_t, out = run_op(call, *arrays)
    expected = np.asarray(expected)
    assert out_t.concrete_shape == expected.shape
    assert out_t.dtype == str(expected.dtype)
    assert out.shape == expected.shape and str(out.dtype) == str(expected.dtype)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=1e-6)


def _erf(x):
    return np.vectorize(math.erf)(x).astype(x.dtype)


UNARY = {
    "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh, "erf": _erf, "negative": np.negative, "abs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "round": np.round, "trunc": np.trunc, "sign": np.sign, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "atanh": np.arctanh,
    "fast_exp": np.exp, "fast_tanh": np.tanh, "fast_erf": _erf, "copy": lambda x: x,
    "stop_gradient": lambda x: x,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_sweep(name):
    x = RNG.uniform(0.05, 0.95, size=(3, 4)).astype("float32")
    if name in ("negative", "abs", "sign", "floor", "ceil", "round", "trunc"):
        x = (x - 0.5) * 7
    call = getattr(relay, name)(relay.var("x", shape=(3, 4)))
    assert call.op.name == name
    assert call.op.get_attr("TOpPattern") == OpPattern.ELEMWISE
    check(call, [x], UNARY[name](x).astype("float32"), rtol=1e-4)


def test_acosh_and_predicates():
    x = RNG.uniform(1.1, 3, size=(5,)).astype("float32")
    check(relay.acosh(relay.var("x")), [x], np.arccosh(x))
    y = np.array([1.0, np.nan, np.inf, -np.inf], "float32")
    for name, fn in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
        check(getattr(relay, name)(relay.var("y")), [y], fn(y))


def test_logical_and_bitwise_not():
    b = np.array([True, False])
    check(relay.logical_not(relay.var("b")), [b], ~b)
    i = np.array([1, 2, -3], "int32")
    check(relay.bitwise_not(relay.var("i")), [i], ~i)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "floor_mod": np.mod,
    "floor_divide": lambda a, b: np.floor(a / b), "mod": np.fmod, "atan2": np.arctan2,
}
COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)), ((1,), (5, 1))]


@pytest.mark.parametrize("name", sorted(BINARY) + sorted(COMPARE))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_sweep(name, shapes):
    s1, s2 = shapes
    a = RNG.uniform(0.5, 2, size=s1).astype("float32")
    b = RNG.integers(1, 3, size=s2).astype("float32")
    call = getattr(relay, name)(relay.var("a"), relay.var("b"))
    assert call.op.get_attr("TOpPattern") == OpPattern.BROADCAST
    ref = (BINARY.get(name) or COMPARE[name])(a, b)
    check(call, [a, b], ref.astype("bool" if name in COMPARE else "float32"), rtol=1e-4)


@pytest.mark.parametrize("name,fn", [("logical_and", np.logical_and),
                                     ("logical_or", np.logical_or),
                                     ("logical_xor", np.logical_xor)])
def test_logical_binary(name, fn):
    a = RNG.integers(0, 2, size=(3, 4)).astype(bool)
    b = RNG.integers(0, 2, size=(4,)).astype(bool)
    check(getattr(relay, name)(relay.var("a"), relay.var("b")), [a, b], fn(a, b))


def test_integer_division_semantics():
    a = np.array([-7, 7, -8, 5], "int32")
    b = np.array([2, -2, 3, 5], "int32")
    va, vb = relay.var("a"), relay.var("b")
    # divide/mod truncate toward zero (C semantics); floor_* round toward -inf
    check(relay.divide(va, vb), [a, b], np.array([-3, -3, -2, 1], "int32"))
    check(relay.mod(va, vb), [a, b], np.array([-1, 1, -2, 0], "int32"))
    check(relay.floor_divide(va, vb), [a, b], np.array([-4, -4, -3, 1], "int32"))
    check(relay.floor_mod(va, vb), [a, b], np.array([1, -1, 1, 0], "int32"))


def test_broadcast_shapes_rules():
    assert broadcast_shapes((2, 1, 3), (4, 1)) == (2, 4, 3)
    assert broadcast_shapes((), (5,)) == (5,)
    any_ = relay.Any()
    out = broadcast_shapes((any_, 3), (4, 1))
    assert out == (4, 3)
    out = broadcast_shapes((any_, 3), (1, 3))
    assert isinstance(out[0], tvm.tir.Any)
    n = tvm.tir.SizeVar("n")
    assert broadcast_shapes((n, 3), (1, 3))[0] is n
    assert broadcast_shapes((n, 3), (n, 1))[0] is n


def test_broadcast_of_unknown_dims_keeps_an_identity_only_when_it_is_one():
    """A relay.Any() broadcast with itself stays that Any (the ONNX importer reads it as the
    same size); two different ones give a fresh Any, since either may be 1 when it runs."""
    b, s = relay.Any(), relay.Any()
    out = broadcast_shapes((b, 2, s, s), (b, 1, 1, s))
    assert out[0] is b and out[1] == 2 and out[2] is s and out[3] is s
    mixed = broadcast_shapes((b, 3), (s, 3))[0]
    assert isinstance(mixed, tvm.tir.Any) and mixed is not b and mixed is not s


def test_broadcast_failure_names_both_shapes():
    rel = Op.get("add").get_attr("FTypeRelation")
    with pytest.raises(TypeError, match=r"add: incompatible broadcast shapes \(2, 3\) and \(4,\)"):
        rel([TensorType((2, 3)), TensorType((4,))], None)
    n, m = tvm.tir.SizeVar("n"), tvm.tir.SizeVar("m")
    with pytest.raises(TypeError, match=r"\(n, 3\) and \(m, 3\)"):
        rel([TensorType((n, 3)), TensorType((m, 3))], None)


def test_dtype_mismatch_and_non_tensor():
    rel = Op.get("multiply").get_attr("FTypeRelation")
    with pytest.raises(TypeError, match="float32 and int32 do not match"):
        rel([TensorType((2,), "float32"), TensorType((2,), "int32")], None)
    with pytest.raises(TypeError, match="argument 1 must be a tensor"):
        rel([TensorType((2,)), TupleType([])], None)
    with pytest.raises(TypeError, match="expects 2 argument"):
        rel([TensorType((2,))], None)


def test_symbolic_dims_propagate():
    n = tvm.tir.SizeVar("n")
    any_ = relay.Any()
    out = Op.get("exp").get_attr("FTypeRelation")([TensorType((n, any_))], None)
    assert out.shape[0] is n and isinstance(out.shape[1], tvm.tir.Any)
    out = Op.get("less").get_attr("FTypeRelation")([TensorType((n, 1)), TensorType((4,))], None)
    assert out.shape[0] is n and out.shape[1] == 4 and out.dtype == "bool"


def test_scalar_wrapping_and_operators():
    x = relay.var("x", shape=(2,), dtype="float32")
    y = relay.add(x, 1.0)
    assert isinstance(y.args[1], relay.Constant) and y.args[1].data.dtype == "float32"
    z = x * 2.0
    assert z.op.name == "multiply"
    i = relay.var("i", shape=(2,), dtype="int32")
    w = relay.subtract(3, i)
    assert w.args[0].data.dtype == "int32"
    assert (-x).op.name == "negative"
    assert x.astype("float16").attrs.dtype == "float16"


def test_where():
    c = RNG.integers(0, 2, size=(3, 1)).astype(bool)
    a = RNG.normal(size=(3, 4)).astype("float32")
    b = RNG.normal(size=(4,)).astype("float32")
    call = relay.where(relay.var("c"), relay.var("a"), relay.var("b"))
    assert call.op.get_attr("TOpPattern") == OpPattern.BROADCAST
    check(call, [c, a, b], np.where(c, a, b))
    rel = call.op.get_attr("FTypeRelation")
    with pytest.raises(TypeError, match="where"):
        rel([TensorType((3,), "bool"), TensorType((4,)), TensorType((4,))], None)


def test_clip_cast_reinterpret():
    x = RNG.normal(size=(2, 5)).astype("float32")
    call = relay.clip(relay.var("x"), -0.5, 0.5)
    assert call.attrs.a_min == -0.5 and call.attrs.a_max == 0.5
    assert call.op.get_attr("TOpPattern") == OpPattern.ELEMWISE
    check(call, [x], np.clip(x, -0.5, 0.5))
    check(relay.cast(relay.var("x"), "int32"), [x], x.astype("int32"))
    like = np.zeros((1,), "float16")
    check(relay.cast_like(relay.var("x"), relay.var("l")), [x, like], x.astype("float16"))
    out_t, out = run_op(relay.reinterpret(relay.var("x"), "int32"), x)
    assert out_t.dtype == "int32" and np.array_equal(out, x.view("int32"))
    with pytest.raises(TypeError, match="bit widths differ"):
        run_op(relay.reinterpret(relay.var("x"), "int8"), x)


def test_init_ops():
    check(relay.zeros((2, 3), "float32"), [], np.zeros((2, 3), "float32"))
    check(relay.ones([4], "int32"), [], np.ones((4,), "int32"))
    full = relay.full(relay.const(2.5), (2, 2), "float32")
    assert full.attrs.shape == (2, 2) and full.attrs.dtype == "float32"
    check(full, [np.array(2.5, "float32")], np.full((2, 2), 2.5, "float32"))
    full_default = relay.full(relay.const(1, "int32"), (3,))
    check(full_default, [np.array(1, "int32")], np.ones((3,), "int32"))
    x = RNG.normal(size=(3, 2)).astype("float32")
    check(relay.zeros_like(relay.var("x")), [x], np.zeros_like(x))
    check(relay.ones_like(relay.var("x")), [x], np.ones_like(x))
    check(relay.full_like(relay.var("x"), relay.var("v")), [x, np.array(7, "float32")],
          np.full_like(x, 7))
    with pytest.raises(TypeError, match="fill value must be a scalar"):
        run_op(relay.full_like(relay.var("x"), relay.var("v")), x, np.ones(2, "float32"))
    for name in ("zeros", "ones", "full", "zeros_like", "ones_like", "full_like"):
        assert Op.get(name).get_attr("TOpPattern") == OpPattern.ELEMWISE


def test_broadcast_matches_numpy_property():
    """Every pair of shapes of up to 4 dims drawn from {1, 2, 3} (the domain the hypothesis
    strategy here drew 200 examples from: all 121 x 121 pairs, in a tenth of the time)."""
    shapes = [tuple(p) for rank in range(5) for p in itertools.product([1, 2, 3], repeat=rank)]
    for s1, s2 in itertools.product(shapes, shapes):
        try:
            expected = np.broadcast_shapes(s1, s2)
        except ValueError:
            with pytest.raises(TypeError, match="incompatible broadcast shapes"):
                broadcast_shapes(s1, s2)
            continue
        assert broadcast_shapes(s1, s2) == expected
