"""LegalizeOps of the binary, comparison and unary elementwise ops against numpy, on odd static
shapes, broadcasting and symbolic shapes."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm import relax, tir
from minitvm.relax import op as R

ARITH = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "floor_divide": np.floor_divide, "floor_mod": np.mod,
}
CMP = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(ARITH))
def test_arith_broadcast_static(name):
    a = rand((3, 5, 7), lo=0.5, hi=3.0)
    b = rand((5, 1), lo=0.5, hi=3.0)
    check(lambda x, y: getattr(R, name)(x, y), [tensor(a.shape), tensor(b.shape)], [a, b],
          ARITH[name](a, b).astype("float32"), rtol=1e-4)


@pytest.mark.parametrize("name", sorted(CMP))
def test_compare(name):
    a = rand((7, 3)).round()
    b = rand((3,)).round()
    check(lambda x, y: getattr(R, name)(x, y), [tensor(a.shape), tensor(b.shape)], [a, b],
          CMP[name](a, b))


def test_int_ops():
    a = rand((9,), "int32", -20, 20)
    b = rand((9,), "int32", 1, 6)
    for name, ref in (("add", np.add), ("floor_divide", np.floor_divide),
                      ("floor_mod", np.mod), ("bitwise_and", np.bitwise_and),
                      ("left_shift", np.left_shift), ("mod", np.fmod),
                      ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
                      ("right_shift", np.right_shift)):
        check(lambda x, y, n=name: getattr(R, n)(x, y), [tensor(a.shape, "int32")] * 2,
              [a, b], ref(a, b).astype("int32"))


def test_logical():
    a, b = rand((5, 4), "bool"), rand((4,), "bool")
    check(R.logical_and, [tensor(a.shape, "bool"), tensor(b.shape, "bool")], [a, b],
          np.logical_and(a, b))
    check(R.logical_xor, [tensor(a.shape, "bool"), tensor(b.shape, "bool")], [a, b],
          np.logical_xor(a, b))
    check(R.logical_or, [tensor(a.shape, "bool"), tensor(b.shape, "bool")], [a, b],
          np.logical_or(a, b))


def test_symbolic_broadcast():
    n, m = sym("n", "m")
    sx, sy = tensor([n, 1, m]), tensor([5, m])
    for rows in (1, 6):
        a, b = rand((rows, 1, 3)), rand((5, 3))
        check(R.add, [sx, sy], [a, b], a + b)


def test_scalar_operands():
    a = rand((4, 3))
    check(lambda x: R.multiply(x, relax.const(2.5, "float32")), [tensor(a.shape)], [a], a * 2.5)
    check(lambda x: R.add(x, relax.PrimValue(tir.FloatImm("float32", 1.5))),
          [tensor(a.shape)], [a], a + 1.5)


UNARY = {
    "abs": np.abs, "negative": np.negative, "exp": np.exp, "sqrt": np.sqrt, "log": np.log,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "trunc": np.trunc, "sign": np.sign, "square": np.square,
    "erf": None, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh, "atanh": np.arctanh,
    "acosh": None,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    lo, hi = (0.1, 0.9) if name in ("asin", "acos", "log", "sqrt", "rsqrt", "atanh") \
        else (-2.0, 2.0)
    a = rand((3, 7), lo=lo, hi=hi)
    ref = UNARY[name]
    if name == "acosh":
        a = a + 3.0
        ref = np.arccosh
    elif ref is None:
        import math

        ref = np.vectorize(math.erf)
    check(getattr(R, name), [tensor(a.shape)], [a], ref(a).astype("float32"), rtol=1e-4,
          atol=1e-5)


def test_unary_symbolic_and_predicates():
    (n,) = sym("n")
    a = np.array([1.0, np.nan, np.inf, -2.0, 0.5], "float32")
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        check(getattr(R, name), [tensor([n])], [a], ref(a))
    b = rand((11,))
    check(R.exp, [tensor([n])], [b], np.exp(b), rtol=1e-5)


def test_clip_and_logical_not():
    a = rand((6, 5))
    check(lambda x: R.clip(x, -0.5, 0.75), [tensor(a.shape)], [a], np.clip(a, -0.5, 0.75))
    c = rand((4,), "bool")
    check(R.logical_not, [tensor(c.shape, "bool")], [c], np.logical_not(c))
    d = rand((5,), "int32", -9, 9)
    check(R.bitwise_not, [tensor(d.shape, "int32")], [d], np.bitwise_not(d))
