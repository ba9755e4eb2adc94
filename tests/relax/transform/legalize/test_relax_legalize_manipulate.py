"""LegalizeOps of the data-movement, indexing, creation and datatype ops against numpy, on odd
static shapes and symbolic shapes."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm import relax
from minitvm.relax import op as R


def test_permute_dims():
    a = rand((2, 3, 5))
    check(lambda x: R.permute_dims(x, [2, 0, 1]), [tensor(a.shape)], [a], a.transpose(2, 0, 1))
    check(R.permute_dims, [tensor(a.shape)], [a], a.transpose())
    (n,) = sym("n")
    check(lambda x: R.permute_dims(x, [1, 0]), [tensor([n, 3])], [a[0].T.copy()], a[0])


def test_reshape_static_and_symbolic():
    a = rand((3, 4, 5))
    check(lambda x: R.reshape(x, (5, 12)), [tensor(a.shape)], [a], a.reshape(5, 12))
    check(lambda x: R.reshape(x, (-1,)), [tensor(a.shape)], [a], a.reshape(-1))
    n, = sym("n")
    for rows in (1, 7):
        b = rand((rows, 6))
        check(lambda x, n=n: R.reshape(x, (n * 3, 2)), [tensor([n, 6])], [b], b.reshape(-1, 2))
        check(lambda x, n=n: R.reshape(x, (n, 2, 3)), [tensor([n, 6])], [b],
              b.reshape(rows, 2, 3))


def test_flatten_expand_squeeze():
    a = rand((3, 1, 5))
    check(R.flatten, [tensor(a.shape)], [a], a.reshape(-1))
    check(lambda x: R.expand_dims(x, [0, 3]), [tensor(a.shape)], [a],
          np.expand_dims(a, (0, 3)))
    check(lambda x: R.squeeze(x, [1]), [tensor(a.shape)], [a], a.squeeze(1))
    check(R.squeeze, [tensor(a.shape)], [a], a.squeeze())


def test_concat_and_split():
    a, b, c = rand((2, 3)), rand((2, 5)), rand((2, 1))
    check(lambda x, y, z: R.concat([x, y, z], axis=1),
          [tensor(a.shape), tensor(b.shape), tensor(c.shape)], [a, b, c],
          np.concatenate([a, b, c], 1))
    n, m = sym("n", "m")
    d = rand((4, 3))
    e = rand((2, 3))
    check(lambda x, y: R.concat([x, y], axis=0), [tensor([n, 3]), tensor([m, 3])], [d, e],
          np.concatenate([d, e]))
    x = rand((7, 4))
    got = np.split(x, [2, 5], axis=0)
    check(lambda t: R.split(t, [2, 5], axis=0), [tensor(x.shape)], [x], tuple(got))
    y = rand((2, 9))
    check(lambda t: R.split(t, 3, axis=1), [tensor(y.shape)], [y], tuple(np.split(y, 3, 1)))


def test_broadcast_to_repeat():
    a = rand((3, 1))
    check(lambda x: R.broadcast_to(x, (2, 3, 4)), [tensor(a.shape)], [a],
          np.broadcast_to(a, (2, 3, 4)))
    check(lambda x: R.repeat(x, 2, axis=0), [tensor(a.shape)], [a], np.repeat(a, 2, 0))
    check(lambda x: R.repeat(x, 3), [tensor(a.shape)], [a], np.repeat(a, 3))


def test_take():
    a = rand((5, 4))
    idx = np.array([4, 0, 2], "int64")
    check(lambda x, i: R.take(x, i, axis=0), [tensor(a.shape), tensor(idx.shape, "int64")],
          [a, idx], a[idx])
    idx2 = np.array([[3, 1], [0, 0]], "int32")
    check(lambda x, i: R.take(x, i, axis=1), [tensor(a.shape), tensor(idx2.shape, "int32")],
          [a, idx2], np.take(a, idx2, axis=1))
    idx3 = np.array([7, -1, 25], "int64")
    check(lambda x, i: R.take(x, i, axis=0, mode="wrap"),
          [tensor(a.shape), tensor(idx3.shape, "int64")], [a, idx3],
          np.take(a, idx3, 0, mode="wrap"))
    check(lambda x, i: R.take(x, i, axis=0, mode="clip"),
          [tensor(a.shape), tensor(idx3.shape, "int64")], [a, idx3],
          np.take(a, idx3, 0, mode="clip"))


def test_strided_slice():
    a = rand((7, 6))
    check(lambda x: R.strided_slice(x, [0, 1], [1, -5], [6, 6], [2, 1]), [tensor(a.shape)], [a],
          a[1:6:2, -5:6])
    check(lambda x: R.strided_slice(x, [0], [5], [1], [-2]), [tensor(a.shape)], [a],
          a[5:1:-2])
    (n,) = sym("n")
    check(lambda x: R.strided_slice(x, [1], [1], [4]), [tensor([n, 6])], [a], a[:, 1:4])


def test_astype_where():
    a = rand((4, 5))
    check(lambda x: R.astype(x, "int32"), [tensor(a.shape)], [a], a.astype("int32"))
    check(lambda x: R.astype(x, "float16"), [tensor(a.shape)], [a], a.astype("float16"),
          rtol=1e-3, atol=1e-3)
    c = rand((4, 1), "bool")
    b = rand((5,))
    check(R.where, [tensor(c.shape, "bool"), tensor(a.shape), tensor(b.shape)], [c, a, b],
          np.where(c, a, b))


def test_creation():
    fill = np.array(3.5, "float32")
    check(lambda v: R.full((2, 3), v, "float32"), [tensor((), "float32")], [fill],
          np.full((2, 3), 3.5, "float32"))
    a = rand((3, 2))
    check(lambda x: R.zeros_like(x), [tensor(a.shape)], [a], np.zeros_like(a))
    check(lambda x: R.ones_like(x, "int32"), [tensor(a.shape)], [a], np.ones((3, 2), "int32"))
    check(lambda x: R.full_like(x, relax.const(2.0, "float32")), [tensor(a.shape)], [a],
          np.full_like(a, 2.0))
    check(lambda x: R.add(x, R.zeros((3, 2), "float32")), [tensor(a.shape)], [a], a)
    check(lambda x: R.add(x, R.ones((2,), "float32")), [tensor(a.shape)], [a], a + 1)


def test_arange_tril_triu():
    a = rand((4, 5))
    check(lambda x: R.add(R.astype(R.arange(0, 5, 1, "int64"), "float32"), x),
          [tensor(a.shape)], [a], a + np.arange(5))
    check(lambda x: R.tril(x, 1), [tensor(a.shape)], [a], np.tril(a, 1))
    check(lambda x: R.triu(x, -1), [tensor(a.shape)], [a], np.triu(a, -1))


@pytest.mark.parametrize("rows", [1, 5])
def test_symbolic_transpose_reshape_chain(rows):
    n, = sym("n")
    a = rand((rows, 2, 3))
    check(lambda x: R.reshape(R.permute_dims(x, [0, 2, 1]), (n, 6)), [tensor([n, 2, 3])], [a],
          a.transpose(0, 2, 1).reshape(rows, 6))
