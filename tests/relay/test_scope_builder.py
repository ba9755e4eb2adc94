"""relay.ScopeBuilder: lets, if/else scopes, errors."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


def test_let_if_else_evaluates():
    x = relay.var("x", shape=(), dtype="float32")
    sb = relay.ScopeBuilder()
    c = sb.let("c", relay.greater(x, relay.const(0.0)))
    with sb.if_scope(c):
        sb.ret(relay.add(x, relay.const(1.0)))
    with sb.else_scope():
        sb.ret(relay.negative(x))
    body = sb.get()
    assert isinstance(body, relay.Let) and isinstance(body.body, relay.If)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    run = relay.create_executor("debug", mod=mod).evaluate()
    assert float(run(np.float32(2.0)).numpy()) == 3.0
    assert float(run(np.float32(-2.0)).numpy()) == 2.0


def test_errors():
    sb = relay.ScopeBuilder()
    with pytest.raises(ValueError, match="before sb.ret"):
        sb.get()
    sb.ret(relay.const(1.0))
    with pytest.raises(ValueError, match="already called"):
        sb.ret(relay.const(2.0))
    with pytest.raises(ValueError, match="directly follow"):
        with relay.ScopeBuilder().else_scope():
            pass
