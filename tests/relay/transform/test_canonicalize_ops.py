import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay


def test_pass_info():
    p = relay.transform.CanonicalizeOps()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "CanonicalizeOps", 3, ["InferType"])


@pytest.mark.parametrize("shape,axis,pad", [((2, 3, 4, 5), 1, 2), ((2, 3), -1, 0),
                                            ((2, 3, 4), 0, 2)])
def test_bias_add(shape, axis, pad):
    x = relay.var("x", shape=shape)
    b = relay.var("b", shape=(shape[axis],))
    before = relay.Function([x, b], relay.nn.bias_add(x, b, axis=axis))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(before))
    out = run_pass(relay.transform.CanonicalizeOps(), mod)
    bias = relay.expand_dims(b, 1, pad) if pad else b
    expected = infer(relay.Function([x, b], relay.add(x, bias)))
    tvm.ir.assert_structural_equal(out["main"], expected)
    check_numerics(mod, out)


def test_deep_chain():
    from minitvm.relay.transform.canonicalize_ops import canonicalize_ops

    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    f = relay.Function([x], e)
    assert canonicalize_ops(f) is f


def test_bias_add_of_symbolic_channels_stays():
    """A broadcast add would take a bias of length 1 for any channel count; bias_add's rule
    states the lengths agree, which the VM's symbolic kernel checks. A dynamic batch alone
    (static channels) is still expanded."""
    x = relay.var("x", shape=(relay.Any(), relay.Any()))
    b = relay.var("b", shape=(relay.Any(),))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x, b], relay.nn.bias_add(x, b))))
    out = run_pass(relay.transform.CanonicalizeOps(), mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
    x2 = relay.var("x", shape=(relay.Any(), 3))
    b2 = relay.var("b", shape=(3,))
    mod2 = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x2, b2], relay.nn.bias_add(x2, b2))))
    out2 = run_pass(relay.transform.CanonicalizeOps(), mod2)
    assert "add(" in out2["main"].astext() and "bias_add" not in out2["main"].astext()
