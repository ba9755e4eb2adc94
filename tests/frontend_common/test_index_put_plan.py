"""frontend_common.index_put_plan: the transposes that turn ``x[:, :, i] = v`` (and
``index_copy_``) into a put on leading axes, checked against numpy's own indexing on every
placement of one or two index tensors in a rank-4 tensor."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from minitvm.frontend_common.index_put_plan import plan_sliced_put


def _put_through_plan(x, present, idx, values):
    """The plan applied with numpy: transpose, leading-axes put, transpose back."""
    bshape = np.broadcast_shapes(*[i.shape for i in idx])
    plan = plan_sliced_put(x.shape, present, bshape)
    assert plan is not None
    v = np.broadcast_to(values, plan.value_shape).transpose(plan.value_perm)
    xt = x.transpose(plan.perm).copy()
    xt[tuple(idx)] = v
    return xt.transpose(plan.inverse)


@pytest.mark.parametrize("present", [p for n in (1, 2, 3, 4)
                                     for p in itertools.product([False, True], repeat=n)
                                     if any(p) and not all(p[:sum(p)])])
def test_matches_numpy_indexing(present):
    rng = np.random.default_rng(0)
    shape = (3, 4, 5, 6)
    x = rng.standard_normal(shape)
    idx = [rng.permutation(shape[k])[:2] for k, p in enumerate(present) if p]
    key = []
    it = iter(idx)
    for p in present:
        key.append(next(it) if p else slice(None))
    expected = x.copy()
    vshape = expected[tuple(key)].shape
    values = rng.standard_normal(vshape)
    expected[tuple(key)] = values
    np.testing.assert_array_equal(_put_through_plan(x, list(present), idx, values), expected)


def test_values_broadcast_from_a_lower_rank():
    x = np.zeros((2, 3, 4))
    got = _put_through_plan(x, [False, True], [np.array([0, 2])], np.arange(4.0))
    expected = x.copy()
    expected[:, [0, 2]] = np.arange(4.0)
    np.testing.assert_array_equal(got, expected)


def test_leading_indices_need_no_plan():
    assert plan_sliced_put((3, 4, 5), [True, True], (2,)) is None


def test_errors():
    with pytest.raises(ValueError, match="at least one index"):
        plan_sliced_put((3, 4), [False, False], ())
    with pytest.raises(ValueError, match="3 indices"):
        plan_sliced_put((3, 4), [False, True, True], (2,))
