"""The ops the Relay VM refused for run-time sizes (group_norm, einsum, gather_nd, scatter_nd,
mirror padding), legalized over symbolic Relax shapes (``R.Tensor(("n", ...))``) and run at
several sizes against numpy; reflect padding wider than one reflection (numpy's periodic
mirror, which the single mirror read out of bounds for) at a static and a symbolic size."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm.relax.op import einsum, gather_nd, nn, scatter_nd


def _group_norm(x, g, b, groups=2, eps=1e-5):
    n, c = x.shape[:2]
    y = x.reshape(n, groups, -1)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + eps)
    s = (1, c) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * g.reshape(s) + b.reshape(s)


@pytest.mark.parametrize("shape", [(2, 4, 5), (1, 6, 3)])
def test_group_norm_symbolic_batch_and_channels(shape):
    n, c, m = sym("n", "c", "m")
    a, g, b = rand(shape), rand(shape[1:2]), rand(shape[1:2])
    check(lambda x, y, z: nn.group_norm(x, y, z, 2, 1, [2]), [tensor([n, c, m]), tensor([c]),
                                                             tensor([c])],
          [a, g, b], _group_norm(a, g, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shapes", [((4, 3), (3, 5)), ((2, 1), (1, 2))])
def test_einsum_symbolic(shapes):
    n, k, m = sym("n", "k", "m")
    a, b = rand(shapes[0]), rand(shapes[1])
    check(lambda x, y: einsum([x, y], "ij,jk->ik"), [tensor([n, k]), tensor([k, m])], [a, b],
          np.einsum("ij,jk->ik", a, b), rtol=1e-4, atol=1e-5)


def test_gather_nd_and_scatter_nd_symbolic():
    n, m, k = sym("n", "m", "k")
    for rows, idx in ((4, np.array([[0, 1], [3, 2]], "int64")), (5, np.array([[4, 1]], "int64"))):
        a, u = rand((rows, 3)), rand((len(idx),))
        check(lambda x, i: gather_nd(x, i), [tensor([n, m]), tensor([k, 2], "int64")], [a, idx],
              a[tuple(idx.T)])
        want = a.copy()
        want[tuple(idx.T)] = u
        check(lambda x, i, v: scatter_nd(x, i, v),
              [tensor([n, m]), tensor([k, 2], "int64"), tensor([k])], [a, idx, u], want)


@pytest.mark.parametrize("mode", ["reflect", "edge"])
@pytest.mark.parametrize("shape", [(4, 3), (2, 5), (1, 2)])
def test_pad_symbolic(mode, shape):
    n, m = sym("n", "m")
    a = rand(shape)
    check(lambda x: nn.pad(x, [1, 1, 2, 0], pad_mode=mode), [tensor([n, m])], [a],
          np.pad(a, ((1, 1), (2, 0)), mode=mode))


def test_reflect_pad_wider_than_the_axis():
    """numpy mirrors periodically (period 2 (n - 1)); the single mirror read out of bounds."""
    a = rand((2, 3))
    pads = ((3, 1), (2, 4))
    check(lambda x: nn.pad(x, [3, 1, 2, 4], pad_mode="reflect"), [tensor(a.shape)], [a],
          np.pad(a, pads, mode="reflect"))
    n, m = sym("n", "m")
    check(lambda x: nn.pad(x, [3, 1, 2, 4], pad_mode="reflect"), [tensor([n, m])], [a],
          np.pad(a, pads, mode="reflect"))
