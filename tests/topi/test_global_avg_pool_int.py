"""nn.global_avg_pool2d of integers (FakeQuantizationToInteger's int32 pools): the native kernel
divides the sum by the integer count, truncating toward zero as the reference does (it had
divided an int32 sum by a float constant, which the code generator rejected)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_global_avg_pool2d_builds_and_matches_the_reference(dtype):
    x = relay.var("x", shape=(1, 20, 5, 7), dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.global_avg_pool2d(x)))
    a = np.random.default_rng(0).integers(-300, 300, size=(1, 20, 5, 7)).astype(dtype)
    ref = relay.create_executor("debug", mod=mod).evaluate()(a).numpy()
    with tvm.transform.PassContext(opt_level=3):
        got = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(a).numpy()
    if dtype == "int32":
        np.testing.assert_array_equal(got, np.trunc(a.sum((2, 3), keepdims=True) / 35))
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-6)
