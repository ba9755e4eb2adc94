"""LegalizeOps of the reductions, argmax/argmin and matmul (batched, broadcast, 1-D, symbolic)
against numpy."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm.relax import op as R

RED = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
       "variance": np.var, "std": np.std}


@pytest.mark.parametrize("name", sorted(RED))
@pytest.mark.parametrize("axis,keepdims", [([1], False), ([0, 2], True), (None, False)])
def test_reductions(name, axis, keepdims):
    a = rand((3, 5, 4), lo=0.5, hi=1.5)
    ref = RED[name](a, axis=None if axis is None else tuple(axis), keepdims=keepdims)
    check(lambda x: getattr(R, name)(x, axis, keepdims), [tensor(a.shape)], [a],
          np.asarray(ref, "float32"), rtol=1e-4, atol=1e-5)


def test_reduction_symbolic():
    (n,) = sym("n")
    for rows in (1, 9):
        a = rand((rows, 7))
        check(lambda x: R.sum(x, [1]), [tensor([n, 7])], [a], a.sum(1), rtol=1e-5)
        check(lambda x: R.mean(x, [0], keepdims=True), [tensor([n, 7])], [a],
              a.mean(0, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_argmax_argmin(kind):
    a = rand((4, 6, 3)).round(1)  # ties: the first index wins, as numpy
    ref = getattr(np, kind)
    check(lambda x: getattr(R, kind)(x, 1), [tensor(a.shape)], [a], ref(a, 1))
    check(lambda x: getattr(R, kind)(x, 2, True), [tensor(a.shape)], [a],
          np.expand_dims(ref(a, 2), 2))
    check(lambda x: getattr(R, kind)(x), [tensor(a.shape)], [a], np.asarray(ref(a)))


@pytest.mark.parametrize("sa,sb", [
    ((5, 7), (7, 3)),
    ((2, 5, 7), (7, 3)),
    ((2, 1, 5, 7), (3, 7, 4)),
    ((7,), (7, 3)),
    ((5, 7), (7,)),
    ((7,), (7,)),
])
def test_matmul_shapes(sa, sb):
    a, b = rand(sa), rand(sb)
    check(R.matmul, [tensor(sa), tensor(sb)], [a, b], np.matmul(a, b), rtol=1e-4, atol=1e-4)


def test_matmul_symbolic_and_out_dtype():
    n, = sym("n")
    for rows in (1, 13):
        a, b = rand((rows, 9)), rand((9, 4))
        check(R.matmul, [tensor([n, 9]), tensor([9, 4])], [a, b], a @ b, rtol=1e-4, atol=1e-5)
    a16, b16 = rand((3, 4), "float16"), rand((4, 2), "float16")
    check(lambda x, y: R.matmul(x, y, out_dtype="float32"),
          [tensor(a16.shape, "float16"), tensor(b16.shape, "float16")], [a16, b16],
          a16.astype("float32") @ b16.astype("float32"), rtol=1e-3, atol=1e-3)


def test_linear_composite():
    """``R.linear`` is permute_dims + matmul + add: three PrimFuncs, numerics as numpy."""
    (n,) = sym("n")
    x, w, b = rand((6, 5)), rand((3, 5)), rand((3,))
    mod = check(lambda a, c, d: R.linear(a, c, d), [tensor([n, 5]), tensor(w.shape),
                                                    tensor(b.shape)], [x, w, b], x @ w.T + b,
                rtol=1e-4, atol=1e-5)
    names = sorted(g.name_hint for g in mod.functions if g.name_hint != "main")
    assert names == ["add", "matmul", "transpose"]
