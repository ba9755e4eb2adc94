"""The tutorial example program evaluates to the same numbers as a direct numpy computation."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing import example


def test_example_matches_numpy():
    mod = tvm.IRModule.from_expr(example.example(seed=3))
    rng = np.random.RandomState(0)
    x = rng.standard_normal(example.DATA_SHAPE).astype("float32")
    w = rng.standard_normal(example.WEIGHT_SHAPE).astype("float32")
    out = relay.create_executor("debug", mod=mod).evaluate()(x, w)
    ref = example.reference_output(x, w, example.const_data(3))
    tvm.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_reference_is_an_independent_convolution():
    # A 1x1-channel check of the reference against an explicit loop.
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 3, 3), "float32")
    c = np.zeros((1, 1, 2, 2), "float32")
    expected = np.array([[[[45, 54], [81, 90]]]], "float32") * 2
    np.testing.assert_array_equal(example.reference_output(x, w, c), expected)
