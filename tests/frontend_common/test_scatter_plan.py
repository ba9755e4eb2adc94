"""The gather plan of a scatter with a known index: applied with numpy it must reproduce a
sequential scatter (numpy's ufunc.at), and it must refuse the indices it cannot serve."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.frontend_common.scatter_plan import identity, plan_scatter

_AT = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _apply(plan, x, upd, axis, red):
    pad_shape = list(upd.shape)
    pad_shape[axis] = 1
    fill = 0 if red == "update" else identity(red, str(x.dtype))
    src = np.concatenate([upd, np.full(pad_shape, fill, x.dtype)], axis)
    g = np.take(src, plan.table, axis=axis)
    if red == "update":
        hit = plan.hit.reshape([x.shape[axis] if d == axis else 1 for d in range(x.ndim)])
        return np.where(hit, np.squeeze(g, axis + 1), x)
    return _AT[red](x, {"add": np.sum, "mul": np.prod, "max": np.max,
                        "min": np.min}[red](g, axis=axis + 1))


def _sequential(x, index, upd, axis, red):
    out = x.copy()
    for pos in np.ndindex(*index.shape):
        t = list(pos)
        t[axis] = index[pos]
        t = tuple(t)
        out[t] = upd[pos] if red == "update" else _AT[red](out[t], upd[pos])
    return out


@pytest.mark.parametrize("red", ["update", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_plan_reproduces_a_sequential_scatter(red, axis, dtype):
    rng = np.random.default_rng(axis)
    x = rng.integers(-5, 5, (6, 4)).astype(dtype)
    n = 9
    idx1 = rng.integers(-x.shape[axis], x.shape[axis], n)  # repeats and negatives
    shape = [6, 4]
    shape[axis] = n
    bshape = [1, 1]
    bshape[axis] = n
    index = np.broadcast_to(idx1.reshape(bshape), shape)
    upd = rng.integers(-5, 5, shape).astype(dtype)
    plan = plan_scatter(index, x.shape, axis, red)
    assert plan is not None
    wrapped = np.where(index < 0, index + x.shape[axis], index)
    np.testing.assert_array_equal(_apply(plan, x, upd, axis, red),
                                  _sequential(x, wrapped, upd, axis, red))


def test_plan_refuses_what_it_cannot_serve():
    # varies off the axis
    assert plan_scatter(np.array([[0, 1], [1, 0]]), (2, 2), 1, "add") is None
    # index shape differs from the data's off the axis
    assert plan_scatter(np.zeros((2, 3), "int64"), (2, 4), 0, "add") is None
    # one target takes every update: the padded table would dwarf the updates
    assert plan_scatter(np.array([0] * 50 + [1]), (1000,), 0, "add") is None
    with pytest.raises(IndexError, match="out of range"):
        plan_scatter(np.array([0, 7]), (3,), 0, "add")
