"""The Legalize rule of ``relay.op.nn._legalize_dilated``: a dilated 3x3 conv2d as one undilated
conv over its dilation phases. The rewritten graph gathers the phases into the batch, the built
model matches a float64 definition of the dilated conv, and the convs the rule cannot take keep
their dilation."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.expr import Call
from minitvm.relay.expr_functor import dataflow_post_order
from minitvm.topi.reference.nn import conv2d_nchw


def _mod(shape, wshape, **kw):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=wshape)
    b = relay.var("b", shape=(wshape[0],))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, kernel_size=(3, 3), **kw), b))
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w, b], y)))


def _convs(mod) -> list:
    body = relay.transform.Legalize()(mod)["main"].body
    return [e for e in dataflow_post_order(body)
            if isinstance(e, Call) and e.op.name == "nn.conv2d"]


def _dilated_conv(x, w, pad, dil):
    """The dilated 3x3 conv in float64 (``topi.reference``); ``pad`` is (top, left, bottom,
    right)."""
    return conv2d_nchw(x.astype(np.float64), w.astype(np.float64), (1, 1), tuple(pad),
                       tuple(dil), 1, "float64")


def test_deeplab_branch_becomes_one_conv_over_four_phases():
    mod = _mod((1, 32, 32, 32), (16, 32, 3, 3), padding=(2, 2), dilation=(2, 2))
    legal = relay.transform.Legalize()(mod)["main"]
    (conv,) = _convs(mod)
    assert tuple(int(v) for v in conv.attrs.dilation) == (1, 1)
    assert tuple(int(v) for v in conv.attrs.padding) == (1, 1, 1, 1)
    assert tuple(int(d) for d in conv.args[0].checked_type.shape) == (4, 32, 16, 16)
    assert legal.checked_type == mod["main"].checked_type


@pytest.mark.parametrize("shape,pad,dil", [
    ((1, 16, 32, 32), (2, 2, 2, 2), (2, 2)),  # DeepLab's branch, dilation 2
    ((2, 16, 32, 40), (4, 4, 4, 4), (4, 4)),  # batch 2, a non-square plane
    ((1, 24, 16, 24), (2, 3, 2, 3), (2, 3)),  # dilations differ by axis
    ((1, 16, 24, 16), (0, 2, 4, 2), (2, 2)),  # asymmetric padding (multiples of the dilation)
])
def test_built_matches_the_definition(shape, pad, dil):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    w = (rng.standard_normal((20, shape[1], 3, 3)) / 10).astype("float32")
    b = rng.standard_normal(20).astype("float32")
    mod = _mod(shape, w.shape, padding=pad, dilation=dil)
    (conv,) = _convs(mod)
    assert tuple(int(v) for v in conv.attrs.dilation) == (1, 1)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"w": w, "b": b})
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    want = np.maximum(_dilated_conv(x, w, pad, dil) + b[None, :, None, None], 0)
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,wshape,kw", [
    ((1, 16, 30, 30), (16, 16, 3, 3), dict(padding=(4, 4), dilation=(4, 4))),  # 30 % 4
    ((1, 16, 32, 32), (16, 16, 3, 3), dict(padding=(3, 3), dilation=(2, 2))),  # 3 % 2
    ((1, 16, 24, 24), (16, 16, 3, 3), dict(padding=(4, 4), dilation=(4, 4))),  # 6-pixel phases
    ((1, 8, 32, 32), (16, 8, 3, 3), dict(padding=(2, 2), dilation=(2, 2))),  # few channels
    ((1, 16, 32, 32), (16, 16, 3, 3), dict(padding=(2, 2), dilation=(2, 2), strides=(2, 2))),
    ((1, 16, 32, 32), (16, 4, 3, 3), dict(padding=(2, 2), dilation=(2, 2), groups=4)),
    ((1, 16, 32, 32), (16, 16, 3, 3), dict(padding=(1, 1))),  # not dilated
])
def test_convs_the_rule_cannot_take_keep_the_op(shape, wshape, kw):
    mod = _mod(shape, wshape, **kw)
    (conv,) = _convs(mod)
    assert conv.attrs.dilation == mod["main"].body.args[0].args[0].attrs.dilation
    assert conv.args[0].checked_type.shape == mod["main"].params[0].checked_type.shape


def test_symbolic_batch_keeps_the_op():
    x = relay.var("x", shape=(relay.Any(), 16, 32, 32))
    w = relay.var("w", shape=(16, 16, 3, 3))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], (
        relay.nn.conv2d(x, w, kernel_size=(3, 3), padding=(2, 2), dilation=(2, 2))))))
    (conv,) = _convs(mod)
    assert tuple(int(v) for v in conv.attrs.dilation) == (2, 2)
