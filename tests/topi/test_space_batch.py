"""``nn.space_to_batch_nd`` / ``nn.batch_to_space_nd`` lowered natively through their TE computes
(``topi.space_batch``): strict builds (no numpy kernel), against the ops' numpy references and a
direct numpy reading of TensorFlow's definition, over block shapes, paddings with a pad value,
crops, trailing dims and a fused neighbour; the pair with crops == paddings is the identity."""

import numpy as np
import pytest
from native_cases import native_and_reference

from minitvm import relay, te
from minitvm.tir.expr import ProducerLoad
from minitvm.tir.stmt_functor import post_order_visit
from minitvm.topi import space_batch

RNG = np.random.default_rng(0)


def _v(name, a):
    return relay.var(name, shape=a.shape, dtype=str(a.dtype))


def _s2b_tf(x, block, pads, value):
    """TensorFlow's SpaceToBatchND, read off its definition: pad, split each padded dim into
    (outer, block), move the block offsets in front of the batch."""
    m = len(block)
    x = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)] * (x.ndim - m - 1), constant_values=value)
    n = x.shape[0]
    split = [n]
    for k, b in enumerate(block):
        split += [x.shape[1 + k] // b, b]
    x = x.reshape(split + list(x.shape[m + 1:]))
    order = [2 + 2 * k for k in range(m)] + [0] + [1 + 2 * k for k in range(m)] + \
        list(range(2 * m + 1, x.ndim))
    x = x.transpose(order)
    return x.reshape([n * int(np.prod(block))] + [x.shape[m + 1 + k] for k in range(m)] +
                     list(x.shape[2 * m + 1:]))


S2B_CASES = [
    ((1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]], 0.0),
    ((2, 5, 3, 3), [2, 3], [[1, 0], [2, 1]], 0.0),
    ((3, 6, 7, 2), [3, 2], [[0, 3], [1, 0]], -2.5),   # pad value, only one side per dim
    ((2, 7, 4), [3], [[1, 1]], 1.0),                  # one block dim, a trailing channel dim
    ((1, 4, 4, 2, 3), [2, 2], [[2, 2], [0, 2]], 0.5),  # two trailing dims
]


@pytest.mark.parametrize("shape, block, pads, value", S2B_CASES)
def test_space_to_batch_nd(shape, block, pads, value):
    x = RNG.standard_normal(shape).astype("float32")
    expr = relay.nn.space_to_batch_nd(relay.nn.relu(_v("x", x)), block, pads, value)
    got, want = native_and_reference(expr, {"x": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, _s2b_tf(np.maximum(x, 0), block, pads, value))


@pytest.mark.parametrize("shape, block, pads, value", S2B_CASES)
def test_batch_to_space_nd_inverts_space_to_batch(shape, block, pads, value):
    x = RNG.standard_normal(shape).astype("float32")
    batched = _s2b_tf(x, block, pads, value)
    b = _v("b", batched)
    expr = relay.nn.batch_to_space_nd(b, block, pads) * relay.const(2.0)
    got, want = native_and_reference(expr, {"b": batched})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, x * 2)


@pytest.mark.parametrize("shape, block, crops", [
    ((8, 2, 3, 1), [2, 2], [[0, 1], [1, 1]]),
    ((6, 3, 2, 4), [3, 2], [[2, 0], [0, 0]]),
    ((4, 5), [4], [[3, 2]]),
])
def test_batch_to_space_nd_crops(shape, block, crops):
    x = RNG.standard_normal(shape).astype("float32")
    got, want = native_and_reference(relay.nn.batch_to_space_nd(_v("x", x), block, crops),
                                     {"x": x})
    np.testing.assert_array_equal(got, want)


def test_computes_load_only_at_index_arithmetic():
    """The input is read at an index built from the output's own index (no load inside an
    index), and only once per element."""
    x = te.placeholder((2, 5, 3, 3), name="x")
    out = space_batch.space_to_batch_nd(x, [2, 3], [[1, 0], [2, 1]], 0.0)
    assert [int(d) for d in out.shape] == [12, 3, 2, 3]
    loads = _loads(out.op.body)
    assert len(loads) == 1 and loads[0].producer.op is x.op
    assert not any(_loads(i) for i in loads[0].indices)
    back = space_batch.batch_to_space_nd(out, [2, 3], [[1, 0], [2, 1]])
    assert [int(d) for d in back.shape] == [2, 5, 3, 3]
    loads = _loads(back.op.body)
    assert len(loads) == 1 and not any(_loads(i) for i in loads[0].indices)


def _loads(expr):
    found = []
    post_order_visit(expr, lambda e: found.append(e) if isinstance(e, ProducerLoad) else None)
    return found


def test_indivisible_padding_is_a_type_error():
    x = relay.var("x", shape=(1, 5, 4, 1))
    with pytest.raises(TypeError, match="not divisible"):
        native_and_reference(relay.nn.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]), {})
