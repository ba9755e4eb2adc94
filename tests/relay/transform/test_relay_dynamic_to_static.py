"""DynamicToStatic and the dyn.* ops: known shape arguments make the static ops."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.op import dyn
from minitvm.relay.transform import DynamicToStatic


def _c(values, dtype="int64"):
    return relay.const(np.array(values, dtype), dtype)


def _check(params, body, expected_body, args=None):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    out = run_pass(DynamicToStatic(), mod)
    expected = infer(relay.Function(params, expected_body))
    got = relay.transform.InferType()(out)["main"]
    assert tvm.ir.structural_equal(got.body, expected.body), got
    check_numerics(mod, out, args)
    return got


def test_reshape_from_shape_of():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3, 2))
    got = _check([x, y], dyn.reshape(x, relay.shape_of(y)), relay.reshape(x, [3, 2]))
    assert tuple(got.checked_type.ret_type.shape) == (3, 2)


@pytest.mark.parametrize("name", ["broadcast_to", "tile", "zeros", "ones", "full",
                                  "strided_slice", "pad", "expand_dims", "one_hot"])
def test_each_dynamic_op(name):
    x = relay.var("x", shape=(2, 3))
    i = relay.var("i", shape=(4,), dtype="int32")
    params = [x]
    if name == "broadcast_to":
        body, want = dyn.broadcast_to(x, _c([4, 2, 3])), relay.broadcast_to(x, [4, 2, 3])
    elif name == "tile":
        body, want = dyn.tile(x, _c([2, 1])), relay.tile(x, [2, 1])
    elif name == "zeros":
        body = relay.add(x, dyn.zeros(_c([2, 3])))
        want = relay.add(x, relay.zeros([2, 3], "float32"))
    elif name == "ones":
        body = relay.add(x, dyn.ones(relay.shape_of(x)))
        want = relay.add(x, relay.ones([2, 3], "float32"))
    elif name == "full":
        body = relay.add(x, dyn.full(relay.const(2.0), _c([2, 3])))
        # the pass ends with FoldConstant over the function (TVM): the static full folds
        want = relay.add(x, relay.const(np.full((2, 3), 2.0, "float32")))
    elif name == "strided_slice":
        body = dyn.strided_slice(x, _c([0, 1]), _c([2, 3]), _c([1, 1]))
        want = relay.strided_slice(x, [0, 1], [2, 3], [1, 1])
    elif name == "pad":
        body = dyn.nn.pad(x, _c([[1, 0], [0, 2]]), 0.5)
        want = relay.nn.pad(x, ((1, 0), (0, 2)), relay.const(0.5))
    elif name == "expand_dims":
        body = dyn.expand_dims(x, relay.const(1), 2)
        want = relay.expand_dims(x, 1, 2)
    else:
        params = [i]
        body = dyn.one_hot(i, relay.const(1.0), relay.const(0.0), relay.const(5))
        want = relay.one_hot(i, relay.const(1.0), relay.const(0.0), 5, -1, "float32")
    args = [np.arange(6, dtype="float32").reshape(2, 3)] if params[0] is x else [
        np.array([0, 3, 1, 4], "int32")]
    _check(params, body, want, args)


def test_unknown_shapes_stay_dynamic():
    x = relay.var("x", shape=(2, 3))
    s = relay.var("s", shape=(2,), dtype="int64")
    before = relay.Function([x, s], dyn.reshape(x, s))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(before))
    out = DynamicToStatic()(mod)
    assert out["main"].body.op.name == "dyn.reshape"
    res = relay.create_executor("debug", mod=out).evaluate()(np.ones((2, 3), "float32"),
                                                             np.array([3, 2]))
    assert res.numpy().shape == (3, 2)


def test_chains_resolve_in_one_pass():
    x = relay.var("x", shape=(2, 3))
    a = dyn.reshape(x, _c([3, 2]))
    b = dyn.tile(a, _c([1, 2]))
    c = dyn.reshape(b, relay.shape_of(relay.transpose(b)))
    _check([x], c, relay.reshape(relay.tile(relay.reshape(x, [3, 2]), [1, 2]), [4, 3]))


def test_type_errors():
    x = relay.var("x", shape=(2, 3))
    bad = relay.Function([x], dyn.reshape(x, relay.const(np.ones((2, 2), "int64"))))
    with pytest.raises(TypeError, match="dyn.reshape: the new shape must be a 1-D tensor"):
        relay.transform.InferType()(tvm.IRModule.from_expr(bad))
    f = relay.Function([x], dyn.reshape(x, relay.const(np.array([1.0, 6.0], "float32"))))
    with pytest.raises(TypeError, match="must be an integer tensor"):
        relay.transform.InferType()(tvm.IRModule.from_expr(f))


def test_deep_chain():
    x = relay.var("x", shape=(2, 3))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    e = dyn.reshape(e, _c([3, 2]))
    mod = tvm.IRModule.from_expr(relay.Function([x], e))
    out = DynamicToStatic()(mod)
    assert out["main"].body.op.name == "reshape"
