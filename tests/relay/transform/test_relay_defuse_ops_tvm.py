"""DefuseOps builds TVM's programs: the cases of TVM's own test of the pass.

DefuseOps(FuseOps(x)) gives back x, and a hand-fused program defuses into the golden program.
"""

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.testing import run_opt_pass


def _roundtrip(f):
    typed = run_opt_pass(f, transform.InferType())
    fused = run_opt_pass(typed, transform.FuseOps())
    assert not tvm.ir.structural_equal(fused, typed)  # FuseOps did group something
    defused = run_opt_pass(fused, transform.DefuseOps())
    tvm.ir.assert_structural_equal(defused, typed)
    check_numerics(typed, defused, rtol=1e-4, atol=1e-4)


def test_defuse_simple():
    x = relay.var("x", shape=(10, 20))
    w = relay.squeeze(relay.exp(relay.add(x, relay.const(1, "float32"))))
    _roundtrip(relay.Function([x], w))


def test_inception_like():
    def conv(data):
        y = relay.nn.conv2d(data, relay.var("w"), kernel_size=(3, 3), padding=(1, 1),
                            channels=16)
        return relay.nn.relu(data=y)

    def block(data):
        return relay.concatenate((conv(data), conv(data)), axis=1)

    x = relay.var("x", shape=(1, 16, 8, 8))
    out = block(block(x))
    _roundtrip(relay.Function(relay.analysis.free_vars(out), out))


def _bn_params(prefix=""):
    return [relay.var(f"bn_{n}0", relay.TensorType((64,), "float32"))
            for n in ("gamma", "beta", "mean", "var")]


def _conv_bn(data, w, strides, padding, kernel):
    c = relay.nn.conv2d(data, w, strides=strides, padding=padding, channels=64,
                        kernel_size=kernel, data_layout="NHWC", kernel_layout="OHWI",
                        out_layout="NHWC")
    return c


def _pool(data):
    return relay.nn.max_pool2d(data, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1),
                               layout="NHWC", out_layout="NHWC")


def test_defuse_complex():
    rng = np.random.default_rng(5)
    w1 = relay.const(rng.standard_normal((64, 7, 7, 3)).astype("float32"))
    w2 = relay.const(rng.standard_normal((64, 3, 3, 64)).astype("float32"))
    bn = [relay.const(rng.uniform(0.5, 1.0, (64,)).astype("float32")) for _ in range(4)]

    def fn_conv_bn():
        data = relay.var("data", shape=(1, 224, 224, 3))
        p = _bn_params()
        c = relay.nn.batch_norm(_conv_bn(data, w1, (2, 2), (3, 3, 3, 3), (7, 7)), *p, axis=3)[0]
        return relay.Function(relay.analysis.free_vars(c), c)

    def fn_conv_bn_relu():
        data2 = relay.var("data2", shape=(1, 56, 56, 64))
        p = _bn_params()
        c = relay.nn.batch_norm(_conv_bn(data2, w2, (1, 1), (1, 1, 1, 1), (3, 3)), *p, axis=3)
        return relay.Function(relay.analysis.free_vars(relay.nn.relu(c[0])), relay.nn.relu(c[0]))

    def fn_pool():
        data1 = relay.var("data1", shape=(1, 112, 112, 64))
        return relay.Function([data1], _pool(data1))

    def fn_add_relu():
        a, b = relay.var("data1", shape=(1, 56, 56, 64)), relay.var("data2", shape=(1, 56, 56, 64))
        return relay.Function([a, b], relay.nn.relu(relay.add(a, b)))

    data = relay.var("data", shape=(1, 3, 224, 224))
    nhwc = relay.layout_transform(data, src_layout="NCHW", dst_layout="NHWC")
    y0 = relay.Call(fn_conv_bn(), [nhwc, *bn])
    y1 = relay.Call(fn_pool(), [y0])
    y2 = relay.Call(fn_conv_bn_relu(), [y1, *bn])
    y3 = relay.Call(fn_add_relu(), [y1, y2])
    before = relay.Function([data], y3)

    c3 = _pool(relay.nn.batch_norm(_conv_bn(nhwc, w1, (2, 2), (3, 3, 3, 3), (7, 7)), *bn,
                                   axis=3)[0])
    c7 = relay.nn.relu(relay.nn.batch_norm(_conv_bn(c3, w2, (1, 1), (1, 1, 1, 1), (3, 3)), *bn,
                                           axis=3)[0])
    golden = relay.Function([data], relay.nn.relu(relay.add(c3, c7)))

    before = run_opt_pass(before, transform.InferType())
    defused = run_opt_pass(before, transform.DefuseOps())
    tvm.ir.assert_structural_equal(defused, run_opt_pass(golden, transform.InferType()))


def test_any_called_function_is_inlined():
    x = relay.var("x", shape=(3,))
    p = relay.var("p", shape=(3,))
    f = relay.Function([x], relay.Call(relay.Function([p], relay.exp(p)), [x]))
    out = run_opt_pass(f, transform.DefuseOps())
    tvm.ir.assert_structural_equal(out, run_opt_pass(relay.Function([x], relay.exp(x)),
                                                     transform.InferType()))


def test_function_with_a_tuple_body_is_inlined_too():
    x = relay.var("x", shape=(3,))
    p = relay.var("p", shape=(3,))
    f = relay.Function([x], relay.Call(relay.Function([p], relay.Tuple([p, relay.exp(p)])), [x]))
    out = run_opt_pass(f, transform.DefuseOps())
    expected = relay.Function([x], relay.Tuple([x, relay.exp(x)]))
    tvm.ir.assert_structural_equal(out, run_opt_pass(expected, transform.InferType()))


def test_parameters_sharing_a_name_are_bound_by_identity():
    """TVM maps parameters by name and refuses two named alike; here both are bound right."""
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    a, b = relay.var("p", shape=(3,)), relay.var("p", shape=(3,))
    f = relay.Function([x, y], relay.Call(relay.Function([a, b], relay.subtract(a, b)), [x, y]))
    out = run_opt_pass(f, transform.DefuseOps())
    tvm.ir.assert_structural_equal(out, run_opt_pass(relay.Function([x, y], relay.subtract(x, y)),
                                                     transform.InferType()))


def test_arity_mismatch_is_reported():
    from minitvm.relay.transform.defuse_ops import defuse_ops
    x, p = relay.var("x", shape=(3,)), relay.var("p", shape=(3,))
    bad = relay.Call(relay.Function([p], relay.exp(p)), [x, x])
    with pytest.raises(ValueError, match="1 parameters is called with 2 arguments"):
        defuse_ops(bad)


def test_long_chain_is_iterative():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    p = relay.var("p", shape=(2,))
    f = relay.Function([x], relay.Call(relay.Function([p], relay.exp(p)), [e]))
    out = run_opt_pass(f, transform.DefuseOps())
    assert out.body.op.name == "exp"
