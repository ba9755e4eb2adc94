"""DivToMul builds TVM's program: TVM v0.19's own case restated — ``x / c`` with a constant c
becomes ``x * (1 / c)``, the reciprocal computed in the constant's dtype."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


@pytest.mark.parametrize("dtype, rtol", [("float16", 1e-3), ("float32", 1e-7),
                                         ("float64", 1e-12)])
def test_div_to_mul(dtype, rtol):
    x = relay.var("x", relay.TensorType((), dtype))
    y = relay.Constant(tvm.nd.array(np.array([1.5]).astype(dtype)))
    mod = tvm.IRModule.from_expr(relay.Function([x], x / y))
    out = relay.transform.DivToMul()(mod)
    body = out["main"].body
    assert body.op.name == "multiply" and body.args[0] is out["main"].params[0]
    recip = body.args[1].data.numpy()
    assert recip.dtype == np.dtype(dtype) and recip.shape == (1,)
    np.testing.assert_allclose(recip[0], 1 / 1.5, rtol=rtol)
    x2 = relay.var("x", relay.TensorType((), dtype))
    expected = relay.Function([x2], relay.multiply(x2, relay.const(recip, dtype)))
    tvm.ir.assert_structural_equal(
        relay.transform.InferType()(out)["main"],
        relay.transform.InferType()(tvm.IRModule.from_expr(expected))["main"])
    v = np.array(3.0, dtype)
    run = relay.create_executor("debug", mod=out).evaluate()
    np.testing.assert_allclose(run(v).numpy(), v / np.array([1.5], dtype), rtol=max(rtol, 1e-3))
