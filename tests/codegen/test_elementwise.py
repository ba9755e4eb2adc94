"""Elementwise kernels against numpy: one sweep over intrinsics, odd shapes, dtypes, casts."""

import numpy as np
import pytest
from codegen_helpers import build_te

from minitvm import te, tir

try:
    from math import erf as _erf
except ImportError:  # pragma: no cover
    _erf = None

UNARY = [
    ("exp", tir.exp, np.exp, (-3, 3)),
    ("log", tir.log, np.log, (0.1, 5)),
    ("sqrt", tir.sqrt, np.sqrt, (0, 5)),
    ("rsqrt", tir.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 5)),
    ("tanh", tir.tanh, np.tanh, (-4, 4)),
    ("sigmoid", tir.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-6, 6)),
    ("erf", tir.erf, np.vectorize(_erf), (-3, 3)),
    ("fabs", tir.fabs, np.abs, (-3, 3)),
    ("abs", tir.abs, np.abs, (-3, 3)),
    ("floor", tir.floor, np.floor, (-3, 3)),
    ("ceil", tir.ceil, np.ceil, (-3, 3)),
    ("round", tir.round, np.round, (-3, 3)),
    ("trunc", tir.trunc, np.trunc, (-3, 3)),
    ("sin", tir.sin, np.sin, (-3, 3)),
    ("cos", tir.cos, np.cos, (-3, 3)),
    ("log1p", tir.log1p, np.log1p, (0, 3)),
    ("atan", tir.atan, np.arctan, (-3, 3)),
]


@pytest.mark.parametrize("name,fop,ref,dom", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("n", [1, 17])
def test_unary_intrinsics(name, fop, ref, dom, n, rng):
    A = te.placeholder((n, 3), name="A")
    B = te.compute(A.shape, lambda i, j: fop(A[i, j]), name="B")
    f = build_te([A, B])
    a = rng.uniform(*dom, size=(n, 3)).astype("float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, ref(a).astype("float32"), rtol=2e-6, atol=2e-6)


def test_binary_and_select(rng):
    A = te.placeholder((13,), name="A")
    B = te.placeholder((13,), name="B")
    C = te.compute((13,), lambda i: tir.Select(A[i] > B[i], tir.pow(tir.fabs(A[i]), B[i]),
                                               tir.max(A[i], B[i]) - tir.min(A[i], B[i])),
                   name="C")
    f = build_te([A, B, C])
    a, b = rng.uniform(-2, 2, (2, 13)).astype("float32")
    c = np.empty_like(a)
    f(a, b, c)
    ref = np.where(a > b, np.abs(a) ** b, np.maximum(a, b) - np.minimum(a, b))
    np.testing.assert_allclose(c, ref, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_integer_floordiv_floormod_negative(dtype, rng):
    A = te.placeholder((31,), dtype, name="A")
    B = te.compute((31,), lambda i: A[i] // 4 + A[i] % 3 * 10 + tir.truncdiv(A[i], 5), name="B")
    f = build_te([A, B])
    a = rng.integers(-50, 50, 31).astype(dtype)
    b = np.empty_like(a)
    f(a, b)
    ref = a // 4 + a % 3 * 10 + np.trunc(a / 5).astype(dtype)
    np.testing.assert_array_equal(b, ref.astype(dtype))


def test_casts_and_bool_output(rng):
    A = te.placeholder((7,), "float32", name="A")
    B = te.compute((7,), lambda i: tir.Cast("int32", A[i] * 10.0), name="B")
    C = te.compute((7,), lambda i: A[i] > 0.0, name="C")
    D = te.compute((7,), lambda i: tir.Cast("float64", B[i]) + 0.5, name="D")
    f = build_te([A, C, D])
    a = rng.uniform(-1, 1, 7).astype("float32")
    c, d = np.empty(7, bool), np.empty(7, "float64")
    f(a, c, d)
    np.testing.assert_array_equal(c, a > 0)
    np.testing.assert_allclose(d, (a * 10).astype("int32") + 0.5)


@pytest.mark.parametrize("shape", [(1,), (2, 3), (5, 7, 11), (1, 1, 1, 1)])
def test_broadcast_add_odd_shapes(shape, rng):
    A = te.placeholder(shape, name="A")
    Bias = te.placeholder((shape[-1],), name="bias")
    C = te.compute(shape, lambda *i: A[i] + Bias[i[-1]], name="C")
    f = build_te([A, Bias, C])
    a = rng.standard_normal(shape).astype("float32")
    bias = rng.standard_normal(shape[-1]).astype("float32")
    c = np.empty_like(a)
    f(a, bias, c)
    np.testing.assert_allclose(c, a + bias, rtol=1e-6)


def test_symbolic_shape_elementwise(rng):
    n, m = te.var("n"), te.var("m", "int64")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * A[i, j], name="B")
    f = build_te([A, B])
    for shape in [(1, 1), (3, 5), (64, 33)]:
        a = rng.standard_normal(shape).astype("float32")
        b = np.empty_like(a)
        f(a, b)
        np.testing.assert_allclose(b, a * a, rtol=1e-6)
