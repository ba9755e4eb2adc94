"""DivToMul: division by a float constant becomes multiplication by its reciprocal."""

from __future__ import annotations

import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import DivToMul


def test_scalar_and_tensor_constants():
    x = relay.var("x", shape=(2, 3))
    c = np.array([2.0, 4.0, 8.0], "float32")
    before = relay.Function([x], relay.divide(relay.divide(x, relay.const(2.0)),
                                              relay.const(c)))
    mod = tvm.IRModule.from_expr(before)
    out = run_pass(DivToMul(), mod)
    expected = relay.Function([x], relay.multiply(relay.multiply(x, relay.const(0.5)),
                                                  relay.const(1.0 / c)))
    assert tvm.ir.structural_equal(out["main"], infer(expected))
    check_numerics(mod, out)


def test_left_alone():
    x = relay.var("x", shape=(3,))
    i = relay.var("i", shape=(3,), dtype="int32")
    before = relay.Function([x, i], relay.Tuple([
        relay.divide(x, x),  # not a constant
        relay.divide(i, relay.const(2, "int32")),  # integer division
        relay.divide(x, relay.const(0.0)),  # reciprocal not finite
        relay.divide(relay.const(1.0), x),  # constant numerator
    ]))
    mod = tvm.IRModule.from_expr(before)
    out = run_pass(DivToMul(), mod)
    assert tvm.ir.structural_equal(out["main"], infer(before))


def test_float16_underflow_is_kept():
    x = relay.var("x", shape=(3,), dtype="float16")
    before = relay.Function([x], relay.divide(x, relay.const(1e-6, "float16")))
    out = DivToMul()(tvm.IRModule.from_expr(before))
    assert tvm.ir.structural_equal(out["main"], infer(before))


def test_typed_program_numerics():
    x = relay.var("x", shape=(4, 4))
    f = infer(relay.Function([x], relay.nn.relu(relay.divide(relay.exp(x),
                                                              relay.const(3.0)))))
    mod = tvm.IRModule.from_expr(f)
    check_numerics(mod, DivToMul()(mod))


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.divide(e, relay.const(2.0))
    out = DivToMul()(tvm.IRModule.from_expr(relay.Function([x], e)))
    assert out["main"].body.op.name == "multiply"
