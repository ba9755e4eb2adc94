"""Native computes of einsum, unravel_index, reverse_sequence, adv_index, collapse_sum_to and
nn.nll_loss match the ops' numpy references (the debug interpreter runs those); the builds are
strict, so a numpy fallback fails them."""

import numpy as np
import pytest
from native_cases import native_and_reference

from minitvm import relay

RNG = np.random.default_rng(0)


def _v(name, a):
    return relay.var(name, shape=a.shape, dtype=str(a.dtype))


@pytest.mark.parametrize("equation,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij->", [(2, 3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (1, 4, 5)]),  # broadcast ellipsis
    ("ii->i", [(4, 4)]),                      # diagonal
    ("i,j->ij", [(3,), (5,)]),
])
def test_einsum(equation, shapes):
    arrays = {f"a{k}": RNG.standard_normal(s).astype("float32") for k, s in enumerate(shapes)}
    expr = relay.einsum([_v(n, a) for n, a in arrays.items()], equation)
    got, want = native_and_reference(expr, arrays)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("indices", [[5, 0, 11, 7, 23, 12], 17])
def test_unravel_index(dtype, indices):
    i = np.array(indices, dtype)
    expr = relay.unravel_index(_v("i", i), relay.const(np.array([2, 3, 4], dtype)))
    got, want = native_and_reference(expr, {"i": i})
    assert got.shape == (3,) + i.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lengths,seq_axis,batch_axis", [
    ([1, 5, 3, 9], 1, 0),  # a length past the axis is clamped to it
    ([2, 0, -1], 0, 2),    # zero and negative lengths keep the sequence
])
def test_reverse_sequence(lengths, seq_axis, batch_axis):
    x = RNG.standard_normal((4, 5, 3)).astype("float32")
    expr = relay.reverse_sequence(_v("x", x), relay.const(np.array(lengths, "int32")),
                                  seq_axis=seq_axis, batch_axis=batch_axis)
    got, want = native_and_reference(expr, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_adv_index_broadcasts_and_counts_negative_indices_from_the_end():
    x = RNG.standard_normal((4, 5, 3)).astype("float32")
    i0 = np.array([[0, -1], [2, 3]], "int64")
    i1 = np.array([1, -5], "int64")
    got, want = native_and_reference(relay.adv_index([_v("x", x), _v("i0", i0), _v("i1", i1)]),
                                      {"x": x, "i0": i0, "i1": i1})
    assert got.shape == (2, 2, 3)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,target", [((4, 5, 3), (5, 1)), ((4, 5), (1, 5)),
                                          ((2, 3), (2, 3))])
def test_collapse_sum_to(shape, target):
    x = RNG.standard_normal(shape).astype("float32")
    got, want = native_and_reference(relay.collapse_sum_to(_v("x", x), target), {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("pshape,targets", [
    ((6, 4, 3), [[0, 1, 2], [3, -100, 0], [1, 1, 1], [2, 3, 0], [0, 0, 0], [3, 2, 1]]),
    ((3, 5), [4, -100, 0]),  # ignored target
])
def test_nll_loss(reduction, pshape, targets):
    p = RNG.standard_normal(pshape).astype("float32")
    t = np.array(targets, "int64")
    w = RNG.random(pshape[1]).astype("float32")
    expr = relay.nn.nll_loss(_v("p", p), _v("t", t), _v("w", w), reduction=reduction)
    got, want = native_and_reference(expr, {"p": p, "t": t, "w": w})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
