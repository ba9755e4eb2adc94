"""meshgrid, argwhere, unique, adv_index, sliding_window, strided_set: types, numpy semantics,
text round trip and relay.build (static-shape ops)."""

import numpy as np
import pytest
from relay_op_check import _mod, _type, run, run_all

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(3)


def test_meshgrid():
    a = np.arange(3, dtype="float32")
    b = np.arange(4, dtype="float32") * 10
    for indexing in ("ij", "xy"):
        outs = run_all(lambda x, y, ix=indexing: relay.meshgrid([x, y], ix).astuple(), a, b)
        for o, w in zip(outs, np.meshgrid(a, b, indexing=indexing)):
            np.testing.assert_array_equal(o, w)
    with pytest.raises(Exception, match="meshgrid: inputs must be scalars or 1-D"):
        _type(lambda x, y: relay.meshgrid([x, y]).astuple(), (2, 2), (3,))


def test_argwhere():
    x = np.array([[0, 1, 0], [2, 0, 3]], "int32")
    mod = _mod(relay.argwhere, x)
    assert str(mod["main"].body.checked_type) == "Tensor[(?, 2), int32]"
    tvm.ir.assert_structural_equal(relay.parse(mod.astext()), mod)
    got = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
    np.testing.assert_array_equal(got, np.argwhere(x))
    assert got.dtype == np.int32
    with pytest.raises(Exception, match="argwhere: expects a tensor of rank >= 1"):
        _type(relay.argwhere, ())


@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique(is_sorted):
    x = np.array([4, 5, 1, 2, 3, 3, 4, 5], "int32")
    out, idx, inv, num, counts = run_all(
        lambda a: relay.unique(a, is_sorted, return_counts=True).astuple(), x)
    k = int(num[0])
    assert k == 5
    if is_sorted:
        np.testing.assert_array_equal(out[:k], [1, 2, 3, 4, 5])
        np.testing.assert_array_equal(idx[:k], [2, 3, 4, 0, 1])
        np.testing.assert_array_equal(inv, [3, 4, 0, 1, 2, 2, 3, 4])
        np.testing.assert_array_equal(counts[:k], [1, 1, 2, 2, 2])
    else:  # TVM's documented example: order of first occurrence
        np.testing.assert_array_equal(out[:k], [4, 5, 1, 2, 3])
        np.testing.assert_array_equal(idx[:k], [0, 1, 2, 3, 4])
        np.testing.assert_array_equal(inv, [0, 1, 2, 3, 4, 4, 0, 1])
        np.testing.assert_array_equal(counts[:k], [2, 2, 1, 1, 2])
    np.testing.assert_array_equal(out[inv], x)
    t = _type(lambda a: relay.unique(a).astuple(), (6,))
    assert len(t.fields) == 4 and tuple(t.fields[3].shape) == (1,)
    with pytest.raises(Exception, match="unique: expects a 1-D tensor"):
        _type(lambda a: relay.unique(a).astuple(), (2, 3))


def test_adv_index():
    data = RNG.standard_normal((4, 5, 3)).astype("float32")
    i0 = np.array([[0, 3], [1, 2]], "int64")
    i1 = np.array([4, 0], "int64")
    got = run(lambda d, a, b: relay.adv_index([d, a, b]), data, i0, i1)
    np.testing.assert_array_equal(got, data[i0, i1])
    assert got.shape == (2, 2, 3)
    with pytest.raises(Exception, match="adv_index: index 0 must be an integer tensor"):
        _type(lambda d, a: relay.adv_index([d, a]), (3, 3), (2,))


def test_sliding_window():
    x = RNG.standard_normal((2, 7, 6)).astype("float32")
    got = run(lambda a: relay.sliding_window(a, 1, (3, 2), (2, 2)), x)
    assert got.shape == (2, 3, 3, 3, 2)
    for i in range(3):
        for j in range(3):
            np.testing.assert_array_equal(got[:, i, j], x[:, 2 * i:2 * i + 3, 2 * j:2 * j + 2])
    with pytest.raises(Exception, match="sliding_window: window_shape and strides must have"):
        _type(lambda a: relay.sliding_window(a, 0, (3, 2), (1, 1)), x.shape)


@pytest.mark.numpy_fallback("strided_set has no native compute")
def test_strided_set():
    x = RNG.standard_normal((4, 6)).astype("float32")
    v = RNG.standard_normal((2, 3)).astype("float32")
    got = run(lambda a, b: relay.strided_set(a, b, [1, 0], [4, 6], [2, 2]), x, v)
    want = x.copy()
    want[1:4:2, 0:6:2] = v
    np.testing.assert_array_equal(got, want)
    v2 = RNG.standard_normal((4, 2)).astype("float32")
    got = run(lambda a, b: relay.strided_set(a, b, [0, 5], [4, 1], [1, -2]), x, v2)
    want = x.copy()
    want[0:4:1, 5:1:-2] = v2
    np.testing.assert_array_equal(got, want)
    with pytest.raises(Exception, match="strided_set: value dtype float64"):
        _type(lambda a, b: relay.strided_set(a, relay.cast(b, "float64"), [0], [1]), (4,), (1,))
